"""Communication strategies: who speaks when, and what each debater sees.

A strategy is one small class registered by name::

    @strategy("my_order")
    class MyOrder(Strategy):
        description = "..."
        async def run(self, debate: DebateRun) -> None: ...

It drives the debaters' autogen agents for ``debate.turns`` rounds, opening each round with
``debate.start_round(r)`` and recording every reply with ``debate.record(...)``. The final
round's replies carry the verdicts; the panel reads them afterwards.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Callable, ClassVar, TypeVar

from ...registry import Registry

if TYPE_CHECKING:
    from ..panel import DebateRun


class Strategy(ABC):
    description: ClassVar[str] = ""
    uses_summarizer: ClassVar[bool] = False

    def __init__(self, *, keep_raw_history: bool = False) -> None:
        # Only the summarizer strategy reads this; accepted by all so presets stay uniform.
        self.keep_raw_history = keep_raw_history

    @abstractmethod
    async def run(self, debate: "DebateRun") -> None: ...

    def critical_path_calls(self, agents: int, turns: int) -> int:
        """Sequential model calls per sample (for throughput bounds in benchmarks)."""
        return agents * turns


STRATEGIES: Registry[type[Strategy]] = Registry("strategy", entry_points="chateval.strategies")
S = TypeVar("S", bound=type[Strategy])


def strategy(name: str, *, replace: bool = False) -> Callable[[S], S]:
    """Register a strategy class under ``name`` (usable as ``--strategy name``)."""
    return STRATEGIES.register(name, replace=replace)  # type: ignore[return-value]
