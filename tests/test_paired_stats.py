"""chateval.paired against reference implementations (statsmodels, scipy, scikit-learn) and
hand-computed cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.contingency_tables import mcnemar

from chateval.paired import (STATISTICS, PairedDifference, choose_pairs, comparisons_markdown, compare_systems,
                             dump_comparisons, paired_difference, paired_metric_difference, per_resample,
                             read_comparisons)


def _mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


# --- McNemar ------------------------------------------------------------------------------


def test_binary_values_get_mcnemar_exact_as_statsmodels():
    rng = np.random.default_rng(3)
    a = (rng.random(80) < 0.7).astype(int)
    b = np.where(rng.random(80) < 0.8, a, 1 - a)  # mostly agreeing, some discordant
    b[:6] = 0
    a[:6] = 1
    r = paired_difference(a.tolist(), b.tolist(), names=("x", "y"))
    table = [[int(((a == 1) & (b == 1)).sum()), int(((a == 1) & (b == 0)).sum())],
             [int(((a == 0) & (b == 1)).sum()), int(((a == 0) & (b == 0)).sum())]]
    assert r.test == "mcnemar_exact"
    assert r.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert r.diff == pytest.approx(a.mean() - b.mean())
    assert (r.n, r.a, r.b, r.value_a) == (80, "x", "y", pytest.approx(a.mean()))


def test_mcnemar_hand_computed_and_booleans():
    # 8 items only A got right, 2 only B, 10 both: p = 2 * P(X <= 2 | 10, 1/2) = 2 * 56 / 1024.
    a = [True] * 8 + [False] * 2 + [True] * 10
    b = [False] * 8 + [True] * 2 + [True] * 10
    r = paired_difference(a, b)
    assert r.p_value == pytest.approx(112 / 1024)
    assert r.diff == pytest.approx(6 / 20)
    # Pairing matters: the same marginals with every item agreeing is no evidence at all.
    same = paired_difference([1] * 10 + [0] * 10, [1] * 10 + [0] * 10)
    assert same.p_value == 1.0 and same.diff == 0


# --- sign-flip permutation -------------------------------------------------------------------


def test_permutation_exact_hand_computed():
    # d = 1, 2, 3: the 8 sign patterns give sums 6, 4, 2, 0, 0, -2, -4, -6; |T| >= 6 in 2 of 8.
    r = paired_difference([1.5, 2.5, 3.5], [0.5, 0.5, 0.5], metric="f1")
    assert r.test == "permutation_exact"
    assert r.p_value == pytest.approx(0.25)
    assert r.diff == pytest.approx(2.0)


def test_permutation_exact_matches_scipy():
    rng = np.random.default_rng(7)
    a = rng.random(10)
    b = a - rng.normal(0.15, 0.2, 10)
    r = paired_difference(a.tolist(), b.tolist(), metric="f1")
    ref = stats.permutation_test((a, b), _mean_diff, permutation_type="samples", n_resamples=np.inf,
                                 vectorized=True)
    assert r.test == "permutation_exact"  # 2**10 <= 2000 patterns
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_permutation_monte_carlo_near_scipy():
    rng = np.random.default_rng(11)
    a = rng.random(60)
    b = a - rng.normal(0.04, 0.2, 60)
    r = paired_difference(a.tolist(), b.tolist(), metric="f1", resamples=4000)
    ref = stats.permutation_test((a, b), _mean_diff, permutation_type="samples", n_resamples=40000,
                                 vectorized=True, random_state=1)
    assert r.test == "permutation_mc"
    assert 0.01 < ref.pvalue < 0.5  # a case where the p-value is not pinned at 0 or 1
    assert abs(r.p_value - ref.pvalue) < 0.03


# --- bootstrap interval ------------------------------------------------------------------------


def test_bootstrap_interval_matches_scipy_percentile_paired():
    rng = np.random.default_rng(5)
    a = rng.random(200)
    b = 0.6 * a + 0.4 * rng.random(200)
    r = paired_difference(a.tolist(), b.tolist(), metric="score", resamples=4000)
    ref = stats.bootstrap((a, b), _mean_diff, paired=True, vectorized=True, method="percentile",
                          n_resamples=20000, random_state=2).confidence_interval
    width = ref.high - ref.low
    assert abs(r.ci95[0] - ref.low) < 0.08 * width and abs(r.ci95[1] - ref.high) < 0.08 * width
    # Paired resampling: the interval is far narrower than one ignoring the pairing would be.
    unpaired = stats.bootstrap((a, b), _mean_diff, vectorized=True, method="percentile", n_resamples=4000,
                               random_state=2).confidence_interval
    assert width < 0.8 * (unpaired.high - unpaired.low)
    assert r.excludes_zero is (r.ci95[0] > 0 or r.ci95[1] < 0)


def test_deterministic_for_a_seed():
    rng = np.random.default_rng(1)
    a, b = rng.random(50).tolist(), rng.random(50).tolist()
    one = paired_difference(a, b, metric="f1", seed=4)
    assert one == paired_difference(a, b, metric="f1", seed=4)
    assert one.ci95 != paired_difference(a, b, metric="f1", seed=5).ci95


# --- clusters ------------------------------------------------------------------------------------


def test_two_clusters_give_no_interval_and_no_claim():
    # Cluster X: 10 items where A beats B; cluster Y: 30 ties. Two clusters: the exact test has 4
    # sign patterns and can never reach p < 0.05, so no finite 95% interval exists (a bootstrap
    # over two clusters would print [0, 1] as if it meant something).
    a = [1] * 10 + [0] * 30
    b = [0] * 40
    cl = ["X"] * 10 + ["Y"] * 30
    clustered = paired_difference(a, b, clusters=cl)
    assert clustered.ci95 is None and clustered.excludes_zero is None and clustered.few_clusters
    assert "2 clusters" in clustered.reason and "smallest p 0.5" in clustered.reason
    assert (clustered.n, clustered.n_clusters) == (40, 2)
    # One cluster moves: the two sign patterns are +-0.25, both as extreme as observed.
    assert clustered.test == "cluster_permutation_exact" and clustered.p_value == 1.0
    items = paired_difference(a, b)
    assert items.test == "mcnemar_exact" and items.p_value < 0.01
    assert 0.0 < items.ci95[0] < 0.25 < items.ci95[1] < 0.5
    assert items.interval == "percentile_bootstrap" and not items.few_clusters


def test_cluster_interval_wider_when_items_within_a_cluster_move_together():
    rng = np.random.default_rng(2)
    effect = rng.normal(0.0, 0.3, 30)  # one shared difference per conversation
    cl = np.repeat(np.arange(30), 10)
    a = rng.random(300)
    b = a - effect[cl] - rng.normal(0, 0.02, 300)
    item = paired_difference(a.tolist(), b.tolist(), metric="f1")
    clustered = paired_difference(a.tolist(), b.tolist(), metric="f1", clusters=cl.tolist())
    w_item = item.ci95[1] - item.ci95[0]
    w_cluster = clustered.ci95[1] - clustered.ci95[0]
    assert w_cluster > 2 * w_item
    # 30 clusters: the bootstrap of whole clusters, a Monte-Carlo test (2**30 patterns).
    assert clustered.test == "cluster_permutation_mc" and clustered.n_clusters == 30
    assert clustered.interval == "percentile_bootstrap" and not clustered.few_clusters
    # The cluster test sees 30 units, not 300: its p-value is the larger.
    assert clustered.p_value > item.p_value


def test_cluster_permutation_matches_scipy_on_cluster_sums():
    # Equal-size clusters: the pooled mean difference is the mean of the cluster means, so the
    # cluster sign-flip test is scipy's paired test on cluster means.
    rng = np.random.default_rng(9)
    cl = np.repeat(np.arange(8), 5)
    a = rng.random(40)
    b = a - rng.normal(0.1, 0.2, 40)
    r = paired_difference(a.tolist(), b.tolist(), metric="f1", clusters=cl.tolist())
    ma = np.array([a[cl == c].mean() for c in range(8)])
    mb = np.array([b[cl == c].mean() for c in range(8)])
    ref = stats.permutation_test((ma, mb), _mean_diff, permutation_type="samples", n_resamples=np.inf,
                                 vectorized=True)
    assert r.test == "cluster_permutation_exact"
    assert r.p_value == pytest.approx(ref.pvalue)


# --- undefined cases ------------------------------------------------------------------------------


def _no_nan(r: PairedDifference) -> None:
    text = json.dumps(r.model_dump(mode="json"), allow_nan=False)  # raises on NaN
    assert "NaN" not in text


def test_undefined_cases_give_a_reason_not_nan():
    empty = paired_difference([], [])
    assert (empty.n, empty.diff, empty.ci95, empty.p_value) == (0, None, None, None) and empty.reason
    missing = paired_difference([1, None, 0], [None, 1, float("nan")])
    assert missing.n == 0 and missing.reason
    one = paired_difference([1, None], [0, 1])
    assert one.n == 1 and one.diff == 1 and one.ci95 is None and one.reason and "at least 2" in one.reason
    single_cluster = paired_difference([1, 0, 1], [0, 0, 0], clusters=["c", "c", "c"])
    assert single_cluster.n_clusters == 1 and single_cluster.ci95 is None and single_cluster.reason
    constant = paired_metric_difference([1, 2, 3, 4], [2, 2, 2, 2], [1, 3, 2, 4], "spearman", names=("flat", "ok"))
    assert constant.value_a is None and constant.value_b == pytest.approx(0.8) and constant.diff is None
    assert "flat" in constant.reason and "same" in constant.reason
    same_labels = paired_metric_difference(["1"] * 5, ["1"] * 5, ["1", "2", "1", "1", "1"], "kappa")
    assert same_labels.diff is None and "reference is constant" in same_labels.reason
    few = paired_metric_difference([1, 2], [1, 2], [2, 1], "kendall")
    assert few.diff is None and few.reason and "at least 3" in few.reason
    for r in (empty, missing, one, single_cluster, constant, same_labels, few):
        _no_nan(r)
        assert r.excludes_zero is None or r.ci95 is not None


def test_missing_items_dropped_from_both_sides():
    r = paired_difference([1, 1, None, 0, 1], [0, None, 1, 0, 1])
    assert r.n == 3 and r.value_a == pytest.approx(2 / 3) and r.value_b == pytest.approx(1 / 3)


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1, 0], [1])
    with pytest.raises(ValueError, match="clusters"):
        paired_difference([1, 0], [1, 1], clusters=["a"])
    with pytest.raises(ValueError, match="unknown statistic"):
        paired_metric_difference([1], [1], [1], "auc")


# --- whole-sample statistics ----------------------------------------------------------------------


def _labels(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    gold = rng.choice(["1", "2", "tie"], n, p=[0.45, 0.45, 0.1])
    a = np.where(rng.random(n) < 0.75, gold, rng.choice(["1", "2", "tie"], n))
    b = np.where(rng.random(n) < 0.55, gold, rng.choice(["1", "2", "tie"], n))
    return gold, a, b


def _kappa_diff(g, x, y):
    return cohen_kappa_score(g, x) - cohen_kappa_score(g, y)


@pytest.mark.slow
def test_kappa_difference_against_sklearn_and_scipy_bootstrap():
    gold, a, b = _labels(4)
    r = paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), "kappa", names=("panel", "single"),
                                 resamples=1000)
    assert r.value_a == pytest.approx(cohen_kappa_score(gold, a))
    assert r.value_b == pytest.approx(cohen_kappa_score(gold, b))
    assert r.metric == "kappa" and r.n == 60 and r.resamples_used == 1000
    codes = {"1": 0, "2": 1, "tie": 2}
    g, x, y = (np.array([codes[v] for v in arr]) for arr in (gold, a, b))
    ref = stats.bootstrap((g, x, y), _kappa_diff, paired=True, vectorized=False, method="percentile",
                          n_resamples=1000, random_state=3).confidence_interval
    width = ref.high - ref.low
    assert abs(r.ci95[0] - ref.low) < 0.15 * width and abs(r.ci95[1] - ref.high) < 0.15 * width


@pytest.mark.slow
def test_kappa_permutation_exact_matches_scipy():
    # 10 items (scipy enumerates all 2**10 swap patterns), 5 where the settings disagree (only
    # their 2**5 patterns move the statistic, and chateval enumerates just those).
    gold, a, b = _labels(8, n=10)
    b = a.copy()
    flip = np.arange(0, 10, 2)
    b[flip] = np.where(a[flip] == "1", "2", "1")
    r = paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), "kappa")
    ref = stats.permutation_test((a, b), lambda x, y: _kappa_diff(gold, x, y), permutation_type="samples",
                                 n_resamples=np.inf, vectorized=False)
    assert r.test == "permutation_exact"
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_correlations_match_scipy_and_permutation_near_scipy():
    rng = np.random.default_rng(6)
    human = rng.integers(1, 6, 50).astype(float)
    a = human + rng.normal(0, 1, 50)
    b = human + rng.normal(0, 2.5, 50)
    for name, fn in (("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
        r = paired_metric_difference(human.tolist(), a.tolist(), b.tolist(), name, resamples=500)
        assert r.value_a == pytest.approx(fn(human, a).statistic)
        assert r.value_b == pytest.approx(fn(human, b).statistic)
        assert r.test == "permutation_mc" and r.ci95[0] < r.diff < r.ci95[1]
    r = paired_metric_difference(human.tolist(), a.tolist(), b.tolist(), "spearman", resamples=2000)
    ref = stats.permutation_test((a, b), lambda x, y: stats.spearmanr(human, x).statistic
                                 - stats.spearmanr(human, y).statistic,
                                 permutation_type="samples", n_resamples=2000, vectorized=False, random_state=0)
    assert abs(r.p_value - ref.pvalue) < 0.03


def test_batched_rank_statistics_equal_scipy_row_by_row():
    # Bootstrap batches repeat items (ties on both sides); Likert-like values tie a lot; and
    # near-continuous values take kendall's scipy fallback.
    rng = np.random.default_rng(21)
    human = rng.integers(1, 10, 80) / 3
    judge = np.clip(np.round(human * 3 + rng.normal(0, 2, 80)), 1, 9)
    cont_x, cont_y = rng.normal(size=80), rng.normal(size=80)
    pick = rng.integers(0, 80, size=(40, 80))
    for x, y in ((human, judge), (cont_x, cont_y), (judge, cont_x)):
        gx, gy = x[pick], y[pick]
        rho = STATISTICS["spearman"]()(gx, gy)
        tau = STATISTICS["kendall"]()(gx, gy)
        assert rho == pytest.approx([stats.spearmanr(a, b).statistic for a, b in zip(gx, gy)], abs=1e-12)
        assert tau == pytest.approx([stats.kendalltau(a, b).statistic for a, b in zip(gx, gy)], abs=1e-12)
    flat = STATISTICS["kendall"]()(np.ones((2, 5)), np.arange(10.0).reshape(2, 5))
    assert np.isnan(flat).all()


def test_accuracy_statistic_equals_the_mean_version():
    gold, a, b = _labels(12, n=40)
    by_stat = paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), "accuracy")
    by_mean = paired_difference((a == gold).tolist(), (b == gold).tolist())
    assert by_stat.diff == pytest.approx(by_mean.diff)
    assert by_stat.ci95 == pytest.approx(by_mean.ci95)  # same seed, same index matrix


def test_custom_statistic_and_clusters():
    gold, a, b = _labels(13, n=40)
    cl = [i // 4 for i in range(40)]

    def agree(g, p):
        return float(np.mean(g == p))

    r = paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), per_resample(agree), metric="agreement",
                                 clusters=cl, resamples=300)
    assert r.metric == "agreement" and r.n_clusters == 10 and r.test.startswith("cluster_permutation")
    ref = paired_difference((a == gold).tolist(), (b == gold).tolist(), clusters=cl, resamples=300)
    assert r.diff == pytest.approx(ref.diff) and r.ci95[0] < r.diff < r.ci95[1]


def test_cluster_bootstrap_of_a_statistic_draws_whole_clusters():
    # Equal-sized clusters take the batched path, unequal ones the loop: both must draw the same
    # clusters as an explicit reference with the same generator.
    gold, a, b = _labels(14, n=84)
    for sizes in ([4] * 21, [2, 6, 3, 5] + [4] * 17):  # 21 clusters: not few, so the bootstrap's interval
        cl = np.repeat(np.arange(21), sizes).tolist()
        r = paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), "accuracy", clusters=cl, resamples=200)
        codes = {v: i for i, v in enumerate(sorted(set(gold) | set(a) | set(b)))}
        g, x, y = (np.array([codes[v] for v in arr]) for arr in (gold, a, b))
        members = [np.flatnonzero(np.array(cl) == c) for c in range(21)]
        draws = np.random.default_rng(0).integers(0, 21, size=(200, 21))
        ref = []
        for row in draws:
            idx = np.concatenate([members[c] for c in row])
            ref.append(np.mean(g[idx] == x[idx]) - np.mean(g[idx] == y[idx]))
        assert r.ci95 == pytest.approx(tuple(np.percentile(ref, [2.5, 97.5])))


# --- many systems, reading back, report ----------------------------------------------------------


def test_choose_pairs():
    assert choose_pairs(["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert choose_pairs(list("abcde")) == [("b", "a"), ("c", "a"), ("d", "a"), ("e", "a")]
    assert choose_pairs(["s", "m", "x"], baseline="s") == [("m", "s"), ("x", "s")]


def test_compare_systems_aligns_by_item_id_and_roundtrips():
    values = {"mem": {"q1": 1, "q2": 1, "q3": 0, "q4": 1}, "none": {"q4": 0, "q2": 0, "q1": 1, "q9": 1}}
    clusters = {"q1": "c1", "q2": "c1", "q3": "c2", "q4": "c2", "q9": "c3"}
    [c] = compare_systems(values, metric="accuracy", clusters=clusters)
    assert (c.a, c.b, c.n, c.n_clusters) == ("mem", "none", 3, 2)
    assert c.diff == pytest.approx(2 / 3)
    summary = json.loads(json.dumps({"comparisons": dump_comparisons([c])}))
    assert summary["comparisons"][0]["excludes_zero"] == c.excludes_zero
    assert read_comparisons(summary) == [c]
    md = "\n".join(comparisons_markdown([c]))
    assert "| mem vs none | accuracy | 1.000 | 0.333 | +0.667 |" in md and "3 (2 clusters)" in md
    assert "With 2 clusters" in md and "smallest p it can give is 0.5" in md


def test_fast_enough_to_run_everywhere():
    # Not a speed assertion: the sizes the benches use run in one call without error.
    rng = np.random.default_rng(0)
    a, b = rng.random(500), rng.random(500)
    r = paired_difference(a.tolist(), b.tolist(), metric="f1")
    assert r.resamples_used == 2000 and not math.isnan(r.diff)
