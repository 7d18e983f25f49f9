"""Agreement statistics moved to :mod:`chateval.stats.agreement` (the evaluator's report uses them too)."""

from ...stats.agreement import MIN_PAIRS, accuracy, cohen_kappa, confusion, correlations, kendall, paired, spearman

__all__ = ["MIN_PAIRS", "accuracy", "cohen_kappa", "confusion", "correlations", "kendall", "paired", "spearman"]
