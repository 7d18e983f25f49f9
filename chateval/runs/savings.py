"""What --escalate and --stop-early saved in a run, from its samples.jsonl records.

Escalation: the run's calls against the full panel's on every item. The panel's calls per item
are measured on the escalated items (their re-asks and early stops included) when there are
any, else the panel's planned calls (agents x rounds, x2 with --swap, plus summaries).
Early stopping: the rounds and calls of the rounds that were skipped (debater turns and the
summaries between rounds), per debate (one per presentation order)."""

from __future__ import annotations

from statistics import mean
from typing import Any


def escalation_summary(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    rows = [(r, r["escalation"]) for r in records if r.get("escalation")]
    if not rows:
        return None
    escalated = [e for _, e in rows if e.get("escalated")]
    measured = [e["panel_calls"] for e in escalated]
    per_item = mean(measured) if measured else mean(e["panel_calls_planned"] for _, e in rows)
    used = sum(int(r.get("calls") or 0) for r, _ in rows)
    panel_only = per_item * len(rows)
    return {
        "n_items": len(rows),
        "n_escalated": len(escalated),
        "escalated_rate": len(escalated) / len(rows),
        "screen_calls": sum(e["screen_calls"] for _, e in rows),
        "panel_calls": sum(measured),
        "calls_used": used,
        "panel_calls_per_item": per_item,
        "panel_calls_basis": "measured on the escalated items" if measured else "planned (no item escalated)",
        "panel_only_calls": panel_only,
        "calls_saved": panel_only - used,
        "calls_saved_rate": (panel_only - used) / panel_only if panel_only else None,
    }


def stop_early_summary(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    stops = [r["stop_early"] for r in records if r.get("stop_early")]
    if not stops:
        return None
    debates = [n for s in stops for n in s["rounds"].values()]
    planned = stops[0]["planned_rounds"]
    return {
        "n_samples": len(stops),
        "n_samples_stopped": sum(1 for s in stops if s["rounds_skipped"]),
        "n_debates": len(debates),
        "n_debates_stopped": sum(1 for n in debates if n < planned),
        "planned_rounds": planned,
        "rounds_skipped": sum(s["rounds_skipped"] for s in stops),
        "calls_skipped": sum(s["calls_skipped"] for s in stops),
    }


def savings(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary.json keys ``escalation`` and ``stop_early``, for the runs that used them."""
    out = {"escalation": escalation_summary(records), "stop_early": stop_early_summary(records)}
    return {k: v for k, v in out.items() if v is not None}


def calls_saved_text(e: dict[str, Any]) -> str:
    """'12 calls saved (30%)', or '40 more calls (25% more)' when escalating cost more calls than
    the panel on every item would have (a negative saving reads wrong)."""
    saved, rate = e["calls_saved"], e.get("calls_saved_rate")
    if round(saved) < 0:
        more = "" if rate is None else f" ({100 * -rate:.0f}% more)"
        return f"{-saved:.0f} more calls than the panel on every item{more}"
    return f"{saved:.0f} calls saved" + ("" if rate is None else f" ({100 * rate:.0f}%)")


def savings_lines(summary: dict[str, Any]) -> list[str]:
    """Report lines (markdown bullets) for a summary holding ``savings()``'s keys."""
    lines = []
    e = summary.get("escalation")
    if e:
        lines.append(
            f"- escalation: {e['n_escalated']} of {e['n_items']} items went to the panel "
            f"({100 * e['escalated_rate']:.0f}%); {e['calls_used']} calls ({e['screen_calls']} single-judge, "
            f"{e['panel_calls']} panel) against {e['panel_only_calls']:.0f} for the panel on every item "
            f"({e['panel_calls_per_item']:.2f} per item, {e['panel_calls_basis']}): "
            f"{calls_saved_text(e)}"
        )
    s = summary.get("stop_early")
    if s:
        lines.append(
            f"- early stopping: {s['n_debates_stopped']} of {s['n_debates']} debates ended before round "
            f"{s['planned_rounds']} ({s['n_samples_stopped']} of {s['n_samples']} samples); "
            f"{s['rounds_skipped']} rounds and {s['calls_skipped']} calls skipped"
        )
    return lines
