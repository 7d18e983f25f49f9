"""One samples.jsonl record -> what the viewer shows of it.

Records differ per run kind: a record's type says how it splits into samples, which question each
answers and what its card adds (``SampleRecord.samples``, ``question_of``, ``card``, overridden by a
benchmark's record type); the rest is read by the fields a sample has: a debate is any object with
a ``transcript``, a memory answer is a record with ``answer``/``response``/``prediction`` and ``context``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pydantic import BaseModel, Field

from ..debate.tasks import TASKS, TaskFormat, get_task
from ..runs.envelope import SampleRecord


class Debate(BaseModel):
    """One judged item with a transcript: an evaluate record or a judge inside a benchmark record."""

    title: str
    task: str | None = None  # the task format that judged it: it says how a verdict reads (card)
    order_turns: dict[str, list[dict[str, Any]]]  # "original" / "swapped" -> turns in recorded order
    agents: list[dict[str, Any]] = Field(default_factory=list)
    verdict: dict[str, Any] | None = None
    orders: dict[str, Any] | None = None
    error: str | None = None


class Ranked(BaseModel):
    """A system's retrieval ranking with the gold evidence marked."""

    level: str  # "session", "turn" or "evidence"
    items: list[tuple[str, bool]]  # (id, is gold) in rank order
    gold: list[str]
    missed: list[str]  # gold ids the ranking does not contain


def anchor(key: str, setting: str = "") -> str:
    """The id of a sample's block on the viewer page (``view.html#ANCHOR``): readable, URL-safe,
    and unique (a short hash of the exact key tells apart keys that read alike)."""
    full = f"{setting}/{key}" if setting else key
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", full).strip("-")[:80]
    return f"s-{slug}-{hashlib.sha1(full.encode()).hexdigest()[:6]}"


class SampleView(BaseModel):
    key: str
    anchor: str = ""
    qid: str = ""  # the question it answers: samples of several systems (or runs) share it
    setting: str = ""  # the sub-run a benchmark wrote it in ("" for the run itself)
    system: str = ""
    category: str = ""
    status: str = "ok"
    failed: bool = False
    split: bool = False
    disagrees: bool | None = None  # verdict vs human label; None where there is no comparable label
    order_disagreement: bool = False
    label: Any = None
    pred: Any = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    debates: list[Debate] = Field(default_factory=list)
    memory: dict[str, Any] = Field(default_factory=dict)  # answer, gold, verdicts, context
    context_gold: list[tuple[str, bool]] = Field(default_factory=list)  # context lines, gold-session lines marked
    context_cut: int = 0  # characters of the context left off the page (chateval view --context-chars)
    rankings: list[Ranked] = Field(default_factory=list)
    single_judge: dict[str, Any] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)  # every other recorded field, shown as is


def _debates(rec: Any, title: str = "debate") -> list[Debate]:
    """Every object with a transcript inside a record, outermost first."""
    found: list[Debate] = []
    if isinstance(rec, dict):
        # An empty transcript without an error is an aggregate of debates recorded inside it
        # (Topical-Chat's per-aspect protocol): its verdict is the sample's, its debates follow.
        if isinstance(rec.get("transcript"), list) and (rec["transcript"] or rec.get("error")):
            turns: dict[str, list[dict[str, Any]]] = {}
            for t in rec["transcript"]:
                turns.setdefault(t.get("order", "original"), []).append(t)
            verdict = rec.get("verdict")
            if not isinstance(verdict, dict):  # head-to-head records the winner and the panel apart
                verdict = (
                    rec["panel"]
                    if isinstance(rec.get("panel"), dict)
                    else {"winner": verdict, "correct": rec.get("correct"), "votes": rec.get("votes")}
                )
            task = rec.get("task") if isinstance(rec.get("task"), str) else None
            found.append(
                Debate(
                    title=title,
                    task=task,
                    order_turns=turns,
                    agents=rec.get("agents") or [],
                    verdict=verdict,
                    orders=rec.get("orders"),
                    error=rec.get("error"),
                )
            )
        for k, v in rec.items():
            if k != "transcript":
                found += _debates(v, k if title == "debate" else f"{title} / {k}")
    elif isinstance(rec, list):
        for i, v in enumerate(rec):
            found += _debates(v, f"{title}[{i}]")
    return found


def _split(agents: list[dict[str, Any]]) -> bool:
    winners = {a.get("winner") for a in agents if not a.get("parse_error") and a.get("winner") is not None}
    correct = {a.get("correct") for a in agents if not a.get("parse_error") and a.get("correct") is not None}
    return len(winners) > 1 or len(correct) > 1


