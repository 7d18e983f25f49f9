"""What LoCoMo keeps of its records for the summary, the comparisons and --errata (issue 38 item 3).

A record is a (conversation, system) unit with a ``qa`` list whose rows carry the question, gold,
prediction, raw answer, the context given to the reader, the judges' reasons and usage. The
summary reads only ids, categories, scores, verdicts, latencies and context sizes: each QA is
kept as :func:`qa_view`, each unit as :func:`unit_view`, and the usage (the unit's answer usage,
the judges' usage per QA) is summed as the records stream by, in the file's order (the order
``usage_sum`` over whole records adds them in).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..summaries import UsageSum

QA_KEPT = (
    "status",
    "qa_index",
    "category",
    "f1",
    "bleu1",
    "evidence_recall",
    "no_evidence",
    "context_tokens",
    "latency",
    "correct",
)


def system_of(record: dict[str, Any]) -> str:
    """The system a unit belongs to (a record from before ``method`` was recorded: its key's tail)."""
    return record.get("method") or str(record.get("key", "::?")).split("::")[-1]


def _verdicts(judge: Any) -> Any:
    """The judges' verdicts (correct or not) and their agreement, not their reasons or usage."""
    if not isinstance(judge, dict):
        return judge
    out: dict[str, Any] = {}
    for w in ("single", "debate"):
        if w in judge:
            v = judge[w]
            out[w] = {"correct": v.get("correct")} if isinstance(v, dict) else v
    if "agreement" in judge:
        out["agreement"] = judge["agreement"]
    return out


def qa_view(q: dict[str, Any]) -> dict[str, Any]:
    """A QA row as the summary, comparisons and errata read it: no question, gold, prediction,
    context or judge reasons; the error only of a failed QA (the report lists those)."""
    out: dict[str, Any] = {k: q[k] for k in QA_KEPT if k in q}
    if "judge" in q:
        out["judge"] = _verdicts(q["judge"])
    if isinstance(q.get("errata"), dict):  # scored again on the corrected gold
        out["errata"] = {k: q["errata"][k] for k in ("f1", "bleu1", "correct") if k in q["errata"]}
    if q.get("status") != "ok" and "error" in q:
        out["error"] = q["error"]
    return out


def unit_view(r: dict[str, Any]) -> dict[str, Any]:
    """A unit as the summary reads it: its ids, status, ingest latency and its QA's views (its
    usage is summed apart, :class:`LoCoMoRecords`)."""
    out: dict[str, Any] = {k: r[k] for k in ("key", "method", "conversation", "status", "latency") if k in r}
    if r.get("status") != "ok" and "error" in r:
        out["error"] = r["error"]
    if "qa" in r:
        out["qa"] = [qa_view(q) for q in r.get("qa") or []]
    return out


class LoCoMoRecords:
    """A run's records read once: each unit's view (in the file's order) and, per system, the
    answer usage of its units and the judge usage of its answered QA, summed as they go by."""

    def __init__(self, records: Iterable[dict[str, Any]]) -> None:
        self.units: list[dict[str, Any]] = []
        self.answer_usage: dict[str, UsageSum] = defaultdict(UsageSum)
        self.judge_usage: dict[str, UsageSum] = defaultdict(UsageSum)
        for r in records:
            s = system_of(r)
            self.answer_usage[s].add(r.get("usage"))
            for q in r.get("qa") or []:
                if q.get("status") == "ok":
                    self.judge_usage[s].add((q.get("judge") or {}).get("usage"))
            self.units.append(unit_view(r))

    def usage(self, system: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(answer usage, judge usage) of a system, as ``usage_sum`` gives them."""
        return (self.answer_usage.get(system) or UsageSum()).dump(), (self.judge_usage.get(system) or UsageSum()).dump()
