"""Agreement of a setting's verdicts with the human reference, with 95% percentile-bootstrap
intervals over items, the paired difference of each setting from the baseline (chateval.paired)
and the annotators' own agreement (the ceiling).

Labels (pairwise, correctness): accuracy (a verdict-less item, e.g. a split correctness panel,
counts as a miss) and Cohen's kappa (such items left out). Scores: Spearman's rho and Kendall's
tau-b between the judge's score and the annotators' mean; with aspects, per aspect and averaged
over the aspects (the number reported, as `bench topical-chat`'s avg columns). Items are the
records with status ok and a usable reference; pairs of settings use the items both judged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..debate.tasks import get_task

__all__ = ["Items", "aspects_of", "ceiling", "paired_vs", "predicted", "setting_agreement"]
from ..paired import STATISTICS, BatchStatistic, PairedDifference, paired_difference, paired_metric_difference
from ..stats.resample import bootstrap_values
from .records import Stat

LABEL_METRICS = ("accuracy", "kappa")
SCORE_METRICS = ("spearman", "kendall")
MIN_ITEMS = {"accuracy": 1, "kappa": 2, "spearman": 3, "kendall": 3}


# --- what each record says ----------------------------------------------------------------
def predicted(task: str, rec: dict[str, Any]) -> Any:
    """A record's verdict as its task format compares it: a class, or {aspect: score}."""
    return get_task(task).prediction(rec.get("verdict") or {})


def aspects_of(references: Sequence[Any]) -> list[str]:
    """Score aspects with a human reference: the dict keys, or ``score`` for number labels."""
    keys = sorted({a for r in references if isinstance(r, dict) for a in r})
    return keys or ["score"]


def _score_vector(value: Any, aspects: list[str]) -> list[float] | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = {"score": float(value)}
    if not isinstance(value, dict) or any(value.get(a) is None for a in aspects):
        return None
    return [float(value[a]) for a in aspects]


class Items:
    """The items of a calibration: id -> human reference, in input order; ``clusters`` (id ->
    cluster) when items are not independent (Topical-Chat: the six responses to one context; a
    user's ``cluster`` field): every bootstrap then draws whole clusters and the paired tests
    permute them whole."""

    def __init__(self, task: str, labels: dict[str, Any], clusters: dict[str, Any] | None = None) -> None:
        self.task = task
        self.format = get_task(task)
        # Verdicts that name a class are compared by accuracy and kappa; scores by rank correlation.
        self.scored = not self.format.classes
        self.raw = labels
        self.clusters = clusters
        self.reference = {i: self.format.reference(lab) for i, lab in labels.items()}
        self.reference = {i: r for i, r in self.reference.items() if r is not None}
        self.aspects = aspects_of(list(self.reference.values())) if self.scored else []

    def gold(self, ids: Sequence[str]) -> list[Any]:
        return [self.reference[i] for i in ids]

    def cluster_of(self, ids: Sequence[str]) -> list[Any] | None:
        return None if self.clusters is None else [self.clusters.get(i, i) for i in ids]


def _boots(
    stat: Callable[..., np.ndarray],
    gold: np.ndarray,
    pred: np.ndarray,
    clusters: list[Any] | None,
    resamples: int,
    seed: int,
) -> np.ndarray:
    """The statistic over bootstrap draws of the n items: item by item, or whole clusters. Drawn
    and evaluated a chunk of resamples at a time (``chateval.paired``'s ``bootstrap_values``: the
    same draws as one (resamples x items) matrix, never held whole)."""
    rng = np.random.default_rng(seed)
    n = len(gold)

    def batch(draws: np.ndarray) -> np.ndarray:
        return np.asarray(stat(gold[draws], pred[draws]), dtype=float)

    if clusters is None:
        return bootstrap_values(rng, n, resamples, n, batch)
    codes: dict[Any, int] = {}
    ids = np.array([codes.setdefault(c, len(codes)) for c in clusters])
    members = [np.flatnonzero(ids == c) for c in range(len(codes))]

    def whole_clusters(rows: np.ndarray) -> np.ndarray:
        draws = [np.concatenate([members[c] for c in row]) for row in rows]
        if len({len(d) for d in draws}) == 1:  # equal lengths (equal-sized clusters): one batch
            return batch(np.stack(draws))
        return np.array([float(np.asarray(stat(gold[d][None], pred[d][None]))[0]) for d in draws])

    return bootstrap_values(rng, len(codes), resamples, len(codes), whole_clusters, width=n)


