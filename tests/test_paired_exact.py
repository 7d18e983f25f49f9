"""One comparison, one p-value (exact enumeration up to 2**16 sign patterns, whatever the
resample count), and few clusters: intervals that keep their coverage and never claim a
difference the exact test denies. Checked against brute-force enumeration and hand computation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from chateval.paired import paired_difference, paired_metric_difference
from chateval.paired.few import jackknife_t_interval
from chateval.paired.patterns import EXACT_UNITS, null_values


def _discordant_labels(k: int, n: int = 60, seed: int = 5):
    rng = np.random.default_rng(seed)
    gold = rng.choice(["1", "2", "tie"], n, p=[0.45, 0.45, 0.1])
    a = np.where(rng.random(n) < 0.8, gold, rng.choice(["1", "2"], n))
    b = a.copy()
    idx = rng.choice(n, k, replace=False)
    b[idx] = np.where(a[idx] == gold[idx], np.where(gold[idx] == "1", "2", "1"), gold[idx])
    return gold, a, b


def _kappa(g, p) -> float:
    """Cohen's kappa by its definition (checked against scikit-learn below)."""
    n = len(g)
    po = sum(x == y for x, y in zip(g, p)) / n
    pe = sum((list(g).count(c) / n) * (list(p).count(c) / n) for c in set(g) | set(p))
    return (po - pe) / (1 - pe)


def _brute_force_kappa_p(gold, a, b) -> float:
    moving = np.flatnonzero(a != b)
    assert _kappa(gold, a) == pytest.approx(cohen_kappa_score(gold, a))
    cohen = _kappa
    obs = cohen(gold, a) - cohen(gold, b)
    hits = total = 0
    for pattern in itertools.product((False, True), repeat=len(moving)):
        x, y = a.copy(), b.copy()
        sw = moving[list(pattern)]
        x[sw], y[sw] = b[sw], a[sw]
        total += 1
        hits += abs(cohen(gold, x) - cohen(gold, y)) >= abs(obs) * (1 - 1e-12)
    return hits / total


def test_eleven_discordant_items_are_enumerated_exactly_whatever_the_resamples():
    # FairEval's case: 11 discordant items, 2,048 patterns > the 2,000 resamples that used to
    # switch to Monte-Carlo (0.1289 in one command, 0.1339 in another).
    gold, a, b = _discordant_labels(11)
    ref = _brute_force_kappa_p(gold, a, b)
    got = {
        (r, s): paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), "kappa", resamples=r, seed=s)
        for r, s in ((2000, 0), (500, 3), (100, 9))
    }
    assert {c.test for c in got.values()} == {"permutation_exact"}
    assert len({c.p_value for c in got.values()}) == 1
    assert got[2000, 0].p_value == pytest.approx(ref, abs=1e-12) and 0.01 < ref < 1


def test_up_to_two_to_the_sixteen_patterns_are_exact_beyond_monte_carlo():
    rng = np.random.default_rng(0)
    v = null_values(EXACT_UNITS, 100, rng, lambda rows: rows.sum(axis=1).astype(float), width=EXACT_UNITS)
    assert v[1] and len(v[0]) == 2**EXACT_UNITS
    # Each pattern once: the counts of True per row are binomial(16, j).
    counts = np.bincount(v[0].astype(int), minlength=EXACT_UNITS + 1)
    assert counts.tolist() == [int(stats.binom.pmf(j, 16, 0.5) * 2**16 + 0.5) for j in range(17)]
    mc, exact = null_values(EXACT_UNITS + 1, 100, rng, lambda rows: rows.sum(axis=1).astype(float))
    assert not exact and len(mc) == 100


