"""Run summaries computed from the samples.jsonl records (so resumed runs summarise whole)."""

from __future__ import annotations

from statistics import mean
from typing import Any

from ..debate.tasks import get_task
from ..models import UsageTotals
from ..runs.savings import savings
from ..stats.labels import normalise_label

__all__ = ["OFFLINE_NOTE", "normalise_label", "summarize_judged", "summary_view"]

OFFLINE_NOTE = "offline model: verdicts are deterministic heuristics, not LLM judgements"


# The bulk of a record that no summary reads (they read verdicts, labels, usage and counts).
NOT_SUMMARISED = ("transcript", "inputs")


def summary_view(record: dict[str, Any]) -> dict[str, Any]:
    """A record as summaries see it: without its transcript and inputs (most of its size), so a
    run's summary is built from its whole file without holding every debate."""
    for key in NOT_SUMMARISED:
        record.pop(key, None)
    return record


def summarize_judged(records: list[dict[str, Any]], *, task: str, model: str, offline: bool) -> dict[str, Any]:
    ok = [r for r in records if r.get("status") == "ok"]
    failed = [r for r in records if r.get("status") != "ok"]
    usage = UsageTotals()
    for r in records:
        usage.merge(UsageTotals.model_validate(r.get("usage") or {}))
    agents = [a for r in records for a in r.get("agents") or []]
    out: dict[str, Any] = {
        "model": model,
        "offline": offline,
        "n_samples": len(records),
        "n_ok": len(ok),
        "n_failed": len(failed),
        "failed_ids": [r.get("id") for r in failed],
        "agent_verdicts": len(agents),
        "parse_errors": sum(1 for a in agents if a.get("parse_error")),
        "reasked": sum(1 for a in agents if a.get("reasked")),
        "usage": usage.model_dump(),
        "mean_latency_s": mean(r.get("latency_s", 0.0) for r in records) if records else None,
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
    return out
