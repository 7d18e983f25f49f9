"""``chateval calibrate``: can I trust this judge on my data? A grid of judge settings is run over
the user's human-labelled items; each setting's agreement with the people (with 95% intervals),
its cost per item and its paired difference from the single judge are reported; the cheapest
setting statistically indistinguishable from the best is recommended (``recommend``) and can be
written as a preset that judges exactly as its sub-run did.

A package above ``bench`` (as ``auditing``): it runs Evaluators through the benchmarks' unit
runner (cache, --resume, limits, the local or Ray executor) and reuses their pieces (the FairEval
and Topical-Chat sample builders, the single judge of the judge sweeps, the comparison charts).
Names load on first use, so the CLI builds its options from ``CalibrateConfig`` without importing
the benchmarks.

Layout of --out: ``OUT/<setting>/`` per setting (a normal ``evaluate`` run directory: config.json,
samples.jsonl, summary.json, report.md), ``OUT/summary.json`` (a CalibrationSummary; read it
with ``read_calibration``), ``OUT/report.md``, ``OUT/agreement_<metric>.png``,
``OUT/cost_agreement.png`` (cost against agreement, with the Pareto front) and, for FairEval
or Topical-Chat inputs, ``OUT/input.jsonl`` (the items in the evaluate format).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports

_EXPORTS = {
    "CalibrateConfig": "config",
    "DEFAULT_GRID": "grid",
    "load_grid": "grid",
    "parse_setting": "grid",
    "CalibrationSetting": "records",
    "CalibrationSummary": "records",
    "Ceiling": "records",
    "Panel": "records",
    "PerItem": "records",
    "SettingResult": "records",
    "Stat": "records",
    "is_calibration": "records",
    "read_calibration": "records",
    "write_calibration": "records",
    "acalibrate": "run",
    "calibrate": "run",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from .config import CalibrateConfig
    from .grid import DEFAULT_GRID, load_grid, parse_setting
    from .records import (
        CalibrationSetting,
        CalibrationSummary,
        Ceiling,
        Panel,
        PerItem,
        SettingResult,
        Stat,
        is_calibration,
        read_calibration,
        write_calibration,
    )
    from .run import acalibrate, calibrate
