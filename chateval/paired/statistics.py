"""Whole-sample statistics over a batch of resamples, for :func:`paired_metric_difference`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# A statistic over a batch of resamples: gold and pred are (R, n) arrays (numbers, or integer
# codes for labels); it returns R values, NaN where the statistic is undefined for that resample.
BatchStatistic = Callable[[np.ndarray, np.ndarray], np.ndarray]


def accuracy_statistic() -> BatchStatistic:
    """Share of items where the prediction equals the reference."""
    return lambda gold, pred: (gold == pred).mean(axis=1)


def kappa_statistic() -> BatchStatistic:
    """Cohen's kappa (unweighted), (p_o - p_e) / (1 - p_e) in closed form per resample; NaN
    where both raters used one and the same label (p_e = 1). Inputs are integer label codes."""

    def stat(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
        m = gold.shape[1]
        labels = np.union1d(np.unique(gold), np.unique(pred))
        agree = (gold == pred).sum(axis=1).astype(float)
        chance = sum((gold == c).sum(axis=1).astype(float) * (pred == c).sum(axis=1) for c in labels)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(chance < m * m, (m * agree - chance) / (m * m - chance), np.nan)

    return stat


def _codes(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense integer ranks of the values of a whole batch (rank statistics are unchanged by a
    monotone recoding, and integers make the row tricks below exact)."""
    values, inverse = np.unique(x, return_inverse=True)
    return inverse.reshape(x.shape), len(values)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Row-wise average ranks (scipy's rankdata 'average', 1-based) of a (R, n) batch: per row,
    the count of each value code, and a code's rank is #smaller + (#equal + 1) / 2."""
    codes, k = _codes(x)
    rows = codes.shape[0]
    counts = np.bincount((np.arange(rows)[:, None] * k + codes).ravel(), minlength=rows * k).reshape(rows, k)
    smaller = np.cumsum(counts, axis=1) - counts
    return np.take_along_axis(smaller + (counts + 1) / 2, codes, axis=1)


def spearman_statistic() -> BatchStatistic:
    """Spearman's rho: Pearson's r of average ranks per resample; NaN where a side is constant."""
    return lambda gold, pred: _pearson_rows(_average_ranks(gold), _average_ranks(pred))


MAX_KENDALL_CELLS = 4096  # joint tables larger than this (near-continuous data) go one resample at a time


def kendall_statistic() -> BatchStatistic:
    """Kendall's tau-b (as scipy's kendalltau) per resample; NaN where undefined.

    Scores here take few distinct values (Likert means, 1-10 ratings), so each resample's pairs
    are counted from its joint table of (gold, pred) codes: concordant pairs are cell counts
    times the counts strictly above-right, discordant ones times those above-left; ties from
    the margins. Near-continuous data falls back to scipy one resample at a time."""

    def stat(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
        gx, kx = _codes(gold)
        gy, ky = _codes(pred)
        if kx * ky > MAX_KENDALL_CELLS:
            return _kendall_loop(gold, pred)
        rows, n = gx.shape
        cells = (np.arange(rows)[:, None] * (kx * ky) + gx * ky + gy).ravel()
        table = np.bincount(cells, minlength=rows * kx * ky).reshape(rows, kx, ky).astype(float)
        # ge[r, i, j] = pairs-to-be with gold code >= i and pred code >= j (suffix sums)
        ge = table[:, ::-1, ::-1].cumsum(1).cumsum(2)[:, ::-1, ::-1]
        above = np.zeros_like(table)
        above[:, :-1, :-1] = ge[:, 1:, 1:]
        # gl[r, i, j] = counts with gold code >= i and pred code <= j
        gl = table[:, ::-1, :].cumsum(1)[:, ::-1, :].cumsum(2)
        left = np.zeros_like(table)
        left[:, :-1, 1:] = gl[:, 1:, :-1]
        concordant = (table * above).sum(axis=(1, 2))
        discordant = (table * left).sum(axis=(1, 2))
        tx, ty = table.sum(axis=2), table.sum(axis=1)
        n0 = n * (n - 1) / 2
        den = np.sqrt((n0 - (tx * (tx - 1) / 2).sum(axis=1)) * (n0 - (ty * (ty - 1) / 2).sum(axis=1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, (concordant - discordant) / den, np.nan)

    return stat


def _kendall_loop(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    import warnings

    from ..util.extras import require

    require("stats", "Kendall's tau over near-continuous scores")
    from scipy.stats import kendalltau

    out = np.empty(len(gold))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (g, p) in enumerate(zip(gold, pred)):
            out[i] = kendalltau(g, p).statistic
    return out


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (x * y).sum(axis=1) / den
    return np.where(den > 0, r, np.nan)


STATISTICS: dict[str, Callable[[], BatchStatistic]] = {
    "accuracy": accuracy_statistic,
    "kappa": kappa_statistic,
    "spearman": spearman_statistic,
    "kendall": kendall_statistic,
}
MIN_FOR = {"spearman": 3, "kendall": 3}  # a rank correlation of two points is always +-1


def per_resample(fn: Callable[[np.ndarray, np.ndarray], float | None]) -> BatchStatistic:
    """Lift a one-sample statistic ``fn(gold, pred) -> float | None`` to a batch (a loop)."""

    def stat(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
        vals = [fn(g, p) for g, p in zip(gold, pred)]
        return np.array([np.nan if v is None else float(v) for v in vals], dtype=float)

    return stat
