"""Run summaries computed from the samples.jsonl records (so resumed runs summarise whole)."""

from __future__ import annotations

from collections.abc import Iterable
from statistics import mean
from typing import Any

from ..debate.tasks import get_task
from ..models import UsageTotals
from ..runs.savings import savings
from ..stats.labels import normalise_label
from ..stats.self_consistency import repeat_accuracy, summarize_consistency

__all__ = ["OFFLINE_NOTE", "JudgedTotals", "judged_totals", "normalise_label", "summarize_judged", "summary_view"]

OFFLINE_NOTE = "offline model: verdicts are deterministic heuristics, not LLM judgements"


# What the task formats, label agreement and savings read of a record; summarize_judged keeps
# only these per record (a few hundred bytes: no debates, agents' replies, inputs or usage).
SUMMARY_FIELDS = (
    "id",
    "status",
    "verdict",
    "label",
    "order_disagreement",
    "calls",
    "escalation",
    "stop_early",
    "consistency",
)


def summary_view(record: dict[str, Any]) -> dict[str, Any]:
    """A record as the task's summary, agreement and savings see it (the fields above)."""
    return {k: record[k] for k in SUMMARY_FIELDS if k in record}


class JudgedTotals:
    """summarize_judged's counts, a record at a time: a run's summary is built from its whole
    samples.jsonl without holding its records (only :func:`summary_view` of each)."""

    def __init__(self) -> None:
        self.views: list[dict[str, Any]] = []
        self.failed_ids: list[Any] = []
        self.usage = UsageTotals()
        self.by_endpoint: dict[str, UsageTotals] = {}  # a panel of several endpoints: each one's usage
        self.agents = self.parse_errors = self.reasked = 0
        self.latencies: list[float] = []

    def add(self, r: dict[str, Any]) -> None:
        self.views.append(summary_view(r))
        if r.get("status") != "ok":
            self.failed_ids.append(r.get("id"))
        self.usage.merge(UsageTotals.model_validate(r.get("usage") or {}))
        for name, u in (r.get("usage_by_endpoint") or {}).items():
            self.by_endpoint.setdefault(name, UsageTotals()).merge(UsageTotals.model_validate(u))
        for a in r.get("agents") or []:
            self.agents += 1
            self.parse_errors += bool(a.get("parse_error"))
            self.reasked += bool(a.get("reasked"))
        self.latencies.append(r.get("latency_s", 0.0))

    def summary(self, *, task: str, model: str, offline: bool) -> dict[str, Any]:
        records = self.views
        ok = [r for r in records if r.get("status") == "ok"]
        out: dict[str, Any] = {
            "model": model,
            "offline": offline,
            "n_samples": len(records),
            "n_ok": len(ok),
            "n_failed": len(self.failed_ids),
            "failed_ids": self.failed_ids,
            "agent_verdicts": self.agents,
            "parse_errors": self.parse_errors,
            "reasked": self.reasked,
            "usage": self.usage.model_dump(),
            **self.endpoints(),
            **summarize_consistency(records),
            "mean_latency_s": mean(self.latencies) if records else None,
        }
        if offline:
            out["note"] = OFFLINE_NOTE
        out |= savings(records)  # --escalate / --stop-early: what they saved
        fmt = get_task(task)
        out |= fmt.summarize(ok)  # the task's own fields: verdict counts, mean score, order disagreement
        labelled = [(r, fmt.reference(r.get("label"))) for r in ok]  # several annotators: their majority
        labelled = [(r, lab) for r, lab in labelled if lab is not None and r.get("verdict")]
        if labelled:
            out["label_accuracy"] = fmt.label_accuracy(labelled)
            # --samples: each repeat's own agreement with the labels (run-to-run variance)
            repeats = [
                (r["consistency"]["verdicts"], lab)
                for r, lab in labelled
                if r.get("consistency") and not isinstance(lab, (dict, list, float))
            ]
            if repeats and (spread := repeat_accuracy(repeats)):
                out["self_consistency"]["repeat_accuracy"] = spread
        return out

    def endpoints(self) -> dict[str, Any]:
        """``usage_by_endpoint`` when the panel used several endpoints."""
        out = self.by_endpoint
        return {"usage_by_endpoint": {k: v.model_dump() for k, v in out.items()}} if out else {}


def judged_totals(records: Iterable[dict[str, Any]]) -> JudgedTotals:
    totals = JudgedTotals()
    for r in records:
        totals.add(r)
    return totals


def summarize_judged(records: Iterable[dict[str, Any]], *, task: str, model: str, offline: bool) -> dict[str, Any]:
    return judged_totals(records).summary(task=task, model=model, offline=offline)
