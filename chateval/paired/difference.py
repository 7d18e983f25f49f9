"""The two paired comparisons: a mean of per-item values, and a whole-sample statistic."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..stats.resample import bootstrap_values
from .few import inverted_permutation_interval, jackknife_t_interval
from .model import FEW_CLUSTERS, MIN_ITEMS, RESAMPLES, SEED, PairedDifference
from .patterns import null_values, p_two_sided
from .statistics import MIN_FOR, STATISTICS, BatchStatistic

# ---------------------------------------------------------------------------------------------
# Inputs


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _keep(*columns: Sequence[Any]) -> np.ndarray:
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise ValueError(f"paired inputs differ in length ({sorted(lengths)})")
    n = lengths.pop() if lengths else 0
    return np.array([not any(_missing(c[i]) for c in columns) for i in range(n)], dtype=bool)


def _floats(values: Sequence[Any], name: str) -> np.ndarray:
    try:
        return np.array([float(v) for v in values], dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: per-item values must be numbers or booleans") from None


def _cluster_ids(clusters: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    codes: dict[Hashable, int] = {}
    ids = np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=int)
    return ids, len(codes)


def _encode(*columns: Sequence[Any]) -> list[np.ndarray]:
    """Numbers stay numbers; anything else (labels) becomes one shared integer code per value."""
    values = [v for c in columns for v in c]
    if all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        return [np.asarray(c, dtype=float) for c in columns]
    code = {k: i for i, k in enumerate(sorted({str(v) for v in values}))}
    return [np.array([code[str(v)] for v in c], dtype=float) for c in columns]


def _null(metric: str, names: tuple[str, str], n: int, reason: str, **extra: Any) -> PairedDifference:
    return PairedDifference(metric=metric, a=names[0], b=names[1], n=n, reason=reason, **extra)


def _percentile_ci(values: np.ndarray) -> tuple[float, float] | None:
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def _test_name(base: str, clustered: bool, exact: bool) -> str:
    return f"{'cluster_' if clustered else ''}{base}_{'exact' if exact else 'mc'}"


# ---------------------------------------------------------------------------------------------
# Mean of per-item values


def _mcnemar_p(a: np.ndarray, b: np.ndarray) -> float:
    """McNemar's exact test, as statsmodels' ``mcnemar(table, exact=True)``: the discordant counts
    follow Binomial(b + c, 1/2) under the null; p = min(1, 2 * P(X <= min(b, c))). Summed in exact
    integers (the tests compare with statsmodels), so the judge install needs no statsmodels."""
    only_a = int(((a == 1) & (b == 0)).sum())
    only_b = int(((a == 0) & (b == 1)).sum())
    n, k = only_a + only_b, min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**n)


def paired_difference(
    a: Sequence[float | bool | None],
    b: Sequence[float | bool | None],
    *,
    names: tuple[str, str] = ("A", "B"),
    metric: str = "accuracy",
    clusters: Sequence[Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> PairedDifference:
    """The difference of the means of per-item values, ``mean(a) - mean(b)``, on the same items.

    ``a[i]`` and ``b[i]`` belong to item i; an item with None (or NaN) on either side is dropped
    from both. With ``clusters`` (one id per item) the bootstrap draws whole clusters and the
    statistic is the pooled mean over the drawn clusters' items; the permutation test flips each
    cluster's summed difference as one. 0/1 values without clusters get McNemar's exact test
    (statsmodels), which only the discordant items move; anything else a sign-flip permutation
    test of the mean difference."""
    if clusters is not None and len(clusters) != len(a):
        raise ValueError(f"clusters has {len(clusters)} ids for {len(a)} items")
    keep = _keep(a, b)
    xa = _floats([v for v, k in zip(a, keep) if k], names[0])
    xb = _floats([v for v, k in zip(b, keep) if k], names[1])
    n = len(xa)
    base = dict(resamples=resamples, seed=seed)
    if n == 0:
        return _null(metric, names, 0, "no items with a value on both sides", **base)
    value_a, value_b = float(xa.mean()), float(xb.mean())
    out = dict(
        metric=metric, a=names[0], b=names[1], n=n, value_a=value_a, value_b=value_b, diff=value_a - value_b, **base
    )
    d = xa - xb
    rng = np.random.default_rng(seed)
    if clusters is not None:
        ids, n_clusters = _cluster_ids([c for c, k in zip(clusters, keep) if k])
        out["n_clusters"] = n_clusters
        if n_clusters < MIN_ITEMS:
            return PairedDifference(**out, reason=f"{n_clusters} cluster: an interval needs at least {MIN_ITEMS}")
        sums = np.bincount(ids, weights=d, minlength=n_clusters)
        counts = np.bincount(ids, minlength=n_clusters).astype(float)
        if n_clusters < FEW_CLUSTERS:
            # Few clusters: the interval is the inverted exact test, and the p its value at 0.
            ci, p0, exact, why = inverted_permutation_interval(sums, counts, resamples=resamples, rng=rng)
            return PairedDifference(
                **out,
                ci95=ci,
                interval="inverted_permutation" if ci else None,
                p_value=p0,
                test=_test_name("permutation", True, exact),
                reason=why,
            )
        boots = bootstrap_values(
            rng, n_clusters, resamples, n_clusters, lambda pick: sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
        )
        units = sums
    else:
        if n < MIN_ITEMS:
            return PairedDifference(**out, reason=f"{n} item: an interval needs at least {MIN_ITEMS}")
        boots = bootstrap_values(rng, n, resamples, n, lambda pick: d[pick].mean(axis=1))
        units = d
    out["ci95"] = _percentile_ci(boots)
    out["interval"] = "percentile_bootstrap"
    out["resamples_used"] = resamples
    binary = bool(np.isin(xa, (0.0, 1.0)).all() and np.isin(xb, (0.0, 1.0)).all())
    if binary and clusters is None:
        return PairedDifference(**out, p_value=_mcnemar_p(xa, xb), test="mcnemar_exact")
    # Units whose difference is 0 do not move the statistic under a flip: enumerate only the rest.
    moving = units[units != 0]
    null, exact = null_values(
        len(moving), resamples, rng, lambda signs: np.where(signs, -moving, moving).sum(axis=1) / n, width=len(moving)
    )
    p = p_two_sided(null, float(d.sum() / n), exact)
    return PairedDifference(**out, p_value=p, test=_test_name("permutation", clusters is not None, exact))


def _stat_rows(stat: BatchStatistic, gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
    return np.asarray(stat(gold, pred), dtype=float).reshape(len(gold))


def _jackknife(
    stat: BatchStatistic, g: np.ndarray, pa: np.ndarray, pb: np.ndarray, ids: np.ndarray, k: int, diff: float
) -> tuple[float, float] | None:
    """The delete-one-cluster jackknife t interval of the difference (few clusters)."""
    loo = np.empty(k)
    for c in range(k):
        keep = ids != c
        loo[c] = (_stat_rows(stat, g[keep][None], pa[keep][None]) - _stat_rows(stat, g[keep][None], pb[keep][None]))[0]
    return jackknife_t_interval(diff, loo)


def _undefined_reason(
    metric: str, names: tuple[str, str], g: np.ndarray, pa: np.ndarray, pb: np.ndarray, va: float, vb: float
) -> str:
    bad = [name for name, v in zip(names, (va, vb)) if math.isnan(v)]
    if len(set(g.tolist())) == 1:
        return f"{metric} undefined: the reference is constant on these items"
    for name, p in zip(names, (pa, pb)):
        if name in bad and len(set(p.tolist())) == 1:
            return f"{metric} undefined for {name}: every prediction is the same"
    return f"{metric} undefined for {' and '.join(bad)} on these items"


def paired_metric_difference(
    gold: Sequence[Any],
    pred_a: Sequence[Any],
    pred_b: Sequence[Any],
    statistic: str | BatchStatistic,
    *,
    names: tuple[str, str] = ("A", "B"),
    metric: str | None = None,
    clusters: Sequence[Hashable] | None = None,
    min_items: int | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> PairedDifference:
    """``statistic(gold, pred_a) - statistic(gold, pred_b)`` for a whole-sample statistic.

    ``statistic`` is a name in :data:`STATISTICS` ("accuracy", "kappa", "spearman", "kendall")
    or a :data:`BatchStatistic` (wrap a one-sample function with :func:`per_resample`). Items
    with None on any of the three columns are dropped. Labels (anything but numbers) are coded
    to integers shared by the three columns. The bootstrap applies one index vector per resample
    to gold and both predictions (with ``clusters``: whole clusters); resamples in which either
    side is undefined are skipped (``resamples_used``). The p-value is a paired permutation test
    swapping pred_a and pred_b per item (per cluster), exact when few items differ."""
    if isinstance(statistic, str):
        if statistic not in STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r}; known: {', '.join(STATISTICS)}")
        metric = metric or statistic
        min_items = min_items or MIN_FOR.get(statistic, MIN_ITEMS)
        statistic = STATISTICS[statistic]()
    metric = metric or "statistic"
    min_items = max(min_items or MIN_ITEMS, MIN_ITEMS)
    if clusters is not None and len(clusters) != len(gold):
        raise ValueError(f"clusters has {len(clusters)} ids for {len(gold)} items")
    keep = _keep(gold, pred_a, pred_b)
    cols = [[v for v, k in zip(c, keep) if k] for c in (gold, pred_a, pred_b)]
    n = len(cols[0])
    base = dict(resamples=resamples, seed=seed)
    if n == 0:
        return _null(metric, names, 0, "no items with a reference and both predictions", **base)
    g, pa, pb = _encode(*cols)
    ids: np.ndarray | None = None
    n_clusters: int | None = None
    if clusters is not None:
        ids, n_clusters = _cluster_ids([c for c, k in zip(clusters, keep) if k])
    if n < min_items:
        return _null(metric, names, n, f"{n} items: {metric} needs at least {min_items}", n_clusters=n_clusters, **base)
    va = float(_stat_rows(statistic, g[None], pa[None])[0])
    vb = float(_stat_rows(statistic, g[None], pb[None])[0])
    out: dict[str, Any] = dict(metric=metric, a=names[0], b=names[1], n=n, n_clusters=n_clusters, **base)
    if math.isnan(va) or math.isnan(vb):
        return PairedDifference(
            **out,
            value_a=None if math.isnan(va) else va,
            value_b=None if math.isnan(vb) else vb,
            reason=_undefined_reason(metric, names, g, pa, pb, va, vb),
        )
    out.update(value_a=va, value_b=vb, diff=va - vb)
    if n_clusters is not None and n_clusters < MIN_ITEMS:
        return PairedDifference(**out, reason=f"{n_clusters} cluster: an interval needs at least {MIN_ITEMS}")
    rng = np.random.default_rng(seed)

    # Bootstrap: the same index vector for gold and both predictions.
    def diff_rows(pick: np.ndarray) -> np.ndarray:
        return _stat_rows(statistic, g[pick], pa[pick]) - _stat_rows(statistic, g[pick], pb[pick])

    if ids is None:
        boots = bootstrap_values(rng, n, resamples, n, diff_rows)
    else:
        # Whole clusters drawn. Equal-sized clusters give equal-length resamples, evaluated as one
        # batch; otherwise resamples differ in length and are evaluated one at a time.
        assert n_clusters is not None  # set together with ids
        members = [np.flatnonzero(ids == c) for c in range(n_clusters)]
        if len({len(m) for m in members}) == 1:
            stacked = np.stack(members)
            boots = bootstrap_values(
                rng,
                n_clusters,
                resamples,
                n_clusters,
                lambda draws: diff_rows(stacked[draws].reshape(len(draws), -1)),
                width=n,
            )
        else:

            def one_by_one(draws: np.ndarray) -> np.ndarray:
                out = np.empty(len(draws))
                for r, row in enumerate(draws):
                    idx = np.concatenate([members[c] for c in row])[None]
                    out[r] = _stat_rows(statistic, g[idx], pa[idx])[0] - _stat_rows(statistic, g[idx], pb[idx])[0]
                return out

            boots = bootstrap_values(rng, n_clusters, resamples, n_clusters, one_by_one)
    used = int((~np.isnan(boots)).sum())
    out.update(ci95=_percentile_ci(boots), interval="percentile_bootstrap", resamples_used=used)
    if n_clusters is not None and n_clusters < FEW_CLUSTERS:
        assert ids is not None
        out.update(ci95=_jackknife(statistic, g, pa, pb, ids, n_clusters, va - vb), interval="cluster_jackknife_t")

    # Permutation: swap the two sides' predictions in a random (or every) subset of units.
    unit = np.arange(n) if ids is None else ids
    differs = np.bincount(unit, weights=(pa != pb).astype(float)) > 0
    moving = np.flatnonzero(differs)

    def swapped(swaps: np.ndarray) -> np.ndarray:
        mask = np.zeros((len(swaps), int(unit.max()) + 1), dtype=bool)
        mask[:, moving] = swaps
        mask = mask[:, unit]  # unit -> item
        sa, sb = np.where(mask, pb, pa), np.where(mask, pa, pb)
        gg = np.broadcast_to(g, sa.shape)
        return _stat_rows(statistic, gg, sa) - _stat_rows(statistic, gg, sb)

    null, exact = null_values(len(moving), resamples, rng, swapped, width=n)
    p = p_two_sided(null, va - vb, exact)
    return PairedDifference(
        **out,
        p_value=p,
        test=_test_name("permutation", ids is not None, exact),
        reason=None if used else "the difference was undefined in every resample",
    )