# --- statistics -----------------------------------------------------------------------------
def aspect_statistic(kind: str, human: np.ndarray, preds: np.ndarray) -> BatchStatistic:
    """A rank correlation (chateval.paired's Spearman or Kendall tau-b) averaged over aspects, as a
    batch statistic over *item indices*: gold holds the item's row in ``human`` (n, k), pred its
    row in ``preds`` (m, k). One index vector thus resamples every aspect of an item together."""
    corr = STATISTICS[kind]()

    def stat(gold: np.ndarray, pred: np.ndarray) -> np.ndarray:
        g, p = gold.astype(int), pred.astype(int)
        per = [corr(human[:, a][g], preds[:, a][p]) for a in range(human.shape[1])]
        return np.mean(per, axis=0)  # NaN in any aspect: the average is undefined there

    return stat


def _bootstrap(
    stat: BatchStatistic,
    gold: np.ndarray,
    pred: np.ndarray,
    *,
    metric: str,
    resamples: int,
    seed: int,
    clusters: list[Any] | None = None,
    what: str = "items",
) -> Stat:
    n = len(gold)
    if n < MIN_ITEMS[metric]:
        return Stat(value=None, n=n, reason=f"{n} {what}: {metric} needs at least {MIN_ITEMS[metric]}")
    value = float(np.asarray(stat(gold[None], pred[None]))[0])
    if math.isnan(value):
        return Stat(value=None, n=n, reason=f"{metric} undefined on these {what} (a constant side)")
    boots = _boots(stat, gold, pred, clusters, resamples, seed)
    boots = boots[~np.isnan(boots)]
    ci = [float(x) for x in np.percentile(boots, [2.5, 97.5])] if len(boots) else None
    return Stat(value=value, ci95=ci, n=n)


def _codes(*columns: Sequence[Any]) -> list[np.ndarray]:
    code = {k: i for i, k in enumerate(sorted({str(v) for c in columns for v in c}))}
    return [np.array([code[str(v)] for v in c], dtype=float) for c in columns]


def setting_agreement(items: Items, preds: dict[str, Any], *, resamples: int, seed: int) -> dict[str, Stat]:
    """This setting's agreement with the reference over its judged items (``preds``: id -> verdict)."""
    ids = [i for i in items.reference if i in preds]
    if not items.scored:
        gold = items.gold(ids)
        pred = ["none" if preds[i] is None else preds[i] for i in ids]  # no verdict: a miss
        g, p = _codes(gold, pred)
        out = {
            "accuracy": _bootstrap(
                STATISTICS["accuracy"](),
                g,
                p,
                metric="accuracy",
                resamples=resamples,
                seed=seed,
                clusters=items.cluster_of(ids),
            )
        }
        kept = [i for i in ids if preds[i] is not None]
        g, p = _codes(items.gold(kept), [preds[i] for i in kept])
        out["kappa"] = _bootstrap(
            STATISTICS["kappa"](), g, p, metric="kappa", resamples=resamples, seed=seed, clusters=items.cluster_of(kept)
        )
        return out
    kept, human, mine = _score_rows(items, {"x": preds}, ids)
    idx = np.arange(len(human), dtype=float)
    return {
        k: _bootstrap(
            aspect_statistic(k, human, mine["x"]),
            idx,
            idx,
            metric=k,
            resamples=resamples,
            seed=seed,
            clusters=items.cluster_of(kept),
        )
        for k in SCORE_METRICS
    }


def _score_rows(
    items: Items, preds: dict[str, dict[str, Any]], ids: list[str]
) -> tuple[list[str], np.ndarray, dict[str, np.ndarray]]:
    """Human and predicted score rows over the ids every setting scored on every aspect."""
    keep = []
    for i in ids:
        h = _score_vector(items.reference[i], items.aspects)
        ps = [_score_vector(p.get(i), items.aspects) for p in preds.values()]
        if h is not None and all(v is not None for v in ps):
            keep.append(i)
    human = np.array([_score_vector(items.reference[i], items.aspects) for i in keep], dtype=float)
    return (
        keep,
        human.reshape(len(keep), len(items.aspects)),
        {
            k: np.array([_score_vector(p[i], items.aspects) for i in keep], dtype=float).reshape(
                len(keep), len(items.aspects)
            )
            for k, p in preds.items()
        },
    )


