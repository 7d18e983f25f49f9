"""``bench locomo --errata FILE``: score on the raw and the corrected gold side by side.

An errata file (locomo-audit's ``errors.json`` format, :mod:`chateval.datasets.errata`) lists
questions whose gold answer is wrong and the answer the transcript supports. For each selected
QA it corrects, the unit scores the same prediction a second time against the corrected gold
(token F1, BLEU-1 and the judge, recorded under ``errata`` in the QA's row); the summary then
gives each system's numbers on both golds, the ceiling (the share of scored QA whose gold
stands: what a perfect system can reach on the raw gold), and how many judge credits came only
from a wrong gold (correct on the raw gold, not on the corrected one) or only on the corrected one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from statistics import mean
from typing import Any

from ...datasets import DatasetError, LoCoMoConversation, LoCoMoQA
from ...datasets.errata import Errata, Erratum, load_errata, locomo_question_id
from ...datasets.locate import find_data_file
from ..report import pct
from .metrics import locomo_bleu1, locomo_f1
from .settings import LoCoMoConfig

Fixes = dict[str, dict[int, Erratum]]  # conversation id -> qa index -> the erratum that changes its gold
Judge = Callable[[Any, LoCoMoQA, dict[str, Any], asyncio.Semaphore], Awaitable[None]]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def match_errata(conversations: list[LoCoMoConversation], errata: Errata, data: str) -> tuple[Fixes, int]:
    """The entries that change a gold answer, placed by their id (``locomo_<conversation index>_
    qa<index>`` in the data file), and the number of such entries whose conversation the file does
    not hold (a subset). An id whose question is not the file's question there is an error."""
    fixes: Fixes = {}
    outside = 0
    by_id = {locomo_question_id(k, n): (c, n, q) for k, c in enumerate(conversations) for n, q in enumerate(c.qa)}
    n_conv = len(conversations)
    for e in errata.wrong_gold:
        hit = by_id.get(e.question_id)
        if hit is None:
            parts = e.question_id.removeprefix("locomo_").split("_qa")
            if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) >= n_conv:
                outside += 1
                continue
            raise DatasetError(
                f"{errata.path}: entry {e.question_id}: no such question in {data} "
                f"(ids are locomo_<conversation index>_qa<index in its qa list>; the file has {n_conv} conversations)"
            )
        conv, n, qa = hit
        if _norm(qa.question) != _norm(e.question):
            raise DatasetError(
                f"{errata.path}: entry {e.question_id}: its question {e.question!r} is not question {n} of "
                f"{conv.id} in {data} ({qa.question!r}); errata of another file?"
            )
        fixes.setdefault(conv.id, {})[n] = e
    return fixes, outside


def errata_for(config: LoCoMoConfig, conversations: list[LoCoMoConversation]) -> tuple[Errata | None, Fixes, int]:
    """--errata read and placed in the data file (nothing without the option). It is a path or, as
    for ``chateval rejudge``, the data set's name (``locomo-audit``), read from the data folder."""
    if not config.errata:
        return None, {}, 0
    errata = load_errata(find_data_file(config.errata, "errata"))
    return (errata, *match_errata(conversations, errata, str(config.data)))


def errata_identity(errata: Errata | None) -> dict[str, Any]:
    """What config.json records (the corrected scores are in the records: part of --resume's identity)."""
    return {} if errata is None else {"errata": errata.path, "errata_sha256": errata.sha256}


async def score_corrected(
    judge: Judge, bench: Any, qa: LoCoMoQA, row: dict[str, Any], fix: Erratum, limit: asyncio.Semaphore
) -> None:
    """The row's prediction scored against the corrected gold, under ``row["errata"]``; the judge
    is the run's own (``judge``, given the row with the gold replaced)."""
    gold, pred = fix.correct_answer, row["prediction"]
    shadow = dict(row, gold=gold, latency={})
    await judge(bench, qa, shadow, limit)
    row["errata"] = {
        "question_id": fix.question_id,
        "error_type": fix.error_type,
        "gold": gold,
        "f1": locomo_f1(qa.category, pred, gold),
        "bleu1": locomo_bleu1(qa.category, pred, gold),
        "judge": shadow.get("judge"),
        "correct": shadow.get("correct"),
    }
    if shadow.get("status") == "failed":
        row |= {"status": "failed", "error": f"corrected gold: {shadow.get('error')}"}


