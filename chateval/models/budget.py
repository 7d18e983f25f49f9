"""The cost cap of a run (``--max-cost``) and the unit a model call belongs to.

Both travel as context variables rather than config fields: a cap is not part of a run's
identity (``--resume`` with a higher cap must continue the same run), and the unit runner, the
evaluator's loop and the model layer all read them without being handed one more argument.

``with cost_cap(5.0) as cap:`` — every model layer built inside meters into ``cap``; the unit
runner and ``Evaluator.evaluate`` check ``cap.reached`` before starting each unit or sample and
leave the rest unstarted (units already running finish: nothing paid for is thrown away).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from typing import Any, Protocol


class _Metered(Protocol):
    cost_usd: float | None


class CostCap:
    """A spending limit in USD over the metered cost of every model layer watching it."""

    def __init__(self, limit_usd: float) -> None:
        if not math.isfinite(limit_usd) or limit_usd < 0:
            raise ValueError(f"the cost cap must be a finite number >= 0, not {limit_usd}")
        self.limit_usd = limit_usd
        self._totals: list[_Metered] = []
        self.not_run = 0  # units (samples) left unstarted because the cap was reached

    def watch(self, totals: _Metered) -> None:
        """Count ``totals`` (a model layer's UsageTotals; derived layers share theirs)."""
        if not any(t is totals for t in self._totals):
            self._totals.append(totals)

    @property
    def spent_usd(self) -> float | None:
        """Metered cost so far; None when a call had no known price."""
        total = 0.0
        for t in self._totals:
            if t.cost_usd is None:
                return None
            total += t.cost_usd
        return total

    @property
    def reached(self) -> bool:
        spent = self.spent_usd
        # An unknown price cannot be held under a cap: stop rather than spend blind.
        return spent is None or spent >= self.limit_usd

    def skip(self, n: int = 1) -> None:
        self.not_run += n

    @property
    def stopped(self) -> bool:
        return self.not_run > 0

    def record(self) -> dict[str, Any]:
        """What summary.json says about a run the cap stopped."""
        return {
            "stopped_at_cost_cap": True,
            "max_cost_usd": self.limit_usd,
            "cost_usd_at_stop": self.spent_usd,
            "n_not_run": self.not_run,
        }

    def message(self, unit: str = "units") -> str:
        spent = self.spent_usd
        spent_text = "an unknown amount (a model without a price)" if spent is None else f"${spent:.4f}"
        return (
            f"stopped at the cost cap: {spent_text} of ${self.limit_usd:.4f}; {self.not_run} {unit} not run; "
            "rerun with --resume and a higher --max-cost to continue"
        )


_CAP: contextvars.ContextVar[CostCap | None] = contextvars.ContextVar("chateval_cost_cap", default=None)
_UNIT: contextvars.ContextVar[str | None] = contextvars.ContextVar("chateval_unit", default=None)


def active_cap() -> CostCap | None:
    return _CAP.get()


@contextlib.contextmanager
def cost_cap(limit_usd: float | CostCap) -> Iterator[CostCap]:
    cap = limit_usd if isinstance(limit_usd, CostCap) else CostCap(limit_usd)
    token = _CAP.set(cap)
    try:
        yield cap
    finally:
        _CAP.reset(token)


def cap_reached() -> bool:
    """True when a cap is active and reached: the caller leaves its next unit unstarted (and
    counts it with ``skip_unit``)."""
    cap = _CAP.get()
    return cap is not None and cap.reached


def skip_unit() -> None:
    cap = _CAP.get()
    if cap is not None:
        cap.skip()


def set_unit(key: str) -> None:
    """Name the unit (sample, question) the calls made from this task on belong to; set inside
    the unit's own task, so concurrent units do not see each other's name."""
    _UNIT.set(key)


def current_unit() -> str | None:
    return _UNIT.get()


__all__ = ["CostCap", "active_cap", "cap_reached", "cost_cap", "current_unit", "set_unit", "skip_unit"]
