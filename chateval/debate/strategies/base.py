"""Communication strategies: who speaks when, and what each debater sees.

A strategy is one small class registered by name::

    @strategy("my_order")
    class MyOrder(Strategy):
        description = "..."
        async def run(self, debate: DebateRun) -> None: ...

It drives the debaters' autogen agents for ``debate.turns`` rounds, opening each round with
``debate.start_round(r)`` and recording every reply with ``debate.record(...)``. The final
round's replies carry the verdicts; the panel reads them afterwards. After each round a
strategy may ask ``debate.settled(r)`` (true only with --stop-early, once every debater's
provisional verdict agrees) and stop: the verdicts are then read from round ``r``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Literal, TypeVar

from ...util.registry import Registry
from ..run_state import DebateRun


class Strategy(ABC):
    description: ClassVar[str] = ""
    uses_summarizer: ClassVar[bool] = False

    def __init__(self, *, keep_raw_history: bool = False, summary_mode: SummaryMode = "append") -> None:
        # Only the summarizer strategy reads these; accepted by all so presets stay uniform.
        # keep_raw_history is the older spelling of summary_mode="append".
        self.summary_mode: SummaryMode = "append" if keep_raw_history else summary_mode
        self.keep_raw_history = self.summary_mode == "append"

    @abstractmethod
    async def run(self, debate: DebateRun) -> None: ...

    def critical_path_calls(self, agents: int, turns: int) -> int:
        """Sequential model calls per sample (for throughput bounds in benchmarks)."""
        return agents * turns


SummaryMode = Literal["append", "replace"]

STRATEGIES: Registry[type[Strategy]] = Registry("strategy", entry_points="chateval.strategies")
S = TypeVar("S", bound=type[Strategy])


def strategy(name: str, *, replace: bool = False) -> Callable[[S], S]:
    """Register a strategy class under ``name`` (usable as ``--strategy name``)."""
    return STRATEGIES.register(name, replace=replace)  # type: ignore[return-value]
