"""Run summaries computed from the samples.jsonl records (so resumed runs summarise whole)."""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

from ..stats.labels import normalise_label, reference_label
from ..models import UsageTotals
from ..runs.savings import savings

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
        "mean_latency_s": mean(r.get("latency_s", 0.0) for r in records) if records else None,
    }
    if offline:
        out["note"] = OFFLINE_NOTE
    out |= savings(records)  # --escalate / --stop-early: what they saved
    verdicts = [r["verdict"] for r in ok if r.get("verdict")]
    if task == "pairwise":
        out["verdicts"] = dict(Counter(v.get("winner") for v in verdicts))
        swapped = [r for r in ok if r.get("order_disagreement") is not None]
        if swapped:
            out["order_disagreement_rate"] = sum(1 for r in swapped if r["order_disagreement"]) / len(swapped)
    elif task == "correctness":
        out["verdicts"] = dict(Counter({True: "correct", False: "incorrect", None: "tie"}[v.get("correct")] for v in verdicts))
    elif task == "score":
        scores = [v["score"] for v in verdicts if v.get("score") is not None]
        out["mean_score"] = mean(scores) if scores else None
    labelled = [(r, reference_label(task, r.get("label"))) for r in ok]  # several annotators: their majority
    labelled = [(r, lab) for r, lab in labelled if lab is not None and r.get("verdict")]
    if labelled:
        key = "winner" if task == "pairwise" else "correct"
        hits = sum(1 for r, lab in labelled if r["verdict"].get(key) == lab)
        out["label_accuracy"] = {"n": len(labelled), "accuracy": hits / len(labelled)}
    return out
