"""The published numbers of the public LoCoMo answer sets, reproduced from their recorded
verdicts by `chateval rejudge` (../shared/data/locomo_judged; skipped without it)."""

import pytest

from chateval.rejudging import rejudge

from .conftest import SHARED, needs_shared

D = SHARED / "locomo_judged"
pytestmark = needs_shared("locomo_judged", "fc_gpt-4o-mini_cot.json")


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("rejudge")
    return rejudge(
        f"{D / 'fc_gpt-4o-mini_cot.json'}:cot",
        f"{D / 'fc_gpt-4o-mini_memos.json'}:memos",
        f"{D / 'zep_locomo_grades.json'}:zep",
        f"{D / 'ap_v1_specific_wrong.json'}:ap_v1:wrong",
        out=str(out),
        judges="recorded,f1",
        errata=str(D / "locomo_audit_errors.json"),
        resamples=200,
    )


def r2(x):
    return round(100 * x, 2)


def test_overall_rates(summary):
    rec = {k: s.scores["recorded"] for k, s in summary.sets.items()}
    assert r2(rec["ap_v1"].mean) == 10.61  # the specific-but-wrong answers' false acceptance (per-run mean)
    assert (r2(rec["cot"].mean), r2(rec["cot"].accuracy)) == (79.89, 79.94)  # per-run mean, majority of three
    assert (r2(rec["memos"].mean), r2(rec["memos"].accuracy)) == (74.29, 74.35)
    assert r2(rec["zep"].accuracy) == 75.13
    assert [r2(v) for v in rec["cot"].per_run.values()] == [79.81, 79.81, 80.06]


def test_every_rate_the_files_state_is_ours_exactly(summary):
    for label in ("cot", "memos", "ap_v1"):
        checked = summary.sets[label].stated
        assert checked and all(ok for _, _, ok in checked.values()), checked
    assert len(summary.sets["cot"].stated) == 9  # accuracy, majority, three runs, four categories


@pytest.mark.parametrize(
    "label,rates",
    [
        ("ap_v1", [5.91, 3.43, 8.33, 15.18]),
        ("cot", [82.62, 57.32, 66.67, 89.10]),
        ("memos", [70.21, 51.09, 56.60, 86.52]),
        ("zep", [74.11, 66.04, 67.71, 79.79]),
    ],
)
def test_per_category_rows(summary, label, rates):
    cats = summary.sets[label].scores["recorded"].categories
    assert [cats[c].n for c in "1234"] == [282, 321, 96, 841]
    assert [r2(cats[c].mean) for c in "1234"] == rates


def test_protocol_cards(summary):
    card = summary.sets["cot"].protocol_card
    assert card["counts_match"] is True and card["answer_model"] == "gpt-4o-mini"
    assert [c["found"] for c in card["categories"]] == [282, 321, 96, 841]
    assert "category 5" in card["unanswerable_policy"]


def test_errata_ceiling(summary):
    for s in summary.sets.values():
        assert s.errata.wrong_gold == 99 and r2(s.errata.ceiling) == 93.57
        assert s.errata.matched == 156 or s.format == "zep"  # Zep's file has no ids: matched by text


def test_the_offline_f1_judge_reverses_the_cot_memos_ranking(summary):
    ranks = {r.judge: r.ranks for r in summary.ranks}
    assert ranks["recorded"]["cot"] < ranks["recorded"]["memos"]  # the recorded judge: cot ahead
    assert ranks["f1"]["memos"] < ranks["f1"]["cot"]  # F1 punishes cot's long answers: memos ahead