def paired_vs(
    items: Items, name: str, preds: dict[str, Any], base: str, base_preds: dict[str, Any], *, resamples: int, seed: int
) -> dict[str, PairedDifference]:
    """This setting minus the baseline, per metric, on the items both judged (chateval.paired)."""
    ids = [i for i in items.reference if i in preds and i in base_preds]
    names = (name, base)
    if not items.scored:
        gold = items.gold(ids)

        def hit(p: dict[Any, Any]) -> list[float]:
            return [float(p[i] == g) for i, g in zip(ids, gold)]  # no verdict: a miss

        clusters = items.cluster_of(ids)
        out = {
            "accuracy": paired_difference(
                hit(preds),
                hit(base_preds),
                names=names,
                metric="accuracy",
                clusters=clusters,
                resamples=resamples,
                seed=seed,
            )
        }
        out["kappa"] = paired_metric_difference(
            gold,
            [preds[i] for i in ids],
            [base_preds[i] for i in ids],
            "kappa",
            names=names,
            clusters=clusters,
            resamples=resamples,
            seed=seed,
        )
        return out
    kept, human, rows = _score_rows(items, {"a": preds, "b": base_preds}, ids)
    n = len(human)
    both = np.vstack([rows["a"], rows["b"]])  # pred index i: setting's row; n + i: the baseline's
    idx = list(range(n))
    return {
        k: paired_metric_difference(
            idx,
            idx,
            [n + i for i in idx],
            aspect_statistic(k, human, both),
            names=names,
            metric=k,
            min_items=MIN_ITEMS[k],
            resamples=resamples,
            seed=seed,
            clusters=items.cluster_of(kept),
        )
        for k in SCORE_METRICS
    }


# --- the human ceiling ------------------------------------------------------------------------
def ceiling(items: Items, *, resamples: int, seed: int) -> tuple[int, int, dict[str, Stat]] | None:
    """Leave-one-out agreement of the annotators (chateval.stats.labels), with a bootstrap over items
    (an item's pairs drawn together; with clusters, a cluster's). None when no item has two or
    more annotators."""
    per_item = {i: items.format.leave_one_out(lab) for i, lab in items.raw.items()}
    per_item = {i: p for i, p in per_item.items() if p}
    if items.scored:
        per_item = {
            i: [(a, b) for a, b in p if _score_vector(a, items.aspects) and _score_vector(b, items.aspects)]
            for i, p in per_item.items()
        }
        per_item = {i: p for i, p in per_item.items() if p}
    if not per_item:
        return None
    keys = list(per_item)
    n_pairs = sum(len(p) for p in per_item.values())
    if not items.scored:
        own = [a for k in keys for a, _ in per_item[k]]
        other = [b for k in keys for _, b in per_item[k]]
        codes = _codes(own, other)
        metrics = {m: STATISTICS[m]() for m in LABEL_METRICS}
        cols = (codes[1], codes[0])  # gold: the others' reference; pred: the left-out annotator
    else:
        own_rows = np.array([_score_vector(a, items.aspects) for k in keys for a, _ in per_item[k]], dtype=float)
        other_rows = np.array([_score_vector(b, items.aspects) for k in keys for _, b in per_item[k]], dtype=float)
        idx = np.arange(n_pairs, dtype=float)
        metrics = {m: aspect_statistic(m, other_rows, own_rows) for m in SCORE_METRICS}
        cols = (idx, idx)
    groups = items.cluster_of(keys) or keys
    owner = [g for k, g in zip(keys, groups) for _ in per_item[k]]
    out = {
        m: _bootstrap(stat, *cols, metric=m, resamples=resamples, seed=seed, clusters=owner, what="pairs")
        for m, stat in metrics.items()
    }
    return len(keys), n_pairs, out
