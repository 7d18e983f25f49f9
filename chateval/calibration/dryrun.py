"""``chateval calibrate --dry-run``: the whole grid simulated in a scratch directory (see
``chateval.bench.api``): calls, tokens and cost of every setting, nothing written or sent."""

from __future__ import annotations

from ..bench.api import simulate
from ..models.dryrun import DryRunEstimate
from .config import CalibrateConfig
from .records import CalibrationSummary


async def estimate_calibration(cfg: CalibrateConfig) -> DryRunEstimate:
    from .run import acalibrate

    def units(summary: CalibrationSummary) -> tuple[int, int]:
        settings = list(summary.settings.values())
        return sum(r.n_items for r in settings), sum(r.n_failed for r in settings)

    return await simulate(cfg, acalibrate, units)


__all__ = ["estimate_calibration"]
