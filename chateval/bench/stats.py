"""Small statistics for reports: percentiles, proportions with intervals, grouped accuracy."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from statistics import mean
from typing import Any


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval for a proportion; None when n == 0."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the ends: rounding put the bound a hair past p (6/6 gave 0.9999999999999999), and
    # an interval that excludes its own estimate breaks error bars (a negative whisker).
    return (0.0 if successes == 0 else max(0.0, centre - half), 1.0 if successes == n else min(1.0, centre + half))


def accuracy_by(
    rows: Iterable[dict[str, Any]],
    group: Callable[[dict[str, Any]], str],
    correct: Callable[[dict[str, Any]], bool | None],
) -> dict[str, dict[str, Any]]:
    """{group: {n, correct, accuracy}} over rows whose verdict is not None."""
    acc: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        c = correct(r)
        if c is not None:
            acc[group(r)].append(bool(c))
    return {g: {"n": len(v), "correct": sum(v), "accuracy": sum(v) / len(v)} for g, v in sorted(acc.items())}


def mean_or_none(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return mean(xs) if xs else None
