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
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

MIN_PAIRS = 3  # a rank correlation of two points is always +-1: not a measurement
KAPPA_RESAMPLES = 1000  # bootstrap resamples behind a kappa interval
KAPPA_SEED = 0  # fixed, so a rerun over the same verdicts reports the same interval


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


def cohen_kappa(
    gold: Sequence[Hashable | None], pred: Sequence[Hashable | None], labels: Sequence[Hashable]
) -> dict[str, Any]:
    """Cohen's kappa over the given label set, unweighted: (p_o - p_e) / (1 - p_e), as scikit-learn's
    cohen_kappa_score computes it (the tests compare the two). Computed here from integer counts:
    importing scikit-learn for one kappa cost the demo about 40% of its wall time."""
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
    return {"value": _kappa(g, p, labels), "n": len(g), "reason": None}


def _kappa(g: list[Any], p: list[Any], labels: Sequence[Hashable]) -> float:
    """(n * agreed - chance) / (n^2 - chance), where chance sums the products of the two raters'
    per-label counts: exact integers until the one division."""
    n = len(g)
    agreed = sum(1 for a, b in zip(g, p) if a == b)
    cg, cp = Counter(g), Counter(p)
    chance = sum(cg[label] * cp[label] for label in labels)
    return (n * agreed - chance) / (n * n - chance)


def kappa_ci95(
    gold: Sequence[Hashable | None],
    pred: Sequence[Hashable | None],
    labels: Sequence[Hashable],
    *,
    resamples: int = KAPPA_RESAMPLES,
    seed: int = KAPPA_SEED,
) -> dict[str, Any]:
    """95% percentile-bootstrap interval of Cohen's kappa over items (pairs resampled together).

    The indices are the rows of one (resamples, n) draw from ``numpy.random.default_rng(seed)``,
    drawn and evaluated a chunk of rows at a time (:func:`chateval.stats.resample.bootstrap_values`:
    the same rows; at 10,000 items the whole matrix and its gathered labels took over 200 MB);
    a resample in which kappa is undefined (both raters used one and the same label) is skipped,
    and ``used`` counts the rest. ``ci95`` is None when fewer than 2 pairs, kappa itself is
    undefined, or no resample was usable. Kappa is computed here in closed form,
    (p_o - p_e) / (1 - p_e), vectorised over resamples: 1000 calls of scikit-learn's
    cohen_kappa_score would take about a second per setting."""
    import numpy as np

    from .resample import bootstrap_values

    g, p = paired(gold, pred)
    out: dict[str, Any] = {"ci95": None, "resamples": resamples, "used": 0, "seed": seed}
    if len(g) < 2 or cohen_kappa(g, p, labels)["value"] is None:
        return out
    code = {str(v): i for i, v in enumerate(labels)}
    gi, pi = np.array([code[str(v)] for v in g]), np.array([code[str(v)] for v in p])
    n, k = len(g), len(labels)

    def kappas_of(pick: np.ndarray) -> np.ndarray:
        gs, ps = gi[pick], pi[pick]
        agree = (gs == ps).sum(axis=1)
        # Chance agreement from the per-label counts, in integers: p_e = 1 exactly when undefined.
        counts_g = np.stack([(gs == c).sum(axis=1) for c in range(k)], axis=1)
        counts_p = np.stack([(ps == c).sum(axis=1) for c in range(k)], axis=1)
        chance = (counts_g * counts_p).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(chance < n * n, (n * agree - chance) / (n * n - chance), np.nan)

    kappas = bootstrap_values(np.random.default_rng(seed), n, resamples, n, kappas_of)
    kappas = kappas[~np.isnan(kappas)]
    out["used"] = int(len(kappas))
    if out["used"]:
        lo, hi = np.percentile(kappas, [2.5, 97.5])
        out["ci95"] = [float(lo), float(hi)]
    return out


def _constant(values: list[float]) -> bool:
    return max(values) - min(values) == 0


