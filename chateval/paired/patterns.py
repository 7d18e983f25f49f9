"""Sign patterns of the paired permutation tests, enumerated exactly whenever that is affordable.

Every comparison's p-value comes from here, so a comparison gets the same p-value whichever
command computes it (``bench faireval`` and ``calibrate`` on the same two settings, say): with k
units (items or clusters) that differ, all 2**k patterns are enumerated when 2**k is at most
``max(resamples, 2**EXACT_UNITS)`` — an exact p-value that no seed or resample count changes —
and ``resamples`` random patterns are drawn beyond that. The statistic is evaluated over chunks
of patterns, so 65,536 patterns of a few hundred items stay within a few megabytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..stats import resample

EXACT_UNITS = 16  # up to 2**16 = 65,536 sign patterns are always enumerated exactly
TOL = np.finfo(float).eps * 100  # relative tolerance for "as extreme as observed" (as scipy's)


def is_exact(k: int, resamples: int) -> bool:
    """Whether k moving units are enumerated exactly (else ``resamples`` random patterns)."""
    return k <= EXACT_UNITS or 2**k <= resamples


def _all_patterns(k: int, start: int, stop: int) -> np.ndarray:
    # Row r is r's binary digits, most significant first (itertools.product's order).
    idx = np.arange(start, stop, dtype=np.int64)
    return ((idx[:, None] >> np.arange(k - 1, -1, -1, dtype=np.int64)) & 1).astype(bool)


def null_values(
    k: int,
    resamples: int,
    rng: np.random.Generator,
    fn: Callable[[np.ndarray], np.ndarray],
    *,
    width: int = 1,
) -> tuple[np.ndarray, bool]:
    """``fn`` over sign patterns of k units (rows of k booleans, True = that unit's two sides
    swapped), as one array, and whether the patterns were every one of the 2**k. ``width`` (the
    items ``fn`` touches per pattern) sizes the chunks."""
    rows = max(1, resample.CHUNK_CELLS // max(width, 1))
    if is_exact(k, resamples):
        total = 2**k
        parts = [fn(_all_patterns(k, s, min(total, s + rows))) for s in range(0, total, rows)]
        return np.concatenate(parts) if parts else np.empty(0), True
    # Drawn a chunk at a time (the same patterns as one (resamples x k) draw): never a float per
    # pattern and unit at once.
    parts = [fn(rng.random((min(rows, resamples - s), k)) < 0.5) for s in range(0, resamples, rows)]
    return np.concatenate(parts), False


def p_two_sided(null: np.ndarray, observed: float, exact: bool) -> float | None:
    """Share of the null distribution at least as far from 0 as observed (the sign-flip and swap
    distributions are symmetric about 0, so this equals scipy's 2 * min(one-sided))."""
    null = null[~np.isnan(null)]
    if not len(null):
        return None
    hits = int((np.abs(null) >= abs(observed) - TOL * abs(observed)).sum())
    # Monte-Carlo: count the observed arrangement itself so p is never 0 (as scipy does).
    return hits / len(null) if exact else (hits + 1) / (len(null) + 1)