def task_of(name: Any) -> TaskFormat | None:
    """The registered task format of that name (a plugin's only while it is loaded)."""
    return get_task(name) if isinstance(name, str) and name in TASKS else None


def card(task: str | None, verdict: dict[str, Any]) -> Any:
    """A verdict (a record's, an order's or one debater's) as the viewer shows it: as its task
    format says; a task not registered here, by the fields it has."""
    fmt = task_of(task)
    if fmt is not None:
        return fmt.card(verdict)
    for key in ("winner", "correct", "score", "choice"):
        if verdict.get(key) is not None:
            return verdict[key]
    return None


def _pred(rec: dict[str, Any]) -> Any:
    if "pred" in rec:
        return rec["pred"]
    if "correct" in rec and "verdict" not in rec:  # memory benchmarks: the judged correctness
        return rec["correct"]
    v = rec.get("verdict") or {}
    if not isinstance(v, dict):
        return v
    fmt = task_of(rec.get("task"))
    if fmt is not None and fmt.classes:  # a classifying task: what it compares with the label
        return fmt.prediction(v)
    if v.get("winner") is None and v.get("choice") is not None:  # a task not registered here
        return v["choice"]
    return v.get("winner") if v.get("winner") is not None else v.get("correct", v.get("score"))


def _rankings(rec: dict[str, Any]) -> list[Ranked]:
    out = []
    ret: dict[str, Any] = rec["retrieval"] if isinstance(rec.get("retrieval"), dict) else {}
    for level in ("session", "turn"):
        ranked, gold = ret.get(f"ranked_{level}s"), rec.get(f"gold_{level}s")
        if ranked is not None and gold is not None:
            out.append(
                Ranked(
                    level=level,
                    items=[(i, i in gold) for i in ranked],
                    gold=list(gold),
                    missed=[g for g in gold if g not in ranked],
                )
            )
    if isinstance(rec.get("retrieved"), list) and isinstance(rec.get("evidence"), list):  # LoCoMo dialogue ids
        gold = [str(e) for e in rec["evidence"]]
        out.append(
            Ranked(
                level="evidence",
                items=[(str(i), str(i) in gold) for i in rec["retrieved"]],
                gold=gold,
                missed=[g for g in gold if g not in map(str, rec["retrieved"])],
            )
        )
    return out


def _context_gold(context: Any, gold: list[str], positions: list[int] | None = None) -> list[tuple[str, bool]]:
    """The context split in lines, the block of a gold session marked. Full-context systems head
    each session with its position in the history (``## Session 3 (date)``; the harness records
    the gold sessions' positions); runs from before issue 34 headed it with its id. No gold, no
    marks."""
    if not isinstance(context, str):
        return []
    pattern = re.compile("|".join(re.escape(g) for g in gold)) if gold and positions is None else None
    at = set(positions or [])
    lines, mark = [], False
    for line in context.splitlines():
        if line.startswith("## Session"):  # a session header starts a block: gold or not
            number = re.match(r"## Session (\d+)\b", line)
            mark = bool(pattern and pattern.search(line)) or bool(number and int(number.group(1)) in at)
        lines.append((line, mark))
    return lines


# What a memory benchmark records per question and system, in the order the viewer shows it.
MEMORY_FIELDS = (
    "answer",
    "answers",
    "response",
    "responses",
    "memories",  # msc-response's head-to-head: the retrieved memories the panel compared
    "prediction",
    "correct",
    "fooled",
    "f1",
    "bleu1",
    "evidence_recall",
    "context_tokens",
    "contexts",
    "errata",  # bench locomo --errata: the corrected gold and the scores against it
)
SHOWN = {
    "id",
    "key",
    "task",
    "status",
    "verdict",
    "agents",
    "transcript",
    "orders",
    "order_disagreement",
    "label",
    "human",
    "pred",
    "inputs",
    "error",
    "system",
    "systems",
    "panel",
    "method",
    "category",
    "category_name",
    "question_type",
    "setting",
    "context",
    "retrieval",
    "retrieved",
    "evidence",
    "judge",
    "question",
    "asked",
    "question_id",
    "case_id",
    "raw_answer",
    "gold_sessions",
    "gold_turns",
    "gold_positions",
    "item",
    "perturbation",
    "variant",
    "favours",
    "swapped",
    "format_version",
}


def _qid(rec: dict[str, Any]) -> str:
    if rec.get("question_id") is not None:
        return f"{rec['conversation']}::{rec['question_id']}" if rec.get("conversation") else str(rec["question_id"])
    return str(rec.get("case_id") or rec.get("id") or rec.get("key") or "")


