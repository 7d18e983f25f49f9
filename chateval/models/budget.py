"""The cost cap of a run (``--max-cost``) and the unit a model call belongs to.

Both travel as context variables rather than config fields: a cap is not part of a run's
identity (``--resume`` with a higher cap must continue the same run), and the unit runner, the
evaluator's loop and the model layer all read them without being handed one more argument.

``with cost_cap(5.0) as cap:`` — every model layer built inside meters into ``cap``; the unit
runner and ``Evaluator.evaluate`` start each unit or sample inside ``async with unit_budget()``,
which reserves the unit's estimated cost before it starts and leaves the rest unstarted once the
cap would be passed (units already running finish: nothing paid for is thrown away).

Why reserve: with 16 units in flight, checking only the cost already spent lets all 16 start
before any of them has been counted (a $0.50 cap once spent $24.72). A unit starts only when
the cost spent, plus what the running units have reserved and not yet spent, plus its own
estimate stays within the cap. The estimate is the cost of the costliest unit finished so far
(at full price: a reply from the completion cache counts what it would have cost); until a unit
with an answered call has finished there is none, so units start one at a time. The cap is then passed only
by what running units cost beyond their estimates (the bound docs/cost.md states).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol


class _Metered(Protocol):
    cost_usd: float | None


class UnitAccount:
    """What one running unit reserved (None: no estimate yet) and has spent so far."""

    def __init__(self, estimate: float | None) -> None:
        self.estimate = estimate
        self.spent: float | None = 0.0  # None once a call had no known price
        # What its answered calls would have cost without the completion cache: a cached unit
        # still tells what the next, uncached one costs. A unit with no answered call (all
        # failed) tells nothing, and sets no estimate.
        self.full_price = 0.0
        self.answered = 0

    def charge(self, usd: float | None, full_price: float | None = None, answered: bool = True) -> None:
        self.spent = None if self.spent is None or usd is None else self.spent + usd
        self.full_price += full_price if full_price is not None else usd or 0.0
        self.answered += int(answered)

    @property
    def unspent_reservation(self) -> float:
        if self.estimate is None or self.spent is None:
            return 0.0
        return max(0.0, self.estimate - self.spent)


class CostCap:
    """A spending limit in USD over the metered cost of every model layer watching it."""

    def __init__(self, limit_usd: float) -> None:
        if not math.isfinite(limit_usd) or limit_usd < 0:
            raise ValueError(f"the cost cap must be a finite number >= 0, not {limit_usd}")
        self.limit_usd = limit_usd
        self._totals: list[_Metered] = []
        self.not_run = 0  # units (samples) left unstarted because the cap was reached
        self.running: list[UnitAccount] = []
        self.unit_estimate: float | None = None  # the costliest finished unit's cost
        self._waiters: list[asyncio.Future[None]] = []

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

    @property
    def committed_usd(self) -> float | None:
        """Spent so far plus what running units reserved and have not spent yet."""
        spent = self.spent_usd
        return None if spent is None else spent + sum(u.unspent_reservation for u in self.running)

    async def admit(self) -> UnitAccount | None:
        """Reserve the next unit's estimated cost and return its account, waiting while running
        units hold reservations that may free room; None when the unit must not start."""
        while True:
            if self.reached:
                return None
            est = self.unit_estimate
            if est is None:  # no unit finished yet: no estimate, so one unit at a time
                if not self.running:
                    return self._start(None)
            else:
                committed = self.committed_usd
                if committed is None:
                    return None
                if committed + est <= self.limit_usd:
                    return self._start(est)
                if not self.running:
                    return None  # nothing running can free room: the cap is (about to be) spent
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def _start(self, estimate: float | None) -> UnitAccount:
        account = UnitAccount(estimate)
        self.running.append(account)
        return account

    def finish(self, account: UnitAccount) -> None:
        """A unit ended: its reservation is replaced by what it spent (already metered)."""
        self.running = [u for u in self.running if u is not account]
        if account.answered:
            self.unit_estimate = max(self.unit_estimate or 0.0, account.full_price)
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

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
        est = self.unit_estimate
        why = (
            f" (another, estimated at ${est:.4f}, would pass it)"
            if spent is not None and spent < self.limit_usd and est
            else ""
        )
        return (
            f"stopped at the cost cap: {spent_text} of ${self.limit_usd:.4f}{why}; {self.not_run} {unit} not run; "
            "rerun with --resume and a higher --max-cost to continue"
        )


_CAP: contextvars.ContextVar[CostCap | None] = contextvars.ContextVar("chateval_cost_cap", default=None)
_UNIT: contextvars.ContextVar[str | None] = contextvars.ContextVar("chateval_unit", default=None)
_ACCOUNT: contextvars.ContextVar[UnitAccount | None] = contextvars.ContextVar("chateval_unit_account", default=None)


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


@contextlib.asynccontextmanager
async def unit_budget() -> AsyncIterator[bool]:
    """``async with unit_budget() as started:`` around one unit: under a cap, its estimated cost
    is reserved first (waiting for room while other units run) and released for its actual cost
    at the end; ``started`` is False when the unit must be left out (counted as not run)."""
    cap = _CAP.get()
    if cap is None or _ACCOUNT.get() is not None:  # no cap, or part of a unit already admitted
        yield True
        return
    account = await cap.admit()
    if account is None:
        cap.skip()
        yield False
        return
    token = _ACCOUNT.set(account)
    try:
        yield True
    finally:
        _ACCOUNT.reset(token)
        cap.finish(account)


def charge_unit(usd: float | None, full_price: float | None = None, answered: bool = True) -> None:
    """Count a metered call's cost to the running unit's account (the model layer calls this);
    ``full_price``: what it would have cost without the completion cache (default ``usd``)."""
    account = _ACCOUNT.get()
    if account is not None:
        account.charge(usd, full_price, answered)


def set_unit(key: str) -> None:
    """Name the unit (sample, question) the calls made from this task on belong to; set inside
    the unit's own task, so concurrent units do not see each other's name."""
    _UNIT.set(key)


def current_unit() -> str | None:
    return _UNIT.get()


__all__ = [
    "CostCap",
    "UnitAccount",
    "active_cap",
    "cap_reached",
    "charge_unit",
    "cost_cap",
    "current_unit",
    "set_unit",
    "skip_unit",
    "unit_budget",
]
