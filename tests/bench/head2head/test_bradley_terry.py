"""Bradley–Terry ranking (head-to-head with more than two systems), against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from chateval.bench.head2head.bradley_terry import PRIOR, fit, rank


def test_two_systems_match_the_win_fraction():
    # 7 wins of 10 for a: with the (weak) prior the MLE of θa − θb is close to log(7/3).
    outcomes = [("a", "b", 1.0)] * 7 + [("a", "b", 0.0)] * 3
    theta = fit(outcomes, ["a", "b"])
    assert theta[0] - theta[1] == pytest.approx(math.log(7 / 3), abs=0.02)
    assert theta.sum() == pytest.approx(0.0, abs=1e-9)


def test_ties_count_half_and_all_ties_mean_equal_strengths():
    theta = fit([("a", "b", 0.5)] * 6 + [("b", "c", 0.5)] * 6, ["a", "b", "c"])
    assert max(abs(t) for t in theta) < 1e-6
    # 2 wins + 2 ties of 4 for a = 3 of 4 points: log(3) apart.
    theta = fit([("a", "b", 1.0)] * 2 + [("a", "b", 0.5)] * 2, ["a", "b"])
    assert theta[0] - theta[1] == pytest.approx(math.log(3), abs=0.03)


@pytest.mark.slow
def test_transitive_order_and_intervals():
    cases = [[("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0)]] * 6 + [[("a", "b", 0.0), ("b", "c", 1.0),
                                                                          ("a", "c", 1.0)]] * 2
    ranked = rank(cases, ["c", "b", "a"])
    assert [r.system for r in ranked] == ["a", "b", "c"] and [r.rank for r in ranked] == [1, 2, 3]
    for r in ranked:
        assert r.ci95 is not None and r.ci95[0] <= r.strength <= r.ci95[1]
    assert ranked[0].win_prob_vs_average > 0.5 > ranked[-1].win_prob_vs_average


def test_a_clean_sweep_stays_finite():
    theta = fit([("a", "b", 1.0)] * 20, ["a", "b"])
    assert 2 < theta[0] - theta[1] < 20 and PRIOR > 0


def test_a_system_that_never_played_is_an_error():
    with pytest.raises(ValueError, match="no judged comparison involves c"):
        rank([[("a", "b", 1.0)]], ["a", "b", "c"])
    assert rank([], ["a", "b"]) == []