def corrected_task(
    judge: Judge, bench: Any, qa: LoCoMoQA, row: dict[str, Any], fix: Erratum | None, limit: asyncio.Semaphore
) -> list[asyncio.Task]:
    """The task scoring a QA on its corrected gold (none when the errata do not correct it)."""
    return [] if fix is None else [asyncio.create_task(score_corrected(judge, bench, qa, row, fix, limit))]


def _side(rows: list[dict[str, Any]], corrected: bool) -> dict[str, float | None]:
    def pick(r: dict[str, Any], key: str) -> Any:
        return (r["errata"] if corrected and "errata" in r else r).get(key)

    out: dict[str, float | None] = {}
    for key, name in (("f1", "f1"), ("bleu1", "bleu1"), ("correct", "judge")):
        xs = [float(v) for v in (pick(r, key) for r in rows) if v is not None]
        out[name] = mean(xs) if xs else None
    return out


def summarize_errata(records: list[dict[str, Any]], systems: list[str], errata: Errata, outside: int) -> dict[str, Any]:
    """summary.json's ``errata``: per system, raw and corrected numbers over the same scored QA."""
    per: dict[str, Any] = {}
    for s in systems:
        ok = [q for r in records if r.get("method") == s for q in r.get("qa") or [] if q.get("status") == "ok"]
        fixed = [q for q in ok if "errata" in q]
        per[s] = {
            "n": len(ok),
            "n_wrong_gold": len(fixed),
            "ceiling": (len(ok) - len(fixed)) / len(ok) if ok else None,
            "raw": _side(ok, False),
            "corrected": _side(ok, True),
            "credits_from_wrong_gold": sum(1 for q in fixed if q.get("correct") and not q["errata"].get("correct")),
            "credits_on_corrected_gold": sum(1 for q in fixed if not q.get("correct") and q["errata"].get("correct")),
        }
    return {
        "file": errata.path,
        "sha256": errata.sha256,
        "entries": len(errata.entries),
        "wrong_gold_entries": len(errata.wrong_gold),
        "entries_by_type": errata.counts(),
        "outside_data": outside,
        "systems": per,
    }


def errata_report_lines(summary: dict[str, Any]) -> list[str]:
    """report.md's section: raw and corrected gold side by side, and the ceiling."""
    e = summary.get("errata")
    if not e:
        return []
    lines = [
        "## Raw and corrected gold (--errata)",
        "",
        f"Errata: {e['file']} (sha256 {e['sha256']}): {e['entries']} entries, {e['wrong_gold_entries']} of "
        "which correct the gold answer (the rest only its evidence)"
        + (f"; {e['outside_data']} concern conversations this data file does not hold" if e["outside_data"] else "")
        + ". Ceiling: the share of scored QA whose gold stands (a perfect system's score on the raw gold). "
        "Credits from a wrong gold: judged correct on the raw gold, not on the corrected one.",
        "",
        "| system | n | wrong gold | ceiling | F1 raw | F1 corrected | judge raw | judge corrected "
        "| credits from a wrong gold | credits on the corrected gold |",
        "|---|" + "---|" * 9,
    ]
    for s, x in e["systems"].items():
        lines.append(
            f"| {s} | {x['n']} | {x['n_wrong_gold']} | {pct(x['ceiling'])} | {pct(x['raw']['f1'])} | "
            f"{pct(x['corrected']['f1'])} | {pct(x['raw']['judge'])} | {pct(x['corrected']['judge'])} | "
            f"{x['credits_from_wrong_gold']} | {x['credits_on_corrected_gold']} |"
        )
    return lines + [""]
