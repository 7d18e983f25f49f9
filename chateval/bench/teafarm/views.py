"""What TeaFarm keeps of its records for the summary and comparisons (issue 38 item 3).

A record is one (question, system) unit with the question, the true answer, the system's
response, its context and the judges' reasons and usage. The summary reads only ids, the point
of view, the verdicts (correct, tie, agreement), latencies and context sizes: each answered unit
is kept as :func:`teafarm_view`, a failed one as its key and error (the first 20 per system, all
the report lists), and the usage is summed as the records stream by, in the file's order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..summaries import MemoryMethodTotals

KEPT = ("key", "status", "system", "conversation", "question_id", "pov", "correct", "tie", "context_tokens", "latency")


def _verdicts(judge: Any) -> Any:
    """Each judge's correct and tie, and their agreement, not their reasons or usage."""
    if not isinstance(judge, dict):
        return judge
    out: dict[str, Any] = {}
    for w in ("single", "debate"):
        if w in judge:
            v = judge[w]
            out[w] = {k: v[k] for k in ("correct", "tie") if k in v} if isinstance(v, dict) else v
    if "agreement" in judge:
        out["agreement"] = judge["agreement"]
    return out


def teafarm_view(r: dict[str, Any]) -> dict[str, Any]:
    """An answered unit as the success tables, the comparisons and the latency table read it."""
    out: dict[str, Any] = {k: r[k] for k in KEPT if k in r}
    if "judge" in r:
        out["judge"] = _verdicts(r["judge"])
    return out


def belongs(r: dict[str, Any], name: str) -> bool:
    """A record of system ``name`` (one from before ``system`` was recorded: by its key's tail)."""
    return r.get("system") == name or str(r.get("key", "")).endswith(f"::{name}")


class TeaFarmRecords:
    """A run's records read once: per system its ``MemoryMethodTotals``; every answered unit's view
    in the file's order (the comparisons'); the counts of units and failed units."""

    def __init__(self, records: Iterable[dict[str, Any]], systems: list[str]) -> None:
        self.systems = {name: MemoryMethodTotals() for name in systems}
        self.ok: list[dict[str, Any]] = []
        self.n_units = self.n_failed = 0
        for r in records:
            self.n_units += 1
            view = teafarm_view(r) if r.get("status") == "ok" else None
            self.n_failed += view is None
            if view is not None:
                self.ok.append(view)
            for name, rows in self.systems.items():
                if belongs(r, name):
                    rows.add(r, view)
