"""calibrate's agreement among several raters: Krippendorff's alpha and Fleiss' kappa of the
annotators (against hand computation and statsmodels), and the judge-vs-judge matrix."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from chateval.calibration import read_calibration
from chateval.calibration.metrics import Items
from chateval.calibration.multirater import annotator_agreement, judge_agreement
from chateval.cli import main

from .conftest import FIXTURES

pytest.importorskip("krippendorff")


def _alpha_nominal_by_hand(units: list[list[str]]) -> float:
    """Krippendorff's alpha, nominal, from the coincidence matrix (Krippendorff 2011, sec. 3)."""
    cats = sorted({v for u in units for v in u})
    o = np.zeros((len(cats), len(cats)))
    for u in units:
        m = len(u)
        if m < 2:
            continue
        for i, a in enumerate(u):
            for j, b in enumerate(u):
                if i != j:
                    o[cats.index(a), cats.index(b)] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = (n * n - (n_c**2).sum()) / (n - 1)
    return 1 - d_o / d_e


def _fleiss_by_hand(table: np.ndarray) -> float:
    n, m = table.shape[0], table.sum(axis=1)[0]
    p_j = table.sum(axis=0) / (n * m)
    p_i = ((table * (table - 1)).sum(axis=1)) / (m * (m - 1))
    p_bar, p_e = p_i.mean(), (p_j**2).sum()
    return (p_bar - p_e) / (1 - p_e)


LABELS = {
    "a": ["1", "1", "1"],
    "b": ["2", "2", "tie"],
    "c": ["1", "2", "1"],
    "d": ["tie", "tie", "tie"],
    "e": ["2", "2"],  # two annotators: alpha takes it, Fleiss (3 per item) leaves it out
    "f": ["1"],  # one annotator: no agreement to measure
}


def test_alpha_and_fleiss_match_hand_computation_and_statsmodels():
    from statsmodels.stats.inter_rater import fleiss_kappa

    items = Items("pairwise", LABELS)
    got = annotator_agreement(items)
    units = [v for v in LABELS.values() if len(v) >= 2]
    assert got["krippendorff_alpha"].value == pytest.approx(_alpha_nominal_by_hand(units))
    assert got["krippendorff_alpha"].n == 5
    table = np.array([[v.count(c) for c in ("1", "2", "tie")] for v in LABELS.values() if len(v) == 3])
    assert got["fleiss_kappa"].value == pytest.approx(_fleiss_by_hand(table))
    assert got["fleiss_kappa"].value == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert got["fleiss_kappa"].n == 4 and "1 with another count left out" in got["fleiss_kappa"].reason


def test_score_alpha_is_interval_and_fleiss_says_labels_only():
    import krippendorff

    labels = {"s1": [9, 8, 9], "s2": [8, 7], "s3": [1, 2, 1], "s4": [5, 6, 4]}
    got = annotator_agreement(Items("score", labels))
    data = np.array([[9, 8, 1, 5], [8, 7, 2, 6], [9, np.nan, 1, 4]], dtype=float)
    assert got["krippendorff_alpha"].value == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
    assert got["fleiss_kappa"].value is None and "labels only" in got["fleiss_kappa"].reason


def test_one_annotator_per_item_has_no_multi_rater_agreement():
    assert annotator_agreement(Items("pairwise", {"a": "1", "b": ["2"]})) == {}


def test_judge_matrix_is_cohen_kappa_between_settings():
    items = Items("pairwise", {k: v for k, v in LABELS.items()})
    preds = {"x": {"a": "1", "b": "2", "c": "1", "d": "tie", "e": "2"},
             "y": {"a": "1", "b": "1", "c": "1", "d": "tie", "e": "2", "f": "2"},
             "z": {"a": "2", "b": None, "c": "2"}}
    metric, m = judge_agreement(items, preds)
    assert metric == "kappa"
    ids = ["a", "b", "c", "d", "e"]
    assert m["x"]["y"] == pytest.approx(cohen_kappa_score([preds["x"][i] for i in ids], [preds["y"][i] for i in ids]))
    assert m["x"]["y"] == m["y"]["x"] and m["x"]["x"] == 1.0
    assert m["z"]["z"] is None  # one label only on its items: kappa undefined


def test_judge_matrix_for_scores_is_spearman_over_aspects():
    items = Items("score", {"s1": 9, "s2": 5, "s3": 1, "s4": 7})
    preds = {"a": {"s1": {"score": 8}, "s2": {"score": 6}, "s3": {"score": 2}, "s4": {"score": 5}},
             "b": {"s1": {"score": 9}, "s2": {"score": 4}, "s3": {"score": 3}, "s4": {"score": 7}}}
    metric, m = judge_agreement(items, preds)
    assert metric == "spearman"
    assert m["a"]["b"] == pytest.approx(stats.spearmanr([8, 6, 2, 5], [9, 4, 3, 7]).statistic)


def test_calibrate_reports_them_beside_the_ceiling(tmp_path, capsys):
    out = tmp_path / "cal"
    assert main(["calibrate", str(FIXTURES / "calibrate_pairwise.jsonl"), "--out", str(out),
                 "--setting", "single=single", "--setting", "pair=chateval_default"]) == 0
    capsys.readouterr()
    s = read_calibration(out)
    assert s.ceiling is not None and set(s.ceiling.multi_rater) == {"krippendorff_alpha", "fleiss_kappa"}
    raw = [json.loads(line) for line in (FIXTURES / "calibrate_pairwise.jsonl").read_text().splitlines() if line]
    units = [r["label"] for r in raw if isinstance(r["label"], list) and len(r["label"]) >= 2]
    assert s.ceiling.multi_rater["krippendorff_alpha"].value == pytest.approx(_alpha_nominal_by_hand(units))
    assert s.judge_agreement_metric == "kappa" and set(s.judge_agreement) == {"single", "pair"}
    report = (out / "report.md").read_text()
    assert "Krippendorff's alpha (nominal" in report and "Fleiss' kappa" in report and "## Judge vs judge" in report


def test_unanimous_annotators_leave_alpha_and_fleiss_undefined_with_a_reason():
    got = annotator_agreement(Items("pairwise", {"a": ["1", "1"], "b": ["1", "1"]}))
    assert got["krippendorff_alpha"].value is None and "every label is the same" in got["krippendorff_alpha"].reason
    assert got["fleiss_kappa"].value is None and "every label is the same" in got["fleiss_kappa"].reason
