"""Run summaries computed from the samples.jsonl records (so resumed runs summarise whole)."""

from __future__ import annotations

from statistics import mean
from typing import Any

from ..debate.tasks import get_task
from ..models import UsageTotals
from ..runs.savings import savings
from ..stats.labels import normalise_label
from ..stats.self_consistency import repeat_accuracy, summarize_consistency

__all__ = ["OFFLINE_NOTE", "normalise_label", "summarize_judged"]

OFFLINE_NOTE = "offline model: verdicts are deterministic heuristics, not LLM judgements"


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
        **by_endpoint(records),
        **summarize_consistency(records),
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
        # --samples: each repeat's own agreement with the labels (run-to-run variance)
        repeats = [
            (r["consistency"]["verdicts"], lab)
            for r, lab in labelled
            if r.get("consistency") and not isinstance(lab, (dict, list, float))
        ]
        if repeats and (spread := repeat_accuracy(repeats)):
            out["self_consistency"]["repeat_accuracy"] = spread
    return out


def by_endpoint(records: list[dict[str, Any]]) -> dict[str, Any]:
    """A panel of several endpoints: ``usage_by_endpoint``, each endpoint's usage totalled."""
    out: dict[str, UsageTotals] = {}
    for r in records:
        for name, u in (r.get("usage_by_endpoint") or {}).items():
            out.setdefault(name, UsageTotals()).merge(UsageTotals.model_validate(u))
    return {"usage_by_endpoint": {k: v.model_dump() for k, v in out.items()}} if out else {}
