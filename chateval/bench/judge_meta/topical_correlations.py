"""Topical-Chat's turn-level correlations with the human mean scores, per aspect and averaged,
and how they are shown (table cells, the correlation table, the bar chart). Shared by the judge
settings and the non-LLM baselines, so both are measured and shown the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...datasets.topical_chat import SHORT
from .. import plots
from .agreement import correlations
from .plots import bars, fmt


def aspect_correlations(pred: Sequence[float | None], human: Sequence[float | None], what: str) -> dict[str, Any]:
    return correlations(pred, human, x_name=what, y_name="the human mean score")


def _avg(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals and len(vals) == len(values) else None


def correlation_block(
    scores: Sequence[dict[str, float | None]], humans: Sequence[dict[str, float]], aspects: Sequence[str], what: str
) -> dict[str, Any]:
    """Per aspect {spearman, kendall} plus their mean over aspects (None if any aspect is None)."""
    per = {a: aspect_correlations([s.get(a) for s in scores], [h.get(a) for h in humans], what) for a in aspects}
    return {
        "aspects": per,
        "avg": {k: _avg([per[a][k]["value"] for a in aspects]) for k in ("spearman", "kendall")},
        "n": max((per[a]["spearman"]["n"] for a in aspects), default=0),
    }


def metric_headers(aspects: Sequence[str]) -> list[str]:
    return [f"{SHORT.get(a, a)} {k}" for a in aspects for k in ("ρ", "τ")] + ["avg ρ", "avg τ"]


def metric_cells(m: dict[str, Any], aspects: Sequence[str]) -> list[str]:
    cells = [fmt(m["aspects"][a][k]["value"]) for a in aspects for k in ("spearman", "kendall")]
    return cells + [fmt(m["avg"]["spearman"]), fmt(m["avg"]["kendall"])]


def correlation_bars(
    path: Path, rows: list[tuple[str, str, dict[str, Any]]], title: str, aspects: Sequence[str]
) -> None:
    """Spearman ρ per aspect (and avg), one series per row; n (pairs correlated) under each aspect."""
    ns = {a: [b["aspects"][a]["spearman"]["n"] for _, _, b in rows] for a in aspects}
    bars(
        path,
        [plots.n_label(g, n) for g, n in [*ns.items(), ("avg", sum(ns.values(), []))]],
        {name: [b["aspects"][a]["spearman"]["value"] for a in aspects] + [b["avg"]["spearman"]] for name, _, b in rows},
        title=title,
        ylabel="Spearman ρ",
    )


def correlation_table(rows: list[tuple[str, str, dict[str, Any]]], aspects: Sequence[str]) -> list[str]:
    head = ["metric", "kind", "n"] + metric_headers(aspects)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    reasons: list[str] = []
    for name, kind, block in rows:
        lines.append(f"| {name} | {kind} | {block['n']} | " + " | ".join(metric_cells(block, aspects)) + " |")
        for a in aspects:
            for k in ("spearman", "kendall"):
                why = block["aspects"][a][k].get("reason")
                if why:
                    reasons.append(f"`{name}` {a} {k}: {why}")
    if reasons:
        lines += ["", "Undefined (shown as –):"] + [f"- {r}" for r in dict.fromkeys(reasons)]
    return lines + [""]
