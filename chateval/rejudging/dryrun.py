"""``chateval rejudge --dry-run``: the whole rejudge simulated in a scratch directory (see
``chateval.bench.api``): the LLM judges' calls, tokens and cost, nothing written or sent."""

from __future__ import annotations

from ..bench.api import simulate
from ..models.dryrun import DryRunEstimate
from .config import RejudgeConfig
from .records import RejudgeSummary


async def estimate_rejudge(cfg: RejudgeConfig) -> DryRunEstimate:
    from .run import arejudge

    def units(summary: RejudgeSummary) -> tuple[int, int]:
        llm = [j for j in summary.judges if j not in summary.offline_judges]
        return sum(r.n_items for r in summary.sets.values()) * len(llm), summary.n_failed

    return await simulate(cfg, arejudge, units)


__all__ = ["estimate_rejudge"]
