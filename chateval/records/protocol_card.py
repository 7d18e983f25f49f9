"""The protocol card of a memory-benchmark run: what a reader needs to know before comparing its
number with another's (issue 36). Memory-benchmark numbers are disputed less over memories than
over protocol: which data file, which categories under which numbering, whether the unanswerable
questions count, which answer and judge models and judge prompts, and whether retrieval was
bypassed by a top-k that covers the whole history. The card states all of these, checks the
category counts against the dataset's published ones, and two cards can be compared field by field.

Builder API (``bench locomo``, ``bench longmemeval`` and ``rejudge`` use it)::

    card = build_card(
        benchmark="locomo",
        data="locomo10.json",                       # its sha256 is taken here
        found={1: 282, 2: 321, ...},                # questions per category in the data file
        selected={1: 282, 2: 321, ...},             # those scored by this run
        upstream=LOCOMO_UPSTREAM,                   # the published counts (None: not checked)
        names=LOCOMO_NAMES,
        unanswerable_policy="...", denominator="...",
        answer_model="gpt-4o-mini", judge_model="gpt-4o-mini",
        judges=[JudgePrompt.of_text("single", "my template", text)],
        top_k=[top_k_entry("retrieval", {"k": 6}, sessions=[19, 32])],
        strict=False,                               # True: a count mismatch raises ProtocolMismatch
    )
    summary["protocol_card"] = card.model_dump(mode="json")
    lines += card_markdown(card)                     # report.md
    card_differences(card_a, card_b)                 # [(field, value A, value B)]
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..runs.files import file_sha256
from ..util.errors import InputError

CARD_VERSION = 1

# LoCoMo's full locomo10.json (snap-research/LoCoMo), numbered as its own task_eval code numbers them.
LOCOMO_UPSTREAM: dict[str, int] = {"1": 282, "2": 321, "3": 96, "4": 841, "5": 446}
LOCOMO_NAMES: dict[str, str] = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "5": "adversarial",
}
# LongMemEval's 500 questions (S, M and oracle share them), by question_type.
LONGMEMEVAL_UPSTREAM: dict[str, int] = {
    "single-session-user": 70,
    "single-session-assistant": 56,
    "single-session-preference": 30,
    "multi-session": 133,
    "knowledge-update": 78,
    "temporal-reasoning": 133,
}
VERSIONED = ("chateval", "openai", "autogen-agentchat", "autogen-ext", "pydantic", "jinja2", "numpy")
# Setting names under which the systems keep their top-k, and the one naming the unit they recall.
K_SETTINGS = ("k", "top_k")
GRANULARITY_SETTINGS = ("granularity",)


class ProtocolMismatch(InputError):
    """The data's category counts are not the published ones and the user asked for strict."""


class CategoryCount(BaseModel):
    """One category (LoCoMo's number, or LongMemEval's question type) of the data file."""

    category: str
    name: str | None = None
    found: int  # questions of this category in the data file
    selected: int | None = None  # of those, the ones this run scored
    upstream: int | None = None  # the published count (None: the category is not a published one)


class JudgePrompt(BaseModel):
    """One judge and the sha256 of what it is prompted with (template sources, the rule texts that
    fill them, a panel's personas), so two runs can tell whether their judges read the same words."""

    judge: str
    sha256: str
    parts: list[str] = Field(default_factory=list)  # what was hashed: template names, "rules", a file

    @classmethod
    def of_text(cls, judge: str, part: str, text: str) -> JudgePrompt:
        return cls(judge=judge, sha256=text_sha256(text), parts=[part])

    @classmethod
    def of_parts(cls, judge: str, parts: Mapping[str, str]) -> JudgePrompt:
        """The hash over named texts (name and text of each, in name order)."""
        h = hashlib.sha256()
        for name in sorted(parts):
            h.update(name.encode() + b"\0" + parts[name].encode() + b"\0")
        return cls(judge=judge, sha256=h.hexdigest(), parts=sorted(parts))


class TopK(BaseModel):
    """A system's top-k against the size of the histories it searched."""

    system: str
    k: int | None = None  # None: the system has no top-k setting (e.g. it reads the whole history)
    setting: str | None = None
    granularity: str | None = None  # what one of the k is, when the system says (session, round, fact)
    histories: int = 0
    sessions_min: int | None = None
    sessions_median: float | None = None
    sessions_max: int | None = None
    covered: int = 0  # histories with no more sessions than k

    @property
    def bypasses(self) -> bool:
        """k is at least the number of sessions of some history, and k counts sessions (or the
        system does not say what it counts): there, retrieval returns everything."""
        return self.k is not None and self.covered > 0 and self.granularity in (None, "session")


