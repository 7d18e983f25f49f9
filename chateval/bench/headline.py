"""The numbers a run is read by, one row per system (or setting): n, the benchmark's main score,
recall_all@5 where retrieval is scored, failed units and cost. Printed at the end of every
``chateval bench`` run and kept under ``headline`` in summary.json.

Each benchmark builds its own rows (``Benchmark.headline``) and names its gate metrics; this
module dispatches by the registry and holds the row builders several benchmarks share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import BENCHMARKS

Pick = Callable[[dict[str, Any]], tuple[Any, Any, Any, Any]]


def summed_cost(*usages: dict[str, Any] | None) -> float | None:
    """The summed cost of usage blocks; None if any of them has no price."""
    costs = [(u or {}).get("cost_usd") for u in usages if u]
    known = [float(c) for c in costs if c is not None]
    return None if not costs or len(known) < len(costs) else sum(known)


def system_rows(
    summary: dict[str, Any], metric: str, pick: Pick, extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A row per entry of ``summary["systems"]``: ``pick(e)`` gives (value, n, failed, cost).
    ``extra(e)``: further labelled numbers of a system's row (LoCoMo's evidence recall, which is
    not LongMemEval's recall_all@5 and is not shown under that name)."""
    rows = []
    for name, e in (summary.get("systems") or {}).items():
        value, n, failed, spent = pick(e)
        rows.append(
            {
                "system": name,
                "n": n,
                "metric": metric,
                "value": value,
                **(extra(e) if extra else {}),
                "recall_all@5": None,
                "failed": failed,
                "cost_usd": spent,
            }
        )
    return rows


def setting_rows(summary: dict[str, Any], metric: str, pick: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """A row per judge setting (the judge benchmarks): ``pick(metrics)`` gives the value."""
    rows = []
    for name, s in (summary.get("settings") or {}).items():
        rows.append(
            {
                "system": name,
                "n": s.get("n_units"),
                "metric": metric,
                "value": pick(s.get("metrics") or {}),
                "recall_all@5": None,
                "failed": s.get("n_failed"),
                "cost_usd": (s.get("usage") or {}).get("cost_usd"),
            }
        )
    return rows


def headline(name: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    return BENCHMARKS.get(name).headline(summary)


def gate_measures(name: str, summary: dict[str, Any]) -> dict[str, dict[Any, Any]]:
    """{metric: {system: value}} for ``chateval.runs.gates.check``, as the benchmark measures it."""
    return BENCHMARKS.get(name).gate_measures(summary, summary.get("headline") or headline(name, summary))
