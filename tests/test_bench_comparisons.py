"""Paired comparisons in every multi-system (or multi-setting) bench summary and report: which
pairs, which items (n), which clusters, and values that agree with the summary's own tables.
Builders on hand-made records first, then offline end-to-end runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.bench.comparisons import (head2head_comparisons, label_comparisons, locomo_comparisons,
                                        longmemeval_comparisons, msc_response_comparisons, score_comparisons,
                                        setting_pairs, teafarm_comparisons)
from chateval.cli import main
from chateval.paired import read_comparisons

from .conftest import FIXTURES, SHARED, needs_shared, read_jsonl, shared

OFFLINE = ["--answer-model", "offline", "--embedder", "hash"]


def by_pair(summary: dict, metric: str | None = None) -> dict[tuple[str, str], object]:
    return {(c.a, c.b): c for c in read_comparisons(summary) if metric is None or c.metric == metric}


# --- builders on hand-made records --------------------------------------------------------------


def _lme(qid: str, method: str, single: bool | None, debate: bool | None = None, status: str = "ok") -> dict:
    return {"question_id": qid, "method": method, "status": status,
            "judge": {"single": {"correct": single}, "debate": {"correct": debate}}}


@pytest.mark.slow
def test_longmemeval_pairs_questions_by_id_with_the_tables_judge():
    recs = [_lme("q1", "a", True), _lme("q2", "a", True), _lme("q3", "a", False), _lme("q4", "a", True),
            _lme("q1", "b", False), _lme("q2", "b", False), _lme("q3", "b", False),
            _lme("q4", "b", True, status="failed")]  # a failed unit is not an item of that pair
    [c] = [json.loads(json.dumps(x)) for x in longmemeval_comparisons(recs, ["a", "b"], retrieval_only=False)]
    assert (c["a"], c["b"], c["n"], c["n_clusters"], c["metric"]) == ("a", "b", 3, None, "accuracy (single judge)")
    assert c["diff"] == pytest.approx(2 / 3) and c["test"] == "mcnemar_exact"
    # Only the panel judged: its verdicts are compared.
    debate_only = [_lme(q, m, None, v) for q, m, v in (("q1", "a", True), ("q1", "b", False), ("q2", "a", True),
                                                       ("q2", "b", True))]
    [d] = longmemeval_comparisons(debate_only, ["a", "b"], retrieval_only=False)
    assert d["metric"] == "accuracy (debate judge)" and d["n"] == 2 and d["diff"] == pytest.approx(0.5)
    assert longmemeval_comparisons(recs, ["a"], retrieval_only=False) == []  # one system: nothing to compare


def _locomo_unit(conv: str, method: str, f1s: list[float], correct: list[bool]) -> dict:
    return {"conversation": conv, "method": method, "status": "ok",
            "qa": [{"qa_index": i, "status": "ok", "f1": f, "judge": {"single": {"correct": c}}}
                   for i, (f, c) in enumerate(zip(f1s, correct))]}


def test_locomo_items_are_qa_and_conversations_are_clusters():
    recs = [_locomo_unit("c1", "x", [1, 1, 0.5], [True, True, False]), _locomo_unit("c1", "y", [0, 0.5, 0.5], [False] * 3),
            _locomo_unit("c2", "x", [0.2, 0.4], [True, False]), _locomo_unit("c2", "y", [0.2, 0.0], [True, True]),
            _locomo_unit("c3", "x", [1.0], [True]), _locomo_unit("c3", "y", [0.0], [False])]
    recs[1]["qa"][2]["status"] = "failed"  # c1 qa2 of y: that item leaves the pair
    f1, acc = [json.loads(json.dumps(x)) for x in locomo_comparisons(recs, ["x", "y"])]
    assert (f1["metric"], f1["n"], f1["n_clusters"]) == ("F1", 5, 3)
    assert f1["test"] == "cluster_permutation_exact"  # 3 clusters: 8 sign patterns
    assert f1["value_a"] == pytest.approx((1 + 1 + 0.2 + 0.4 + 1) / 5)
    assert (acc["metric"], acc["n"], acc["n_clusters"]) == ("accuracy (single judge)", 5, 3)


def test_msc_turns_are_items_and_episodes_clusters():
    recs = []
    for ep in ("e1", "e2"):
        for turn in (2, 4):
            for system, rouge in (("s1", 0.5), ("s2", 0.25)):
                recs.append({"episode": ep, "turn": turn, "system": system, "status": "ok",
                             "metrics": {"rouge_l": rouge, "bleu4": 0.1}, "helpfulness": {"score": 5}})
    out = {c["metric"]: c for c in msc_response_comparisons(recs, ["s1", "s2"], ("bleu4", "rouge_l", "bertscore_minilm"))}
    assert set(out) == {"bleu4", "rouge_l", "helpfulness"}  # no BERTScore values: no comparison
    assert (out["rouge_l"]["n"], out["rouge_l"]["n_clusters"]) == (4, 2)
    assert out["rouge_l"]["diff"] == pytest.approx(0.25) and out["bleu4"]["diff"] == 0


def test_teafarm_counts_a_tie_as_not_passed_and_clusters_by_conversation():
    recs = [{"conversation": c, "question_id": q, "system": s, "status": "ok", "correct": v}
            for c, q, s, v in (("c1", "q1", "a", True), ("c1", "q1", "b", None), ("c1", "q2", "a", True),
                               ("c1", "q2", "b", False), ("c2", "q1", "a", False), ("c2", "q1", "b", True))]
    [c] = teafarm_comparisons(recs, ["a", "b"])
    assert (c["n"], c["n_clusters"], c["metric"]) == (3, 2, "success rate")
    assert (c["value_a"], c["value_b"]) == (pytest.approx(2 / 3), pytest.approx(1 / 3))


def test_head2head_win_rate_is_a_sign_test_over_decisive_cases():
    # 7 wins for A, 1 for B, 2 ties: the two-sided sign test over 8 decisive cases, 2 * 9 / 256.
    verdicts = ["A"] * 7 + ["B"] + ["tie"] * 2
    recs = [{"status": "ok", "verdict": v, "meta": {}} for v in verdicts] + [{"status": "failed", "verdict": None}]
    [c] = head2head_comparisons(recs, ["mem", "base"])
    assert (c["a"], c["b"], c["n"], c["metric"], c["test"]) == ("mem", "base", 10, "win rate", "mcnemar_exact")
    assert c["p_value"] == pytest.approx(18 / 256) and c["diff"] == pytest.approx(0.6)
    # LoCoMo cases carry their conversation: clusters.
    for i, r in enumerate(recs[:10]):
        r["meta"] = {"conversation": f"c{i % 3}"}
    [c] = head2head_comparisons(recs, ["mem", "base"])
    assert c["n_clusters"] == 3 and c["test"].startswith("cluster_permutation")


def test_head2head_many_systems_each_against_the_first_in_its_direction():
    systems = ["s0", "s1", "s2", "s3", "s4"]  # more than MAX_ALL_PAIRS: each against s0
    pairs = {f"{a} vs {b}": {"verdict": "A", "order_disagreement": False}
             for i, a in enumerate(systems) for b in systems[i + 1:]}  # the earlier-named always wins
    recs = [{"status": "ok", "pairs": pairs, "meta": {}} for _ in range(6)]
    out = head2head_comparisons(recs, systems)
    assert [(c["a"], c["b"]) for c in out] == [(s, "s0") for s in systems[1:]]
    assert all(c["diff"] == -1.0 and c["n"] == 6 for c in out)  # s0 beat each of them every time


def test_setting_pairs_against_single_once_per_judge():
    assert setting_pairs(["single", "multi", "agents-2", "agents-3"], ["single", "multi", "multi", "agents-3"]) == \
        [("multi", "single"), ("agents-3", "single")]
    assert setting_pairs(["turns-1", "turns-2"], ["turns-1", "turns-2"]) == [("turns-2", "turns-1")]
    assert setting_pairs(["multi", "agents-2"], ["multi", "multi"]) == []


def test_label_and_score_comparisons_use_the_items_both_settings_judged():
    a = [{"key": f"k{i}", "status": "ok", "human": h, "pred": p} for i, (h, p) in
         enumerate(zip("1212121212", "1212121211"))]
    b = [dict(r, pred="1") for r in a[:8]] + [dict(a[8], status="failed")]
    acc, kappa = label_comparisons(a, b, ("multi", "single"))
    assert (acc.n, kappa.n) == (8, 8) and acc.value_a == 1.0 and acc.value_b == 0.5
    # kappa is 0 for a setting that always says "1" (defined: the humans used both labels)
    assert kappa.value_a == 1.0 and kappa.value_b == 0.0 and kappa.diff == 1.0
    constant_gold = [dict(r, human="1") for r in a]
    undefined = label_comparisons(constant_gold, b, ("multi", "single"))[1]
    assert undefined.diff is None and "reference is constant" in undefined.reason
    rows = [{"key": f"k{i}", "status": "ok", "context_index": i // 3, "human": {"nat": float(i % 4)},
             "pred": {"nat": float(i % 4 + (i % 2))}} for i in range(12)]
    other = [dict(r, pred={"nat": float(11 - i)}) for i, r in enumerate(rows)]
    rho, tau = score_comparisons(rows, other, ("multi", "single"), ["nat"], cluster="context_index")
    assert (rho.metric, tau.metric) == ("nat spearman", "nat kendall")
    assert rho.n == 12 and rho.n_clusters == 4 and rho.diff > 0


# --- end to end, offline -----------------------------------------------------------------------


@pytest.mark.slow
@needs_shared("longmemeval")
def test_longmemeval_two_systems(tmp_path):
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(json.loads(shared("longmemeval", "longmemeval_oracle.json").read_text())[:6]))
    out = tmp_path / "run"
    assert main(["bench", "longmemeval", "--data", str(data), "--systems", "full_context,retrieval", *OFFLINE,
                 "--judge", "single", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [c] = read_comparisons(summary)
    assert (c.a, c.b, c.n, c.metric, c.test) == ("full_context", "retrieval", 6, "accuracy (single judge)",
                                                 "mcnemar_exact")
    assert c.value_a == pytest.approx(summary["methods"]["full_context"]["qa"]["single"]["overall"])
    assert c.value_b == pytest.approx(summary["methods"]["retrieval"]["qa"]["single"]["overall"])
    report = (out / "report.md").read_text()
    assert "## Paired comparisons" in report and "| full_context vs retrieval | accuracy (single judge) |" in report


@pytest.mark.slow
@needs_shared("locomo")
def test_locomo_two_conversations_are_two_clusters(tmp_path):
    out = tmp_path / "run"
    assert main(["bench", "locomo", "--data", str(SHARED / "locomo" / "locomo_dev2.json"), "--systems",
                 "full_context,retrieval", *OFFLINE, "--max-questions", "3", "--judge", "single",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    got = {c.metric: c for c in read_comparisons(summary)}
    assert set(got) == {"F1", "accuracy (single judge)"}
    n_qa = summary["systems"]["retrieval"]["n_qa_ok"]
    assert n_qa == 6 and all((c.n, c.n_clusters) == (6, 2) for c in got.values())
    assert got["F1"].value_b == pytest.approx(summary["systems"]["retrieval"]["overall"]["f1"])
    assert got["F1"].test == "cluster_permutation_exact"
    assert "| full_context vs retrieval | F1 |" in (out / "report.md").read_text()


def test_msc_response_three_systems_all_pairs(tmp_path):
    out = tmp_path / "run"
    assert main(["bench", "msc-response", "--data", str(FIXTURES / "msc_release_tiny.jsonl"), "--systems",
                 "retrieval,full_context,session_summaries", "--embedder", "hash", "--turns-per-episode", "2",
                 "--no-bertscore", "--no-helpfulness", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    comps = read_comparisons(summary)
    assert {(c.a, c.b) for c in comps} == {("retrieval", "full_context"), ("retrieval", "session_summaries"),
                                           ("full_context", "session_summaries")}
    assert {c.metric for c in comps} == {"bleu4", "rouge_l"}
    assert all((c.n, c.n_clusters) == (summary["n_turns"], summary["n_episodes"]) for c in comps)
    rouge = by_pair(summary, "rouge_l")[("retrieval", "full_context")]
    assert rouge.value_a == pytest.approx(summary["systems"]["retrieval"]["metrics"]["rouge_l"]["mean"])
    assert "## Paired comparisons" in (out / "report.md").read_text()


@needs_shared("longmemeval")
def test_head2head_two_systems(tmp_path):
    data = tmp_path / "lme3.json"
    data.write_text(json.dumps(json.loads(shared("longmemeval", "longmemeval_oracle.json").read_text())[:3]))
    out = tmp_path / "h2h"
    assert main(["bench", "head2head", "--systems", "full_context,retrieval", "--data", str(data), *OFFLINE,
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [c] = read_comparisons(summary)
    assert (c.a, c.b, c.n, c.metric, c.n_clusters) == ("full_context", "retrieval", summary["n"], "win rate", None)
    assert c.diff == pytest.approx(summary["wins"]["rate"] - summary["losses"]["rate"])
    assert "| full_context vs retrieval | win rate |" in (out / "report.md").read_text()


@pytest.mark.slow
def test_head2head_three_systems(tmp_path, capsys):
    out = tmp_path / "h3"
    assert main(["bench", "head2head", "--systems", "full_context,retrieval,session_summaries", "--data",
                 str(FIXTURES / "lme_tiny.json"), *OFFLINE, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    comps = by_pair(summary)
    assert set(comps) == {("full_context", "retrieval"), ("full_context", "session_summaries"),
                          ("retrieval", "session_summaries")}
    for (a, b), c in comps.items():
        p = summary["pairs"][f"{a} vs {b}"]
        assert c.n == p["n"] == 5 and c.diff == pytest.approx(p["wins"]["rate"] - p["losses"]["rate"])
    assert "## Paired comparisons" in (out / "report.md").read_text()
    captured = capsys.readouterr()
    printed = captured.out + captured.err  # the console's table, wherever the CLI's console writes
    assert "paired differences" in printed and printed.count("win rate") == 3


@needs_shared("theanine")
def test_teafarm_two_systems(tmp_path):
    out = tmp_path / "tf"
    assert main(["bench", "teafarm", "--data", str(SHARED / "theanine" / "sample_dialogue.json"), "--systems",
                 "theanine,retrieval", *OFFLINE, "--per-speaker", "2", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [c] = read_comparisons(summary)
    assert (c.a, c.b, c.metric, c.n, c.n_clusters) == ("theanine", "retrieval", "success rate",
                                                       summary["n_questions"], summary["n_conversations"])
    assert c.value_a == pytest.approx(summary["systems"]["theanine"]["success_rate"])
    assert "| theanine vs retrieval | success rate |" in (out / "report.md").read_text()


@pytest.mark.slow
@needs_shared("faireval")
def test_faireval_settings_against_the_single_judge(tmp_path):
    out = tmp_path / "fe"
    assert main(["bench", "faireval", "--limit", "6", "--setting", "single", "--setting", "multi",
                 "--sweep", "agents=1,3", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    comps = read_comparisons(summary)
    # single and multi by default, then the sweep's points: each against single, once per judge
    # (agents-1 is not the single judge: it debates for 2 turns)
    assert [(c.a, c.b, c.metric) for c in comps] == [
        (s, "single", m) for s in ("multi", "agents-1", "agents-3") for m in ("accuracy", "kappa")]
    for c in comps:
        setting = summary["settings"].get(c.a) or next(p for p in summary["sweeps"]["agents"] if p["setting"] == c.a)
        assert c.n == 6 and c.value_a == pytest.approx(setting["metrics"][c.metric]["value"])
        assert c.test == ("mcnemar_exact" if c.metric == "accuracy" else "permutation_exact")
    report = (out / "report.md").read_text()
    assert "## Paired comparisons" in report and "| multi vs single | accuracy |" in report
    # With sweeps only, the first point is the baseline.
    out2 = tmp_path / "sweep-only"
    assert main(["bench", "faireval", "--limit", "6", "--sweep", "agents=1,3", "--out", str(out2)]) == 0
    comps = read_comparisons(json.loads((out2 / "summary.json").read_text()))
    assert [(c.a, c.b) for c in comps] == [("agents-3", "agents-1")] * 2


@pytest.mark.slow
@needs_shared("topical_chat")
def test_topical_chat_correlation_differences(tmp_path):
    out = tmp_path / "tc"
    assert main(["bench", "topical-chat", "--limit", "12", "--baselines", "", "--aspects", "naturalness",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    comps = read_comparisons(summary)
    assert [(c.a, c.b, c.metric) for c in comps] == [("multi", "single", "naturalness spearman"),
                                                     ("multi", "single", "naturalness kendall")]
    rho = comps[0]
    assert rho.n == 12 and rho.n_clusters == len({r["context_index"] for r in _records(out / "multi")})
    single = summary["settings"]["single"]["metrics"]["aspects"]["naturalness"]["spearman"]["value"]
    assert rho.value_b == pytest.approx(single) if single is not None else rho.reason


def _records(path: Path) -> list[dict]:
    return read_jsonl(path / "samples.jsonl")