_SWAP = {"1": "2", "2": "1"}


def _audit_variant(rec: dict[str, Any], pred: Any) -> tuple[str, Any, dict[str, Any]]:
    """An audit unit (``chateval audit``): its variant's name, its verdict in the item's
    numbering, and the answers exactly as the judge saw them (they differ from the item's)."""
    name = "original" if rec["perturbation"] == "original" else f"{rec['perturbation']}: {rec.get('variant')}"
    shown: dict[str, Any] = {}
    if rec["perturbation"] != "original":
        inputs = rec.get("inputs") or {}
        shown = {f"{k} (as judged)": inputs[k] for k in ("answer_1", "answer_2", "answer") if k in inputs}
    if rec.get("swapped") and isinstance(pred, str):
        shown["answers swapped"] = (
            f"the judge saw the answers in the other order; its verdict {pred} is "
            f"{_SWAP.get(pred, pred)} in the item's numbering"
        )
        pred = _SWAP.get(pred, pred)
    return name, pred, shown


def sample_view(rec: dict[str, Any], setting: str = "", qid: str | None = None) -> SampleView:
    """One sample's card. ``qid``: the question it answers, if its record type says (else guessed)."""
    debates = _debates(rec)
    label = rec.get("human", rec.get("label"))
    pred = _pred(rec)
    variant, pred, audit_shown = (
        _audit_variant(rec, pred) if "perturbation" in rec and "item" in rec else ("", pred, {})
    )
    # Compared as the verdict expresses them ("correct" vs True); a score label is not compared.
    fmt = task_of(rec.get("task"))
    gold = fmt.reference(label) if fmt is not None and fmt.classes else label
    scalar = (str, bool, int)
    comparable = gold is not None and isinstance(gold, scalar) and isinstance(pred, scalar)
    inputs = dict(rec.get("inputs") or {})
    # Fields of the question (shown once per row), not of one system's answer.
    for k in (
        "question",
        "asked",
        "last_turn",
        "answer_1",
        "answer_2",
        "reference",
        "question_date",
        "gold",
        "true_answer",
    ):
        if k in rec and k not in inputs and isinstance(rec[k], str):
            inputs[k] = rec[k]
    memory = {k: rec[k] for k in MEMORY_FIELDS if k in rec and not (k == "answer" and "inputs" in rec)}
    memory |= audit_shown
    rankings = _rankings(rec)
    judge: dict[str, Any] = rec["judge"] if isinstance(rec.get("judge"), dict) else {}
    meta: dict[str, Any] = inputs["meta"] if isinstance(inputs.get("meta"), dict) else {}
    system = rec.get("system") or rec.get("method") or " vs ".join((rec.get("systems") or {}).values())
    key = str(rec.get("key", rec.get("id", "")))
    return SampleView(
        key=key,
        anchor=anchor(key, setting),
        qid=qid or _qid(rec),
        setting=setting,
        system=variant or str(system or rec.get("systems_all") and " / ".join(rec["systems_all"]) or ""),
        category=str(
            rec.get("category_name") or rec.get("question_type") or rec.get("category") or meta.get("category") or ""
        ),
        status=str(rec.get("status", "ok")),
        failed=rec.get("status") == "failed" or bool(rec.get("error")) or any(d.error for d in debates),
        split=any(_split(d.agents) for d in debates),
        disagrees=(str(gold) != str(pred)) if comparable else None,
        order_disagreement=bool(rec.get("order_disagreement"))
        or any(
            (o := d.orders or {}).get("original")
            and o.get("swapped")
            and o["original"].get("winner") != o["swapped"].get("winner")
            for d in debates
        ),
        label=label,
        pred=pred,
        inputs=inputs,
        debates=debates,
        memory=memory,
        context_gold=_context_gold(rec.get("context"), rec.get("gold_sessions") or [], rec.get("gold_positions"))
        if "context" in rec and "inputs" not in rec
        else [],
        rankings=rankings,
        single_judge=judge.get("single") if isinstance(judge.get("single"), dict) else None,
        extra={k: v for k, v in rec.items() if k not in SHOWN and k not in memory and k not in inputs},
    )


def sample_views(rec: SampleRecord, setting: str = "") -> list[SampleView]:
    """A record's samples, as its type splits them (one per question of a conversation, say)."""
    card = rec.card()  # what the record's own type says the viewer shows of it
    out = []
    for sample in rec.samples():
        view = sample_view(sample, setting, qid=rec.question_of(sample))
        view.memory |= card
        out.append(view)
    return out
