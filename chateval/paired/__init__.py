"""Paired comparisons: the difference between two systems (or two judge settings) measured on the
same items, with a 95% percentile-bootstrap interval and a paired p-value.

One module serves every comparison the harness prints (the benches, ``calibrate``), so each
difference is computed, written to ``summary.json`` and read back the same way:

- :func:`paired_difference` — a mean of per-item values (accuracy as 0/1, F1, a score). The two
  sides are resampled together, item by item or, with ``clusters``, cluster by cluster (LoCoMo:
  the questions of one conversation). The p-value is McNemar's exact test for 0/1 values without
  clusters (statsmodels), otherwise a sign-flip permutation test (each item's, or each cluster's,
  difference keeps or flips its sign under the null), exact when the units that differ are few
  enough to enumerate (up to 2**16 patterns, or ``resamples`` if larger: :mod:`.patterns`),
  Monte-Carlo otherwise. One code path, so one comparison has one p-value in every command.
- Fewer than ``FEW_CLUSTERS`` (20) clusters: the interval is the inverted exact permutation test
  (a mean) or a delete-one-cluster jackknife t (a statistic) instead of the bootstrap
  (:mod:`.few`). Everywhere ``excludes_zero`` needs the paired test's p <= 0.05 as well.
- :func:`paired_metric_difference` — a whole-sample statistic against a reference (Cohen's kappa
  or accuracy against human labels, Spearman or Kendall against human scores). The same bootstrap
  index vector is applied to both sides; the p-value comes from a paired permutation test that
  swaps the two sides' predictions per item (or per cluster).

Everything is deterministic for a given ``seed`` (``numpy.random.default_rng``) and vectorised
over resamples. An undefined value is ``None`` with a ``reason``, never NaN (JSON cannot hold it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports
from .model import (
    FEW_CLUSTERS,
    MAX_ALL_PAIRS,
    MIN_ITEMS,
    RESAMPLES,
    SEED,
    PairedDifference,
    dump_comparisons,
    read_comparisons,
)

# The computing half loads numpy on first use: the records (``PairedDifference``) are read by
# config modules that `chateval ... --help` imports.
_EXPORTS = {
    "paired_difference": "difference",
    "paired_metric_difference": "difference",
    "STATISTICS": "statistics",
    "BatchStatistic": "statistics",
    "accuracy_statistic": "statistics",
    "kappa_statistic": "statistics",
    "kendall_statistic": "statistics",
    "per_resample": "statistics",
    "spearman_statistic": "statistics",
    "choose_pairs": "systems",
    "compare_systems": "systems",
    "comparisons_markdown": "systems",
}

__all__ = [
    "FEW_CLUSTERS",
    "MAX_ALL_PAIRS",
    "MIN_ITEMS",
    "RESAMPLES",
    "SEED",
    "STATISTICS",
    "BatchStatistic",
    "PairedDifference",
    "accuracy_statistic",
    "choose_pairs",
    "compare_systems",
    "comparisons_markdown",
    "dump_comparisons",
    "kappa_statistic",
    "kendall_statistic",
    "paired_difference",
    "paired_metric_difference",
    "per_resample",
    "read_comparisons",
    "spearman_statistic",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # for type checkers and IDEs
    from .difference import paired_difference, paired_metric_difference
    from .statistics import (
        STATISTICS,
        BatchStatistic,
        accuracy_statistic,
        kappa_statistic,
        kendall_statistic,
        per_resample,
        spearman_statistic,
    )
    from .systems import choose_pairs, compare_systems, comparisons_markdown
