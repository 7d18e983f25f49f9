"""Intervals that keep their coverage when items come in few clusters.

A percentile bootstrap over a handful of clusters is too narrow (8 conversations, 3 of them
differing, gave an interval excluding 0 while the exact permutation p was 0.25). Below
``FEW_CLUSTERS`` clusters the interval is therefore:

- for a mean of per-item values, the **inverted sign-flip permutation test**: every shift δ
  whose exact test of "the pooled difference is δ" is not rejected at 5% (cluster sums minus δ
  times the cluster sizes, flipped cluster by cluster). Its coverage is the test's, and it
  excludes 0 exactly when the test at δ = 0 — the reported p — rejects;
- for a whole-sample statistic (kappa, a rank correlation), a **delete-one-cluster jackknife**
  standard error with Student's t on G − 1 degrees of freedom (a small-sample cluster-robust
  interval).

With five clusters or fewer no exact test can reach p < 0.05 (2 of 2**k patterns are always as
extreme), so no finite 95% interval exists and none is reported.
"""

from __future__ import annotations

import math

import numpy as np

from .patterns import TOL, is_exact, null_values

ALPHA = 0.05
GRID = 401  # shifts tried before the two edges are refined by bisection
BISECT = 40


def _p_of_shifts(
    a: np.ndarray, b: np.ndarray, total: float, size: float, shifts: np.ndarray, exact: bool
) -> np.ndarray:
    """p(δ) for each δ: the share of patterns with |A - δB| >= |S - δN|."""
    out = np.empty(len(shifts))
    step = max(1, (1 << 21) // max(len(a), 1))
    for s in range(0, len(shifts), step):
        d = shifts[s : s + step]
        obs = np.abs(total - d * size)
        hits = (np.abs(a[:, None] - d[None, :] * b[:, None]) >= obs - TOL * obs).sum(axis=0)
        out[s : s + step] = hits / len(a) if exact else (hits + 1) / (len(a) + 1)
    return out


def inverted_permutation_interval(
    sums: np.ndarray, counts: np.ndarray, *, resamples: int, rng: np.random.Generator, alpha: float = ALPHA
) -> tuple[tuple[float, float] | None, float, bool, str | None]:
    """(interval, p at δ = 0, exact, reason) for the pooled mean difference sum(sums)/sum(counts),
    from the sign-flip test of each cluster's summed difference minus δ times its size."""
    k = len(sums)
    exact = is_exact(k, resamples)
    signs, _ = null_values(k, resamples, rng, lambda rows: rows, width=k)
    e = np.where(signs, -1.0, 1.0)
    a, b = e @ sums, e @ counts
    total, size = float(sums.sum()), float(counts.sum())
    p0 = float(_p_of_shifts(a, b, total, size, np.zeros(1), exact)[0])
    if exact and 2 / len(a) > alpha:
        why = (
            f"{k} clusters: an exact cluster test cannot reach p < {alpha:g} "
            f"(smallest p {2 / len(a):.3g}), so no finite 95% interval exists"
        )
        return None, p0, exact, why
    means = sums / counts
    lo_b, hi_b = float(means.min()), float(means.max())
    pad = 1e-9 + 1e-3 * (hi_b - lo_b)
    grid = np.union1d(np.linspace(lo_b - pad, hi_b + pad, GRID), [0.0, total / size])
    p = _p_of_shifts(a, b, total, size, grid, exact)
    ok = np.flatnonzero(p > alpha)

    def edge(inside: float, outside: float) -> float:
        for _ in range(BISECT):
            mid = (inside + outside) / 2
            if _p_of_shifts(a, b, total, size, np.array([mid]), exact)[0] > alpha:
                inside = mid
            else:
                outside = mid
        return inside

    i, j = int(ok[0]), int(ok[-1])
    lo = edge(float(grid[i]), float(grid[i - 1])) if i > 0 else float(grid[i])
    hi = edge(float(grid[j]), float(grid[j + 1])) if j < len(grid) - 1 else float(grid[j])
    return (lo, hi), p0, exact, None


def jackknife_t_interval(
    estimate: float, leave_one_out: np.ndarray, alpha: float = ALPHA
) -> tuple[float, float] | None:
    """estimate ± t(1 - alpha/2, G - 1) × the delete-one-cluster jackknife standard error; None
    when a leave-one-out value is undefined."""
    g = len(leave_one_out)
    if g < 2 or np.isnan(leave_one_out).any():
        return None
    se = float(np.sqrt((g - 1) / g * ((leave_one_out - leave_one_out.mean()) ** 2).sum()))
    half = t_quantile(1 - alpha / 2, g - 1) * se
    return estimate - half, estimate + half


def _t_central(x: float, df: int) -> float:
    """P(|T| <= x) for Student's t with an integer df, in closed form (Abramowitz & Stegun
    26.7.3-4): the jackknife needs no scipy, so the core install gets few-cluster intervals too."""
    theta = math.atan(x / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: (2/pi) [theta + sin cos (1 + 2/3 c^2 + (2*4)/(3*5) c^4 + ...)]
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    term, total = 1.0, 1.0  # even: sin (1 + 1/2 c^2 + (1*3)/(2*4) c^4 + ...)
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(q: float, df: int) -> float:
    """The q-quantile (q > 0.5) of Student's t with an integer df >= 1, by bisection on the CDF."""
    central = 2 * q - 1  # P(|T| <= x) at the quantile
    lo, hi = 0.0, 1.0
    while _t_central(hi, df) < central:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_central(mid, df) < central:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