def _correlation(kind: str, x: Sequence[Any], y: Sequence[Any], x_name: str, y_name: str) -> dict[str, Any]:
    a, b = paired(x, y)
    a, b = [float(v) for v in a], [float(v) for v in b]
    if len(a) < MIN_PAIRS:
        return _null(len(a), f"fewer than {MIN_PAIRS} pairs with both values", p_value=None)
    for name, vals in ((x_name, a), (y_name, b)):
        if _constant(vals):
            return _null(len(a), f"undefined: {name} is constant (every value is {vals[0]:g})", p_value=None)
    try:
        from scipy import stats
    except ImportError:
        # The judge's core install has no scipy: the statistic is reported as unavailable, naming
        # the extra, instead of failing a finished run's summary.
        return _null(len(a), "not computed: Spearman/Kendall need scipy: pip install 'chateval[stats]'", p_value=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(a, b) if kind == "spearman" else stats.kendalltau(a, b)  # tau-b
    value, p = float(res.statistic), float(res.pvalue)
    if math.isnan(value):  # defensive: scipy returns NaN for degenerate input we did not foresee
        return _null(len(a), "undefined for this input (scipy returned NaN)", p_value=None)
    return {"value": value, "n": len(a), "reason": None, "p_value": None if math.isnan(p) else p}


def spearman(
    x: Sequence[Any], y: Sequence[Any], *, x_name: str = "the metric", y_name: str = "the human score"
) -> dict[str, Any]:
    return _correlation("spearman", x, y, x_name, y_name)


def kendall(
    x: Sequence[Any], y: Sequence[Any], *, x_name: str = "the metric", y_name: str = "the human score"
) -> dict[str, Any]:
    """Kendall's tau-b (scipy's default), which accounts for ties in either input."""
    return _correlation("kendall", x, y, x_name, y_name)


def correlations(x: Sequence[Any], y: Sequence[Any], **names: str) -> dict[str, dict[str, Any]]:
    return {"spearman": spearman(x, y, **names), "kendall": kendall(x, y, **names)}


def confusion(
    gold: Sequence[Hashable | None], pred: Sequence[Hashable | None], labels: Sequence[Hashable]
) -> dict[str, dict[str, int]]:
    """{gold label: {predicted label: count}} over pairs where both are known."""
    g, p = paired(gold, pred)
    out = {str(a): {str(b): 0 for b in labels} for a in labels}
    for a, b in zip(g, p):
        out[str(a)][str(b)] += 1
    return out


def baselines(gold: list[Any], pred: list[Any], labels: list[Any]) -> dict[str, Any]:
    """What an accuracy is read against: always answering the most frequent label
    (``majority_baseline``), and ``chance``: the agreement expected if verdicts were drawn
    independently of the items with their observed mix (what Cohen's kappa subtracts), beside
    1/k for k labels."""
    n = len(gold)
    g, p = Counter(gold), Counter(pred)
    label, count = g.most_common(1)[0]
    return {
        "majority_baseline": {"label": label, "value": count / n, "n": n},
        "chance": {"value": sum(g[k] * p[k] for k in g) / (n * n), "uniform": 1 / len(labels), "k": len(labels)},
    }


def baseline_text(agr: dict[str, Any]) -> str:
    """'majority label 'x' alone: 60.0%; chance 48.0% (1/2 = 50.0%)', or '' before this was recorded."""
    maj, chance = agr.get("majority_baseline"), agr.get("chance")
    if not maj or not chance:
        return ""
    label = {True: "correct", False: "incorrect"}.get(maj["label"], maj["label"])
    return (
        f"always answering the majority label '{label}': {100 * maj['value']:.1f}%; chance agreement "
        f"{100 * chance['value']:.1f}% (verdict and label mixes independent; 1/{chance['k']} = "
        f"{100 * chance['uniform']:.1f}%)"
    )