class ProtocolCard(BaseModel):
    model_config = ConfigDict(extra="allow")  # a later version's fields are kept when read back

    card_version: int = CARD_VERSION
    benchmark: str
    data: str | None = None
    data_sha256: str | None = None
    categories: list[CategoryCount] = Field(default_factory=list)
    upstream: str | None = None  # the published counts checked against ("LoCoMo locomo10.json")
    counts_match: bool | None = None  # None: nothing to check against
    unanswerable_policy: str | None = None  # LoCoMo's category 5, LongMemEval's abstention questions
    denominator: str | None = None
    n_scored: int | None = None
    answer_model: str | None = None
    judge_model: str | None = None
    judges: list[JudgePrompt] = Field(default_factory=list)
    top_k: list[TopK] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


# --- pieces ------------------------------------------------------------------------------------


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def package_versions(packages: Iterable[str] = VERSIONED) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in packages:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def top_k_entry(system: str, settings: Mapping[str, Any], sessions: Iterable[int]) -> TopK:
    """``settings``: the system's resolved settings; ``sessions``: the session count of each
    history (conversation or haystack) it ingested."""
    ns = list(sessions)
    setting = next((s for s in K_SETTINGS if isinstance(settings.get(s), int)), None)
    k = settings[setting] if setting else None
    granularity = next((str(settings[g]) for g in GRANULARITY_SETTINGS if settings.get(g) is not None), None)
    return TopK(
        system=system,
        k=k,
        setting=setting,
        granularity=granularity,
        histories=len(ns),
        sessions_min=min(ns) if ns else None,
        sessions_median=median(ns) if ns else None,
        sessions_max=max(ns) if ns else None,
        covered=sum(1 for n in ns if k is not None and n <= k),
    )


def check_counts(
    found: Mapping[str, int], upstream: Mapping[str, int], *, what: str, strict: bool = False
) -> list[str]:
    """Warnings (empty: the counts are the published ones). A different numbering of the same
    categories (the counts match once relabelled) is named as such; ``strict`` raises instead."""
    if dict(found) == dict(upstream):
        return []
    diffs = [
        f"{c}: {found.get(c, 0)} found, {upstream.get(c, 0)} published"
        for c in list(upstream) + [c for c in found if c not in upstream]
        if found.get(c, 0) != upstream.get(c, 0)
    ]
    if sorted(found.values()) == sorted(upstream.values()) and set(found) == set(upstream):
        why = "the same counts under other labels: the categories are numbered differently"
    elif sum(found.values()) < sum(upstream.values()) and all(found.get(c, 0) <= n for c, n in upstream.items()):
        why = "a subset of the published file?"
    else:
        why = "another version or numbering of the data?"
    message = (
        f"category counts differ from {what} ({why}) — {'; '.join(diffs)}; per-category numbers are not "
        "comparable with published ones"
    )
    if strict:
        raise ProtocolMismatch(message + " (refused: --strict-categories)")
    return [message]


def _key(c: Any) -> str:
    return str(c)


# --- the card ----------------------------------------------------------------------------------


def build_card(
    *,
    benchmark: str,
    data: str | Path | None,
    found: Mapping[Any, int],
    selected: Mapping[Any, int] | None = None,
    upstream: Mapping[Any, int] | None = None,
    upstream_name: str | None = None,
    names: Mapping[Any, str] | None = None,
    unanswerable_policy: str | None = None,
    denominator: str | None = None,
    n_scored: int | None = None,
    answer_model: str | None = None,
    judge_model: str | None = None,
    judges: Iterable[JudgePrompt] = (),
    top_k: Iterable[TopK] = (),
    versions: Mapping[str, str] | None = None,
    warnings: Iterable[str] = (),
    strict: bool = False,
) -> ProtocolCard:
    """The card of one run; category keys may be ints or strings (kept as strings)."""
    found_s = {_key(c): n for c, n in found.items()}
    sel = {_key(c): n for c, n in (selected or {}).items()}
    up = {_key(c): n for c, n in (upstream or {}).items()}
    nm = {_key(c): v for c, v in (names or {}).items()}
    order = list(up) + [c for c in found_s if c not in up]
    cats = [
        CategoryCount(
            category=c,
            name=nm.get(c),
            found=found_s.get(c, 0),
            selected=sel.get(c, 0) if selected is not None else None,
            upstream=up.get(c),
        )
        for c in order
    ]
    what = upstream_name or f"the published {benchmark} counts"
    notes = check_counts(found_s, up, what=what, strict=strict) if up else []
    tops = list(top_k)
    for t in tops:
        if t.bypasses:
            notes.append(
                f"{t.system}: top-k {t.k} ({t.setting}) is at least the number of sessions in {t.covered} of "
                f"{t.histories} histories (sessions {t.sessions_min}–{t.sessions_max}): where it recalls "
                "whole sessions it returns the whole history, and retrieval is bypassed"
            )
    return ProtocolCard(
        benchmark=benchmark,
        data=None if data is None else str(data),
        data_sha256=None if data is None else file_sha256(data),
        categories=cats,
        upstream=what if up else None,
        counts_match=None if not up else not any(n.startswith("category counts differ") for n in notes),
        unanswerable_policy=unanswerable_policy,
        denominator=denominator,
        n_scored=n_scored,
        answer_model=answer_model,
        judge_model=judge_model,
        judges=list(judges),
        top_k=tops,
        versions=dict(versions) if versions is not None else package_versions(),
        warnings=notes + list(warnings),
    )


