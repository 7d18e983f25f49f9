"""The record types of the built-in benchmarks: what a unit writes to samples.jsonl and what
summary.json holds, typed for the fields the headline, reports and viewer read. Each benchmark
names its own on its class (``record_type``, ``summary_type``); everything else a record holds
is kept as an extra field (see :mod:`chateval.runs.envelope`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..debate.panel import JudgeResult
from ..debate.samples import Verdict
from ..debate.transcript import turn_records
from ..records.judged import EvaluateSummary, JudgedRecord
from ..runs.envelope import SampleRecord, SummaryRecord


class Part(BaseModel):
    """A nested block of a summary: typed where read, the rest kept."""

    model_config = ConfigDict(extra="allow")


# --- memory benchmarks: one unit = a question (or conversation) answered by one system -----------


class MemoryRecord(SampleRecord):
    """A system's answer to one question, judged (LongMemEval and the like)."""

    question_id: str | None = None
    question_type: str | None = None
    method: str | None = None  # the memory system
    question: str | None = None
    gold: Any = None
    answer: str | None = None
    correct: bool | None = None
    judge: dict[str, Any] | None = None  # per judge ("single", "debate"): its verdict
    context: str | None = None
    gold_sessions: list[str] | None = None
    gold_positions: list[int] | None = None  # where they are in a context that numbers sessions
    retrieval: dict[str, Any] | None = None


class MemoryMethod(Part):
    n: int | None = None
    n_failed: int | None = None
    qa: dict[str, Any] = Field(default_factory=dict)  # per judge: overall, by_type
    retrieval: dict[str, Any] | None = None  # per level: recall_all@k, ...
    answer_usage: dict[str, Any] | None = None
    judge_usage: dict[str, Any] | None = None


class MemorySummary(SummaryRecord):
    methods: dict[str, MemoryMethod] = Field(default_factory=dict)
    comparisons: list[dict[str, Any]] = Field(default_factory=list)


class TurnRecord(MemoryRecord):
    """A system's reply at one turn of an episode (msc-response), or the panel's judgement of two."""

    episode: str | int | None = None
    turn: int | None = None

    def question_of(self, sample: dict[str, Any]) -> str | None:
        return f"{self.episode}::t{self.turn}" if self.episode is not None and self.turn is not None else None


class ConversationRecord(SampleRecord):
    """One conversation answered by one system: its questions in ``qa`` (LoCoMo)."""

    conversation: str | None = None
    method: str | None = None
    qa: list[Any] = Field(default_factory=list)

    def samples(self) -> list[dict[str, Any]]:
        """One sample per question, with the unit's own fields (not its totals); a failed unit
        answered nothing: the unit itself is shown."""
        rec = self.data()
        outer = {k: v for k, v in rec.items() if k not in ("qa", "key", "usage", "stats", "latency", "status")}
        conv = rec.get("conversation", rec.get("key", ""))
        out = []
        for i, qa in enumerate(self.qa):
            if isinstance(qa, dict):
                index = qa.get("qa_index", i)
                sub = outer | qa | {"key": f"{rec.get('key', conv)}#{index}", "question_id": f"{conv}#{index}"}
                sub.pop("conversation", None)  # already in question_id
                out.append(sub)
        if not out or self.status == "failed":
            out.append({k: v for k, v in rec.items() if k != "qa"})
        return out


class SystemResult(Part):
    """One system's numbers in a per-system summary (LoCoMo, TeaFarm, msc-response)."""

    n_units: int | None = None
    n_failed: int | None = None
    n_qa: int | None = None
    n_qa_failed: int | None = None
    overall: dict[str, Any] | None = None  # LoCoMo: f1, bleu1, evidence_recall
    success_rate: float | None = None  # TeaFarm
    metrics: dict[str, Any] | None = None  # msc-response: bleu4, rouge_l, ... each {mean, ...}
    answer_usage: dict[str, Any] | None = None
    judge_usage: dict[str, Any] | None = None


class SystemsSummary(SummaryRecord):
    systems: dict[str, SystemResult] = Field(default_factory=dict)
    comparisons: list[dict[str, Any]] = Field(default_factory=list)


# --- head-to-head: one unit = a question answered by two (or more) systems, judged pairwise -----


class PairRecord(SampleRecord):
    case_id: str | None = None
    question_type: str | None = None
    question: str | None = None
    systems: dict[str, Any] = Field(default_factory=dict)  # "A"/"B" -> system
    answers: dict[str, Any] = Field(default_factory=dict)
    verdict: Any = None  # "A", "B" or "tie"
    panel: dict[str, Any] | None = None
    transcript: list[dict[str, Any]] = Field(default_factory=list)


class PairSummary(SummaryRecord):
    systems: dict[str, Any] = Field(default_factory=dict)  # "A"/"B" -> system
    n: int | None = None
    wins: dict[str, Any] | None = None
    ties: dict[str, Any] | None = None
    losses: dict[str, Any] | None = None
    ranking: list[dict[str, Any]] | None = None  # several systems: Bradley–Terry
    usage: dict[str, Any] | None = None  # per system, and "total"


# --- judge benchmarks: one sub-run per setting (a panel), each item judged --------------------


class JudgeItemRecord(JudgedRecord):
    """One judged item of a judge benchmark (a judged record with its human reference)."""

    question_id: str | int | None = None
    category: Any = None
    human: Any = None
    pred: Any = None


class SettingResult(Part):
    n_units: int | None = None
    n_failed: int | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] | None = None


class SettingsSummary(SummaryRecord):
    """The top folder's summary: every setting's numbers."""

    settings: dict[str, SettingResult] = Field(default_factory=dict)
    comparisons: list[dict[str, Any]] = Field(default_factory=list)


class CorrelationSettingsSummary(SettingsSummary):
    """A judge benchmark scored by correlation with human scores: its headline is not a rate."""

    headline_rates = False


class SettingSummary(EvaluateSummary):
    """A setting's own summary.json (its sub-run)."""

    setting: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)


# --- a pairwise panel's verdict, as head2head and msc-response's helpfulness write it ------------

_TO_SIDE = {"1": "A", "2": "B", "tie": "tie"}


def _side_verdict(v: Verdict | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "winner": _TO_SIDE.get(v.winner or "", None),
        "scores": {"A": v.scores.get("answer_1"), "B": v.scores.get("answer_2")},
        "votes": {"A": v.votes.get("1", 0), "B": v.votes.get("2", 0), "tie": v.votes.get("tie", 0)} if v.votes else {},
        "n_valid": v.n_valid,
        "note": v.note,
    }


def verdict_record(result: JudgeResult) -> dict[str, Any]:
    """The panel's result in A/B terms (answer_1 is always A's answer in the original order)."""
    orders = result.orders or {}
    combined = _side_verdict(result.verdict)
    return {
        "verdict": combined["winner"] if combined else None,
        "panel": combined,
        "agents": [
            {
                "agent": a.agent,
                "persona": a.persona,
                "winner": _TO_SIDE.get(a.winner or "", None),
                "scores": {"A": a.scores.get("answer_1"), "B": a.scores.get("answer_2")},
                "parse_error": a.parse_error,
                "reasked": a.reasked,
            }
            for a in result.agents
        ],
        "orders": {
            "original": ({"shown_first": "A"} | (_side_verdict(orders.get("original")) or {"winner": None})),
            "swapped": ({"shown_first": "B"} | (_side_verdict(orders.get("swapped")) or {"winner": None})),
        },
        "order_disagreement": result.order_disagreement,
        "transcript": turn_records(result.transcript),
    }
