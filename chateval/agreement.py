"""Agreement statistics for judge meta-evaluation: accuracy, Cohen's kappa, Spearman's rho and
Kendall's tau (tau-b, which corrects for ties).

Every function returns a plain dict ``{"value", "n", "reason", ...}``. When a statistic is
undefined (no pairs, a constant input, a single shared label) ``value`` is ``None`` and
``reason`` says why — never NaN, which JSON cannot hold and tables would print as a number.
Pairs where either side is None or NaN are dropped first; ``n`` counts the pairs used.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Hashable, Sequence

MIN_PAIRS = 3  # a rank correlation of two points is always +-1: not a measurement


def _finite(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def paired(x: Sequence[Any], y: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    if len(x) != len(y):
        raise ValueError(f"paired inputs differ in length ({len(x)} vs {len(y)})")
    keep = [(a, b) for a, b in zip(x, y) if _finite(a) and _finite(b)]
    return [a for a, _ in keep], [b for _, b in keep]


def _null(n: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {"value": None, "n": n, "reason": reason, **extra}


def accuracy(gold: Sequence[Hashable | None], pred: Sequence[Hashable | None]) -> dict[str, Any]:
    g, p = paired(gold, pred)
    if not g:
        return _null(0, "no judged items with a label", correct=0)
    correct = sum(1 for a, b in zip(g, p) if a == b)
    return {"value": correct / len(g), "n": len(g), "reason": None, "correct": correct}


def cohen_kappa(gold: Sequence[Hashable | None], pred: Sequence[Hashable | None],
                labels: Sequence[Hashable]) -> dict[str, Any]:
    """Cohen's kappa over the given label set (scikit-learn's cohen_kappa_score, unweighted)."""
    from sklearn.metrics import cohen_kappa_score

    g, p = paired(gold, pred)
    if not g:
        return _null(0, "no judged items with a label")
    unknown = sorted({str(v) for v in g + p} - {str(v) for v in labels})
    if unknown:
        raise ValueError(f"labels outside {list(labels)}: {unknown}")
    used = set(g) | set(p)
    if len(used) == 1:
        # Expected agreement is 1, so kappa is 0/0.
        return _null(len(g), f"undefined: both raters gave every item the same label ({next(iter(used))!r})")
    return {"value": float(cohen_kappa_score(g, p, labels=list(labels))), "n": len(g), "reason": None}


def _constant(values: list[float]) -> bool:
    return max(values) - min(values) == 0


def _correlation(kind: str, x: Sequence[Any], y: Sequence[Any], x_name: str, y_name: str) -> dict[str, Any]:
    from scipy import stats

    a, b = paired(x, y)
    a, b = [float(v) for v in a], [float(v) for v in b]
    if len(a) < MIN_PAIRS:
        return _null(len(a), f"fewer than {MIN_PAIRS} pairs with both values", p_value=None)
    for name, vals in ((x_name, a), (y_name, b)):
        if _constant(vals):
            return _null(len(a), f"undefined: {name} is constant (every value is {vals[0]:g})", p_value=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(a, b) if kind == "spearman" else stats.kendalltau(a, b)  # tau-b
    value, p = float(res.statistic), float(res.pvalue)
    if math.isnan(value):  # defensive: scipy returns NaN for degenerate input we did not foresee
        return _null(len(a), "undefined for this input (scipy returned NaN)", p_value=None)
    return {"value": value, "n": len(a), "reason": None, "p_value": None if math.isnan(p) else p}


def spearman(x: Sequence[Any], y: Sequence[Any], *, x_name: str = "the metric", y_name: str = "the human score") -> dict[str, Any]:
    return _correlation("spearman", x, y, x_name, y_name)


def kendall(x: Sequence[Any], y: Sequence[Any], *, x_name: str = "the metric", y_name: str = "the human score") -> dict[str, Any]:
    """Kendall's tau-b (scipy's default), which accounts for ties in either input."""
    return _correlation("kendall", x, y, x_name, y_name)


def correlations(x: Sequence[Any], y: Sequence[Any], **names: str) -> dict[str, dict[str, Any]]:
    return {"spearman": spearman(x, y, **names), "kendall": kendall(x, y, **names)}


def confusion(gold: Sequence[Hashable | None], pred: Sequence[Hashable | None],
              labels: Sequence[Hashable]) -> dict[str, dict[str, int]]:
    """{gold label: {predicted label: count}} over pairs where both are known."""
    g, p = paired(gold, pred)
    out = {str(a): {str(b): 0 for b in labels} for a in labels}
    for a, b in zip(g, p):
        out[str(a)][str(b)] += 1
    return out