def test_mean_difference_with_sixteen_moving_items_exact():
    rng = np.random.default_rng(4)
    d = rng.normal(0.2, 1.0, 16)
    r = paired_difference((d + 1).tolist(), np.ones(16).tolist(), metric="f1", resamples=200)
    ref = stats.permutation_test(
        (d + 1, np.ones(16)),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert r.test == "permutation_exact" and r.p_value == pytest.approx(ref.pvalue, rel=1e-9)


# --- few clusters ------------------------------------------------------------------------------


def _issue_case():
    # Eight conversations of unequal size, three of which differ (all in A's favour).
    sizes = [30, 25, 40, 20, 35, 28, 22, 30]
    cl = np.repeat(np.arange(8), sizes)
    a = np.zeros(len(cl))
    b = np.zeros(len(cl))
    for c, wins in ((0, 3), (2, 2), (5, 4)):
        a[np.flatnonzero(cl == c)[:wins]] = 1.0
    return a, b, cl


def test_eight_conversations_three_differing_is_not_significant():
    a, b, cl = _issue_case()
    r = paired_difference(a.tolist(), b.tolist(), clusters=cl.tolist())
    # Three clusters move: 8 sign patterns, only the observed one and its mirror as extreme.
    assert r.test == "cluster_permutation_exact" and r.p_value == pytest.approx(0.25)
    assert r.few_clusters and r.interval == "inverted_permutation"
    assert r.ci95[0] <= 0 <= r.ci95[1] and r.excludes_zero is False
    # A cluster bootstrap over the same eight conversations excludes zero: what the issue saw.
    rng = np.random.default_rng(0)
    sums = np.bincount(cl, weights=a - b)
    counts = np.bincount(cl).astype(float)
    pick = rng.integers(0, 8, size=(2000, 8))
    boots = sums[pick].sum(1) / counts[pick].sum(1)
    assert np.percentile(boots, 2.5) >= 0


def _brute_p(sums, counts, delta) -> float:
    s = sums - delta * counts
    obs = abs(s.sum())
    null = [abs((np.array(e) * s).sum()) for e in itertools.product((1, -1), repeat=len(s))]
    return float(np.mean([x >= obs * (1 - 1e-12) for x in null]))


def test_inverted_interval_is_the_set_the_exact_test_accepts():
    rng = np.random.default_rng(6)
    sizes = [12, 9, 15, 10, 11, 8, 14, 10, 13]
    cl = np.repeat(np.arange(9), sizes)
    a = rng.random(len(cl)) + 0.1 * (cl % 3)
    b = rng.random(len(cl))
    r = paired_difference(a.tolist(), b.tolist(), metric="f1", clusters=cl.tolist())
    sums = np.bincount(cl, weights=a - b)
    counts = np.bincount(cl).astype(float)
    lo, hi = r.ci95
    assert lo < r.diff < hi
    eps = 1e-6 * (hi - lo)
    assert _brute_p(sums, counts, lo + eps) > 0.05 and _brute_p(sums, counts, hi - eps) > 0.05
    assert _brute_p(sums, counts, lo - 10 * eps) <= 0.05 and _brute_p(sums, counts, hi + 10 * eps) <= 0.05
    assert r.p_value == pytest.approx(_brute_p(sums, counts, 0.0))
    assert r.excludes_zero is (r.p_value <= 0.05)


def test_few_clusters_of_a_statistic_use_a_jackknife_t_and_the_exact_test():
    rng = np.random.default_rng(2)
    cl = np.repeat(np.arange(8), 10)
    gold = rng.choice(["1", "2"], 80)
    a = np.where(rng.random(80) < 0.85, gold, rng.choice(["1", "2"], 80))
    b = np.where(rng.random(80) < 0.6, gold, rng.choice(["1", "2"], 80))
    r = paired_metric_difference(gold.tolist(), a.tolist(), b.tolist(), "kappa", clusters=cl.tolist())
    loo = np.array(
        [cohen_kappa_score(gold[cl != c], a[cl != c]) - cohen_kappa_score(gold[cl != c], b[cl != c]) for c in range(8)]
    )
    se = np.sqrt(7 / 8 * ((loo - loo.mean()) ** 2).sum())
    t = stats.t.ppf(0.975, 7)
    assert r.interval == "cluster_jackknife_t" and r.few_clusters
    assert r.ci95 == pytest.approx((r.diff - t * se, r.diff + t * se))
    assert r.test == "cluster_permutation_exact"
    assert r.excludes_zero is ((r.ci95[0] > 0 or r.ci95[1] < 0) and r.p_value <= 0.05)


def test_jackknife_interval_undefined_when_a_value_is():
    assert jackknife_t_interval(0.1, np.array([0.1, np.nan, 0.2])) is None
    lo, hi = jackknife_t_interval(0.0, np.array([-1.0, 1.0]))
    assert (lo, hi) == pytest.approx((-stats.t.ppf(0.975, 1) * np.sqrt(0.5 * 2), stats.t.ppf(0.975, 1)))


def test_reports_say_when_clusters_are_few():
    from rich.console import Console

    from chateval.cli.bench import comparisons_table
    from chateval.paired import comparisons_markdown, dump_comparisons

    a, b, cl = _issue_case()
    few = paired_difference(a.tolist(), b.tolist(), clusters=cl.tolist(), names=("mem", "none"))
    md = "\n".join(comparisons_markdown([few]))
    assert "**Few clusters** (8; fewer than 20)" in md and "inverted exact permutation" in md
    console = Console(record=True, width=200)
    comparisons_table({"comparisons": dump_comparisons([few])}, console)
    assert "few clusters (8)" in console.export_text()
    many = paired_difference(a.tolist(), b.tolist(), names=("mem", "none"))  # no clusters
    assert "Few clusters" not in "\n".join(comparisons_markdown([many]))


def test_a_bootstrap_over_sparse_differences_never_outvotes_the_exact_test():
    # 80 items, 5 of which differ (all the same way): the bootstrap almost never draws none of the
    # 5, so its interval excludes 0, but the exact sign-flip p is 2/2**5 = 0.0625 (the audit's
    # net-of-length on FairEval showed exactly this).
    a = [0.5] * 5 + [0.0] * 75
    b = [0.0] * 80
    r = paired_difference(a, b, metric="f1")
    assert r.test == "permutation_exact" and r.p_value == pytest.approx(0.0625)
    assert r.ci95[0] > 0 and r.excludes_zero is False


def test_t_quantile_needs_no_scipy_and_matches_it():
    """The jackknife's t quantile is computed in closed form (the core install has no scipy)."""
    stats = pytest.importorskip("scipy.stats")
    from chateval.paired.few import t_quantile

    for df in (1, 2, 3, 4, 7, 18, 19, 40):
        for q in (0.9, 0.975, 0.995):
            assert t_quantile(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-10)
    assert t_quantile(0.975, 1) == pytest.approx(12.706204736174707, rel=1e-12)  # tables: t(0.975, 1)
