"""Statistics of rejudging: accuracy with intervals clustered by conversation, Wilson intervals
per category, agreement between two judges (Cohen's kappa, cluster bootstrap; the paired
difference through ``chateval.paired``), rank agreement across sets (Kendall's tau with a
bootstrap interval), and acceptance against answer length.

Every bootstrap draws whole conversations (the questions of one conversation share its memory),
from ``numpy.random.default_rng(seed)``: a rerun gives the same intervals."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from ..bench.stats import wilson
from ..paired import paired_difference
from ..stats.agreement import cohen_kappa
from .records import Kappa, LengthEffect, RankAgreement, Rate


def _clusters(clusters: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    codes: dict[Hashable, int] = {}
    return np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=int), len(codes)


def _draw(ids: np.ndarray, k: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, k) cluster picks."""
    return rng.integers(0, k, size=(resamples, k))


def _ci(values: np.ndarray) -> tuple[float, float] | None:
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def cluster_mean(
    values: Sequence[float], clusters: Sequence[Hashable], *, resamples: int, seed: int
) -> tuple[float | None, tuple[float, float] | None]:
    """The mean of per-item values and its 95% interval, conversations resampled whole."""
    if not values:
        return None, None
    x = np.asarray(values, dtype=float)
    ids, k = _clusters(clusters)
    if k < 2:
        return float(x.mean()), None
    sums = np.bincount(ids, weights=x, minlength=k)
    counts = np.bincount(ids, minlength=k).astype(float)
    pick = _draw(ids, k, resamples, np.random.default_rng(seed))
    return float(x.mean()), _ci(sums[pick].sum(axis=1) / counts[pick].sum(axis=1))


def rate(accepted: Sequence[bool], value: Sequence[float] | None = None) -> Rate:
    """A proportion with its 95% Wilson interval (``mean``: the mean per-item value, e.g. the
    per-run mean of recorded verdicts, beside the verdicts' rate)."""
    n, k = len(accepted), int(sum(accepted))
    return Rate(
        n=n,
        accepted=k,
        rate=k / n if n else None,
        wilson95=wilson(k, n),
        mean=float(np.mean(value)) if value is not None and len(value) else None,
    )


def kappa(a: Sequence[bool], b: Sequence[bool], clusters: Sequence[Hashable], *, resamples: int, seed: int) -> Kappa:
    """Cohen's kappa of two judges' verdicts on the same items, with a cluster-bootstrap interval."""
    k = cohen_kappa(list(a), list(b), [False, True])
    out = Kappa(n=len(a), value=k["value"], reason=k["reason"], agreement=float(np.mean(np.equal(a, b))) if a else None)
    if k["value"] is None or len(a) < 2:
        return out
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ids, n_c = _clusters(clusters)
    rng = np.random.default_rng(seed)
    # Per cluster: counts of (a, b) in each of the four cells; a resample sums its clusters' counts.
    cells = np.stack([np.bincount(ids, weights=(xa == i) & (xb == j), minlength=n_c) for i in (0, 1) for j in (0, 1)])
    pick = _draw(ids, n_c, resamples, rng)
    c = cells[:, pick].sum(axis=2)  # (4, resamples)
    m = c.sum(axis=0)
    po = (c[0] + c[3]) / m
    pa1, pb1 = (c[2] + c[3]) / m, (c[1] + c[3]) / m
    pe = pa1 * pb1 + (1 - pa1) * (1 - pb1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ks = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
    out.ci95 = _ci(ks)
    return out


def difference(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable],
    names: tuple[str, str],
    *,
    resamples: int,
    seed: int,
) -> dict[str, object]:
    """The paired difference of two judges' acceptance on the same items (chateval.paired)."""
    d = paired_difference(a, b, names=names, metric="accepted", clusters=clusters, resamples=resamples, seed=seed)
    return d.model_dump(mode="json")


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two score lists (None when either is constant or too short)."""
    n = len(x)
    if n < 2:
        return None
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif dx == dy:
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else None


def rank_agreement(
    judges: tuple[str, str],
    per_set: dict[str, tuple[list[float], list[float], list[Hashable]]],
    *,
    resamples: int,
    seed: int,
) -> RankAgreement:
    """Kendall's tau between the sets' scores under two judges; the interval resamples each set's
    conversations (both judges together) and recomputes every set's score."""
    names = list(per_set)
    sa = [float(np.mean(per_set[s][0])) for s in names]
    sb = [float(np.mean(per_set[s][1])) for s in names]
    out = RankAgreement(a=judges[0], b=judges[1], sets=names, n_sets=len(names), tau=kendall_tau(sa, sb))
    if out.tau is None or len(names) < 2:
        out.reason = "needs at least two sets whose scores differ under both judges"
        return out
    rng = np.random.default_rng(seed)
    boots_a: list[np.ndarray] = []
    boots_b: list[np.ndarray] = []
    for s in names:
        a, b, cl = per_set[s]
        ids, k = _clusters(cl)
        pick = _draw(ids, k, min(resamples, 1000), rng)
        cnt = np.bincount(ids, minlength=k).astype(float)
        for vals, acc in ((a, boots_a), (b, boots_b)):
            sums = np.bincount(ids, weights=np.asarray(vals, dtype=float), minlength=k)
            acc.append(sums[pick].sum(axis=1) / cnt[pick].sum(axis=1))
    ba, bb = np.stack(boots_a, axis=1), np.stack(boots_b, axis=1)
    taus = np.array([t if (t := kendall_tau(ba[r], bb[r])) is not None else np.nan for r in range(len(ba))])
    out.ci95 = _ci(taus)
    out.resamples = len(ba)
    return out


BINS = (0, 5, 10, 20, 40)  # answer length in words: [0,5), [5,10), ... , [40, inf)


def length_effect(
    accepted: Sequence[bool], words: Sequence[int], clusters: Sequence[Hashable], *, resamples: int, seed: int
) -> LengthEffect:
    """Acceptance against answer length: the least-squares slope of acceptance on log2(words)
    (change in acceptance per doubling of the answer's length) with a cluster-bootstrap
    interval, and the acceptance rate per length bin."""
    y = np.asarray(accepted, dtype=float)
    x = np.log2(np.maximum(np.asarray(words, dtype=float), 1.0))
    bins = {}
    edges = list(BINS) + [math.inf]
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (np.asarray(words) >= lo) & (np.asarray(words) < hi)
        label = f"{lo}-{hi - 1:g}" if hi != math.inf else f"{lo}+"
        bins[label] = rate([bool(v) for v in y[m]])
    out = LengthEffect(n=len(y), median_words=float(np.median(words)) if len(y) else None, bins=bins)
    if len(y) < 3 or np.var(x) == 0:
        out.reason = "too few items or every answer of one length"
        return out
    out.slope_per_doubling = float(np.polyfit(x, y, 1)[0])
    ids, k = _clusters(clusters)
    if k < 2:
        return out
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(ids == c) for c in range(k)]
    slopes = []
    for row in _draw(ids, k, min(resamples, 1000), rng):
        idx = np.concatenate([members[c] for c in row])
        xs, ys = x[idx], y[idx]
        slopes.append(np.polyfit(xs, ys, 1)[0] if np.var(xs) > 0 else np.nan)
    out.ci95 = _ci(np.asarray(slopes, dtype=float))
    return out