def read_card(raw: Any) -> ProtocolCard | None:
    """The card of a summary's ``protocol_card`` (None: the run has none, or it is unreadable)."""
    if not isinstance(raw, dict):
        return None
    try:
        return ProtocolCard.model_validate(raw)
    except ValueError:
        return None


# --- reading and comparing --------------------------------------------------------------------


def card_rows(card: ProtocolCard) -> dict[str, str]:
    """The card as flat rows (name -> text): what report.md, the viewer and comparisons show."""
    rows: dict[str, str] = {
        "benchmark": card.benchmark,
        "data": card.data or "–",
        "data sha256": card.data_sha256 or "–",
        "categories": ", ".join(
            f"{c.category}{f' {c.name}' if c.name else ''}: {c.found}"
            + (f" (published {c.upstream})" if c.upstream is not None and c.upstream != c.found else "")
            + (f", {c.selected} scored" if c.selected is not None and c.selected != c.found else "")
            for c in card.categories
        )
        or "–",
        "counts check": "–"
        if card.counts_match is None
        else ("as published" if card.counts_match else "DIFFER") + f" ({card.upstream})",
        "unanswerable questions": card.unanswerable_policy or "–",
        "denominator": card.denominator or "–",
        "answer model": card.answer_model or "–",
        "judge model": card.judge_model or "–",
    }
    for j in card.judges:
        rows[f"judge prompt: {j.judge}"] = f"sha256 {j.sha256} ({', '.join(j.parts)})"
    for t in card.top_k:
        if t.k is None:
            size = "no top-k setting"
        else:
            size = f"{t.setting}={t.k}" + (f" {t.granularity}s" if t.granularity else "")
        span = f"sessions {t.sessions_min}–{t.sessions_max} (median {t.sessions_median})" if t.histories else ""
        flag = f"; k ≥ sessions in {t.covered} of {t.histories}" if t.k is not None and t.covered else ""
        rows[f"top-k: {t.system}"] = f"{size}; {span}{flag}".strip("; ")
    rows["versions"] = ", ".join(f"{k} {v}" for k, v in card.versions.items()) or "–"
    return rows


def card_markdown(card: ProtocolCard) -> list[str]:
    """The card as a section of report.md (lines, ending with an empty one)."""

    def cell(x: str) -> str:
        return x.replace("|", "\\|").replace("\n", " ")

    lines = ["## Protocol card", ""]
    lines += [f"> **Warning:** {cell(w)}" for w in card.warnings]
    if card.warnings:
        lines.append("")
    lines += ["| | |", "|---|---|"]
    lines += [f"| {cell(k)} | {cell(v)} |" for k, v in card_rows(card).items()]
    return lines + [""]


# Rows that may differ without changing what was measured: the data's path (its sha256 is
# compared) and package versions. Not flagged.
UNFLAGGED = ("data", "versions")


def card_differences(a: ProtocolCard, b: ProtocolCard) -> list[tuple[str, str, str]]:
    """(row, value in a, value in b) for every card row that differs (the data's path and the
    package versions aside)."""
    ra, rb = card_rows(a), card_rows(b)
    keys = list(dict.fromkeys(list(ra) + list(rb)))
    return [(k, ra.get(k, "–"), rb.get(k, "–")) for k in keys if k not in UNFLAGGED and ra.get(k) != rb.get(k)]


__all__ = [
    "CARD_VERSION",
    "LOCOMO_NAMES",
    "LOCOMO_UPSTREAM",
    "LONGMEMEVAL_UPSTREAM",
    "CategoryCount",
    "JudgePrompt",
    "ProtocolCard",
    "ProtocolMismatch",
    "TopK",
    "build_card",
    "card_differences",
    "card_markdown",
    "card_rows",
    "check_counts",
    "package_versions",
    "read_card",
    "text_sha256",
    "top_k_entry",
]
