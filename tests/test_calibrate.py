"""`chateval calibrate`: several annotators' labels (reference and ceiling), grid parsing and
bad grids, a grid over small labelled fixtures end to end (offline), a resumed interruption and
cache reuse counted at a fake OpenAI server, the --write-preset round trip, FairEval reproducing
`bench faireval`'s single/multi rows, Topical-Chat read as shipped, the viewer, and Ray workers."""

from __future__ import annotations

import asyncio
import hashlib
from markupsafe import escape as _escape
import json
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from chateval.calibration import (CalibrateConfig, CalibrationSetting, acalibrate, calibrate, load_grid,
                                      parse_setting, read_calibration)
from chateval.cli import main
from chateval.util.errors import ConfigError, InputError
from chateval.evaluation.inputs import load_samples
from chateval.stats.labels import leave_one_out, reference_label
from chateval.models import UsageTotals
from chateval.paired import read_comparisons
from chateval.runs.progress import RunProgress
from chateval.testing.fake_openai import FakeOpenAIServer, Fault

from .conftest import FIXTURES, read_jsonl

PAIRS = FIXTURES / "calibrate_pairwise.jsonl"
SCORES = FIXTURES / "calibrate_scores.jsonl"
FAIREVAL_TINY = FIXTURES / "faireval_tiny.jsonl"
TOPICAL_TINY = FIXTURES / "topical_chat_tiny.json"


def one_line_error(err: str, *needles: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:") and "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def cli(*args: str) -> int:
    return main(["calibrate", *args])


# --- several annotators ---------------------------------------------------------------------
def test_reference_is_the_majority_or_the_mean():
    assert reference_label("pairwise", ["1", "1", "2"]) == "1"
    assert reference_label("pairwise", ["1", "2"]) == "tie"  # split people: neither answer preferred
    assert reference_label("pairwise", "answer_2") == "2"
    assert reference_label("correctness", [True, "false", "correct"]) is True
    assert reference_label("correctness", [True, False]) is None  # unresolved: left out
    assert reference_label("score", [7, 8, 9]) == pytest.approx(8.0)
    assert reference_label("score", [{"a": 1, "b": 3}, {"a": 3}]) == {"a": 2.0, "b": 3.0}


def test_leave_one_out_pairs_hand_computed():
    # Each annotator against the others' majority: "1" vs maj("1","2")=tie, "1" vs tie, "2" vs maj("1","1")="1".
    assert leave_one_out("pairwise", ["1", "1", "2"]) == [("1", "tie"), ("1", "tie"), ("2", "1")]
    assert leave_one_out("score", [2, 4, 9]) == [(2.0, 6.5), (4.0, 5.5), (9.0, 3.0)]
    assert leave_one_out("pairwise", ["1"]) == [] and leave_one_out("pairwise", "1") == []


def test_label_lists_are_validated_with_the_line_and_the_annotator(tmp_path):
    ok = tmp_path / "ok.jsonl"
    ok.write_text(json.dumps({"id": "a", "question": "q", "answer_1": "x", "answer_2": "y", "label": ["1", "tie"]})
                  + "\n")
    assert load_samples(ok, "pairwise")[0][0].label == ["1", "tie"]
    for task, label, needle in [("pairwise", ["1", "3"], "label[1]"), ("pairwise", [], "empty list"),
                                ("pairwise", [["1"]], "label[0]"), ("score", [1, {"a": 2}], "mixes"),
                                ("correctness", [True, "maybe"], "label[1]")]:
        bad = tmp_path / "bad.jsonl"
        rec = {"id": "a", "question": "q", "answer": "x", "answer_1": "x", "answer_2": "y", "reference": "r",
               "label": label}
        bad.write_text("\n" + json.dumps(rec) + "\n")
        with pytest.raises(InputError) as e:
            load_samples(bad, task)
        assert "bad.jsonl:2: field 'label" in str(e.value) and needle in str(e.value), str(e.value)


# --- the grid -------------------------------------------------------------------------------
def test_setting_strings_parse_presets_values_and_lists():
    s = parse_setting("big=one_by_one_3x2,turns=3,personas=critic,scientist,swap=true")
    assert s == CalibrationSetting(name="big", preset="one_by_one_3x2",
                                   overrides={"turns": 3, "personas": ["critic", "scientist"], "swap": True})
    assert parse_setting("s=strategy=simultaneous,agents=4").overrides == {"strategy": "simultaneous", "agents": 4}
    assert parse_setting("b=single").preset == "single"
    for bad, needle in [("noequals", "expected NAME=PRESET"), ("x=", "expected NAME=PRESET"),
                        ("x=a,b", "'b' is not key=value"), ("x=task=score", "the input fixes the task"),
                        ("x=cache=false", "not a judge setting"), ("a/b=single", "setting name"),
                        ("x=turns=2,turns=3", "given twice")]:
        with pytest.raises(ConfigError, match=needle):
            parse_setting(bad)


def test_grid_files_list_or_mapping(tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text("settings:\n  - {name: one, preset: single}\n  - name: big\n    preset: one_by_one_3x2\n    turns: 3\n")
    b = tmp_path / "b.yaml"
    b.write_text("settings:\n  one: single\n  big: {preset: one_by_one_3x2, turns: 3}\n")
    assert load_grid(a) == load_grid(b) == [CalibrationSetting(name="one", preset="single"),
                                            CalibrationSetting(name="big", preset="one_by_one_3x2",
                                                               overrides={"turns": 3})]
    c = tmp_path / "c.yaml"
    c.write_text("setting: []\n")
    with pytest.raises(ConfigError, match="unknown key 'setting'"):
        load_grid(c)


@pytest.mark.parametrize("args, needles", [
    (["--setting", "x=no_such_preset"], ["setting 'x'", "unknown preset"]),
    (["--setting", "x=personas=nobody"], ["setting 'x'", "nobody"]),
    (["--setting", "x=strategy=shouting"], ["setting 'x'", "shouting"]),
    (["--setting", "x=turns=0"], ["setting 'x'", "turns"]),
    (["--setting", "x=single", "--setting", "x=chateval_default"], ["'x' is given twice"]),
    (["--setting", "x=single", "--baseline", "nope"], ["--baseline 'nope'"]),
    (["--setting", "x=single", "--write-preset", "best.txt"], [".yaml"]),
])
def test_a_bad_grid_fails_whole_before_anything_runs(tmp_path, capsys, args, needles):
    out = tmp_path / "out"
    code = cli(str(PAIRS), "--out", str(out), *args)
    assert code == 2
    one_line_error(capsys.readouterr().err, *needles)
    assert not out.exists()  # nothing judged, nothing written


def test_bad_input_and_taken_out_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "question": "q", "answer_1": "x", "answer_2": "y", "label": "maybe"}) + "\n")
    assert cli(str(bad), "--out", str(tmp_path / "o"), "--setting", "x=single") == 2
    one_line_error(capsys.readouterr().err, "bad.jsonl:1", "field 'label'")
    assert not (tmp_path / "o").exists()
    assert cli(str(PAIRS), "--out", str(tmp_path / "o2"), "--setting", "x=single", "--limit", "2") == 0
    capsys.readouterr()
    before = (tmp_path / "o2" / "x" / "samples.jsonl").read_text()
    assert cli(str(PAIRS), "--out", str(tmp_path / "o2"), "--setting", "x=single") == 2
    one_line_error(capsys.readouterr().err, "already holds a run")
    assert (tmp_path / "o2" / "x" / "samples.jsonl").read_text() == before


# --- end to end, offline ----------------------------------------------------------------------
def _verdicts(run_dir: Path, key: str = "winner") -> dict[str, object]:
    return {r["id"]: (r["verdict"] or {}).get(key) for r in read_jsonl(run_dir / "samples.jsonl")}


@pytest.mark.slow
def test_default_grid_over_annotator_lists_offline(tmp_path):
    out = tmp_path / "cal"
    summary = calibrate(PAIRS, out, model="offline")
    names = ["single", "chateval_default", "one_by_one_3x2", "simultaneous_3x2", "simultaneous_summarizer_3x2"]
    assert list(summary.settings) == names
    assert summary.offline and "heuristic" in summary.note and summary.complete
    assert read_calibration(out) == summary  # one reader for report, viewer and notebooks
    labels = {r["id"]: r["label"] for r in read_jsonl(PAIRS)}
    gold = {i: reference_label("pairwise", lab) for i, lab in labels.items()}
    for s in summary.settings.values():
        sub = out / s.run_dir
        assert json.loads((sub / "config.json").read_text())["judging"]["strategy"] == s.panel.strategy
        pred = _verdicts(sub)
        assert len(pred) == 10
        ids = sorted(gold)
        acc = sum(pred[i] == gold[i] for i in ids) / len(ids)
        assert s.agreement["accuracy"].value == pytest.approx(acc)
        assert s.agreement["kappa"].value == pytest.approx(cohen_kappa_score([gold[i] for i in ids],
                                                                             [pred[i] for i in ids]))
        lo, hi = s.agreement["accuracy"].ci95
        assert lo <= acc <= hi
        assert s.per_item.calls == pytest.approx(
            {"single": 1, "chateval_default": 4}.get(s.setting.name, s.per_item.calls))
    assert summary.settings["single"].panel.agents == 1 and summary.settings["single"].panel.turns == 1
    assert summary.settings["one_by_one_3x2"].panel.agents == 3 and summary.settings["one_by_one_3x2"].panel.turns == 2
    vs = summary.settings["chateval_default"].vs_baseline
    assert vs["accuracy"].test == "mcnemar_exact" and vs["kappa"].test.startswith("permutation")
    listed = read_comparisons(json.loads((out / "summary.json").read_text()))
    assert len(listed) == 2 * 4 and all(c.b == "single" for c in listed)
    # The ceiling: every annotator against the others' majority, pooled (recomputed here).
    pairs = [p for lab in labels.values() for p in leave_one_out("pairwise", lab)]
    assert summary.ceiling.n_pairs == len(pairs) and summary.ceiling.n_items == 10
    assert summary.ceiling.agreement["accuracy"].value == pytest.approx(sum(a == b for a, b in pairs) / len(pairs))
    report = (out / "report.md").read_text()
    assert "offline (heuristic, not an LLM)" in report and summary.conclusion in report
    assert "Human ceiling" in report and (out / "agreement_kappa.png").stat().st_size > 1000


@pytest.mark.slow
def test_score_grid_spearman_and_kendall_against_scipy(tmp_path):
    out = tmp_path / "cal"
    summary = calibrate(SCORES, out, settings=["single=single", "panel=chateval_default"], model="offline")
    assert summary.task == "score" and summary.primary_metric == "spearman"
    labels = {r["id"]: r["label"] for r in read_jsonl(SCORES)}
    for s in summary.settings.values():
        pred = _verdicts(out / s.run_dir, "score")
        ids = sorted(labels)
        human = [sum(labels[i]) / len(labels[i]) for i in ids]
        mine = [pred[i] for i in ids]
        assert s.agreement["spearman"].value == pytest.approx(stats.spearmanr(mine, human).statistic)
        assert s.agreement["kendall"].value == pytest.approx(stats.kendalltau(mine, human).statistic)
    assert summary.ceiling is not None and summary.ceiling.agreement["spearman"].n == 26
    assert "spearman" in summary.settings["panel"].vs_baseline


# --- resume and cache, counted at a fake server -------------------------------------------------
def _fake(server: FakeOpenAIServer) -> list[str]:
    return ["--model", "openai-compatible/judge", "--base-url", server.base_url, "--max-retries", "0"]


@pytest.mark.slow
def test_an_interrupted_calibration_resumes_without_rejudging(tmp_path, capsys):
    out = tmp_path / "cal"
    grid = ["--setting", "single=single", "--setting", "panel=chateval_default"]
    with FakeOpenAIServer() as server:
        # Interrupted after 4 items of each setting (as a killed run leaves it: finished items on disk).
        assert cli(str(PAIRS), "--out", str(out), *grid, *_fake(server), "--no-cache", "--limit", "4") == 0
        assert len(server.requests) == 4 * 1 + 4 * 4  # single: 1 call per item; 2 agents x 2 turns: 4
        first = {n: read_jsonl(out / n / "samples.jsonl") for n in ("single", "panel")}
        server.reset()
        # A fault on the next request: one item of `single` fails and is redone by the second --resume.
        server.script([Fault("500")])
        assert cli(str(PAIRS), "--out", str(out), *grid, *_fake(server), "--no-cache", "--resume") == 1
        assert len(server.requests) == 6 * 1 + 6 * 4  # only the 6 unfinished items, each once
        s = read_calibration(out)
        assert not s.complete and s.setting("single").n_failed == 1
        server.reset()
        assert cli(str(PAIRS), "--out", str(out), *grid, *_fake(server), "--no-cache", "--resume") == 0
        assert len(server.requests) == 1  # the failed item alone
    capsys.readouterr()
    s = read_calibration(out)
    assert s.complete and all(r.n_ok == 10 for r in s.settings.values())
    for n in ("single", "panel"):
        rows = read_jsonl(out / n / "samples.jsonl")
        assert len(rows) == 10 and len({r["id"] for r in rows}) == 10
        assert [r for r in rows if r["id"] in {x["id"] for x in first[n]}] == first[n]  # finished items untouched


@pytest.mark.slow
def test_a_second_calibration_reuses_cached_calls(tmp_path, capsys):
    grid = ["--setting", "single=single", "--setting", "panel=chateval_default"]
    with FakeOpenAIServer() as server:
        assert cli(str(PAIRS), "--out", str(tmp_path / "a"), *grid, *_fake(server)) == 0
        assert len(server.requests) == 10 + 40
        server.reset()
        assert cli(str(PAIRS), "--out", str(tmp_path / "b"), *grid, *_fake(server)) == 0
        assert len(server.requests) == 0
    capsys.readouterr()
    a, b = read_calibration(tmp_path / "a"), read_calibration(tmp_path / "b")
    for x, y in zip(a.settings.values(), b.settings.values()):
        assert x.agreement == y.agreement and x.per_item.calls == y.per_item.calls
        assert y.usage["calls"] == 0 and y.usage["cached_calls"] == x.usage["calls"]


# --- presets --------------------------------------------------------------------------------
def test_write_preset_round_trips_through_evaluate(tmp_path, capsys):
    out, preset = tmp_path / "cal", tmp_path / "best.yaml"
    assert cli(str(PAIRS), "--out", str(out), "--setting", "single=single",
               "--setting", "wide=one_by_one_3x2,turns=1", "--write-preset", str(preset)) == 0
    s = read_calibration(out)
    text = preset.read_text()
    assert text.startswith("# Written by chateval calibrate") and "OFFLINE" in text
    again = tmp_path / "again"
    assert main(["evaluate", str(PAIRS), "--preset", str(preset), "--out", str(again)]) == 0
    capsys.readouterr()
    best = s.setting(s.best)
    assert _verdicts(again) == _verdicts(out / best.run_dir)
    judged = json.loads((again / "config.json").read_text())
    assert judged["config"]["strategy"] == best.panel.strategy and judged["config"]["personas"] == best.panel.personas
    assert judged["config"]["turns"] == best.panel.turns
    # A second write refuses to replace the file (nothing runs), unless --overwrite.
    assert cli(str(PAIRS), "--out", str(tmp_path / "c2"), "--setting", "x=single", "--write-preset", str(preset)) == 2
    one_line_error(capsys.readouterr().err, "exists")


# --- data sets as shipped ------------------------------------------------------------------------
@pytest.mark.slow
def test_faireval_reproduces_the_bench_single_and_multi_rows(tmp_path, capsys):
    bench_out, cal_out = tmp_path / "bench", tmp_path / "cal"
    assert main(["bench", "faireval", "--data", str(FAIREVAL_TINY), "--out", str(bench_out), "--model", "offline"]) == 0
    assert cli(str(FAIREVAL_TINY), "--out", str(cal_out), "--setting", "single=single",
               "--setting", "multi=chateval_default") == 0
    capsys.readouterr()
    bench = json.loads((bench_out / "summary.json").read_text())
    cal = read_calibration(cal_out)
    assert cal.input_format == "faireval" and cal.task == "pairwise"
    for name in ("single", "multi"):
        b_rows = {r["key"]: r["pred"] for r in read_jsonl(bench_out / name / "samples.jsonl")}
        c_rows = {k: v for k, v in _verdicts(cal_out / name).items()}
        assert c_rows == b_rows and len(b_rows) == 6
        r = cal.setting(name)
        assert r.panel.swap is True  # as the bench: both answer orders
        assert r.agreement["accuracy"].value == pytest.approx(bench["settings"][name]["metrics"]["accuracy"]["value"])
        k = bench["settings"][name]["metrics"]["kappa"]["value"]
        assert r.agreement["kappa"].value == (None if k is None else pytest.approx(k))
    # One comparison, one p-value: the bench's multi-vs-single kappa difference is calibrate's.
    bench_cmp = {(c.a, c.b, c.metric): c for c in read_comparisons(bench)}
    for metric in ("kappa", "accuracy"):
        mine, theirs = cal.setting("multi").vs_baseline[metric], bench_cmp["multi", "single", metric]
        assert (mine.diff, mine.p_value, mine.test, mine.n) == (theirs.diff, theirs.p_value, theirs.test, theirs.n)


def test_topical_chat_is_read_as_shipped(tmp_path, capsys):
    out = tmp_path / "cal"
    assert cli(str(TOPICAL_TINY), "--out", str(out), "--setting", "single=single", "--limit", "6") == 0
    capsys.readouterr()
    s = read_calibration(out)
    assert s.input_format == "topical-chat" and s.task == "score" and s.n_items == 6
    rows = read_jsonl(out / "input.jsonl")
    assert len(rows) == 9 and set(rows[0]["aspects"]) == {"naturalness", "coherence", "engagingness", "groundedness"}
    assert set(s.settings["single"].agreement) == {"spearman", "kendall"}


def test_the_viewer_shows_a_calibration(tmp_path, capsys):
    out = tmp_path / "cal"
    calibrate(PAIRS, out, settings=["single=single", "panel=chateval_default"], model="offline")
    html = tmp_path / "view.html"
    assert main(["view", str(out), "--out", str(html)]) == 0
    capsys.readouterr()
    page = html.read_text()
    assert "agreement_kappa.png" in page and "simultaneous" not in page  # the calibration's plots, only its settings
    assert page.count("p10") >= 2  # the items of both settings' sub-runs
    # The answer first: the recommendation and the cost-against-agreement plot open the run's section.
    s = read_calibration(out)
    said = str(_escape(s.recommendation))  # as the page's template escapes it
    assert s.recommendation and said in page
    assert page.index(said) < page.index('class="cost-agreement"') < page.index('class="kv settings"')



@pytest.mark.slow
def test_ray_executor_judges_on_workers_and_equals_a_local_run(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chateval[ray]')")
    grid = {"settings": ["single=single", "panel=chateval_default"], "model": "offline", "cache": False, "limit": 4}
    local = calibrate(PAIRS, tmp_path / "local", **grid)
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=150 * 1024**2, log_to_driver=False)
    try:
        bar = RunProgress(UsageTotals(), Console(stderr=True, quiet=True))
        cfg = CalibrateConfig.merged_from({"input": str(PAIRS), "out": str(tmp_path / "ray"), "executor": "ray",
                                           "settings": [parse_setting(s) for s in grid["settings"]],
                                           **{k: v for k, v in grid.items() if k != "settings"}})
        remote = asyncio.run(acalibrate(cfg, progress=bar))
    finally:
        ray.shutdown()
    assert bar.totals.calls == 0  # the driver's model layer made no call: the workers judged
    for name in ("single", "panel"):
        assert remote.setting(name).usage["calls"] == local.setting(name).usage["calls"] > 0
        assert _verdicts(tmp_path / "ray" / name) == _verdicts(tmp_path / "local" / name)
        assert remote.setting(name).agreement == local.setting(name).agreement


def test_aspect_labels_set_the_judged_aspects_and_a_grid_file_runs(tmp_path, capsys):
    data = tmp_path / "aspects.jsonl"
    rows = [{"id": f"a{i}", "question": f"q{i}", "answer": "x" * (5 + 7 * i),
             "label": [{"clarity": 1 + i % 5, "depth": 1 + (i * 3) % 5}, {"clarity": 2 + i % 4, "depth": 2}]}
            for i in range(8)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    grid = tmp_path / "grid.yaml"
    grid.write_text("settings:\n  single: single\n  wide: {preset: one_by_one_3x2, turns: 1}\n")
    assert cli(str(data), "--out", str(tmp_path / "cal"), "--grid", str(grid)) == 0
    capsys.readouterr()
    s = read_calibration(tmp_path / "cal")
    assert list(s.settings) == ["single", "wide"] and s.task == "score"
    assert s.setting("single").config["aspects"] == ["clarity", "depth"]
    first = read_jsonl(tmp_path / "cal" / "single" / "samples.jsonl")[0]
    assert set(first["verdict"]["scores"]) == {"clarity", "depth"}
    assert s.setting("wide").agreement["spearman"].n == 8 and s.ceiling.n_pairs == 16
    bad = tmp_path / "bad.yaml"
    bad.write_text("settings:\n  - {name: ok, preset: single}\n  - {name: broken, preset: single, turns: zero}\n")
    assert cli(str(data), "--out", str(tmp_path / "cal2"), "--grid", str(bad)) == 2
    one_line_error(capsys.readouterr().err, "setting 'broken'", "turns")
    assert not (tmp_path / "cal2").exists()


def test_items_sharing_a_cluster_are_resampled_together(tmp_path):
    import numpy as np

    rows = read_jsonl(PAIRS)
    groups = {"p1": "a", "p2": "a", "p3": "a", "p4": "b", "p5": "b", "p6": "c", "p7": "c", "p8": "d", "p9": "d",
              "p10": "d"}
    data = tmp_path / "clustered.jsonl"
    data.write_text("".join(json.dumps(r | {"cluster": groups[r["id"]]}) + "\n" for r in rows))
    s = calibrate(data, tmp_path / "cal", settings=["single=single", "panel=chateval_default"], model="offline",
                  resamples=500)
    assert s.n_clusters == 4
    d = s.setting("panel").vs_baseline["accuracy"]
    assert d.n_clusters == 4 and d.test.startswith("cluster_")
    assert s.setting("panel").vs_baseline["kappa"].n_clusters == 4
    # The accuracy interval, recomputed here from whole-cluster draws (seed 0, as the calibration's).
    ids = [r["id"] for r in rows]  # input order: the order the calibration keeps
    pred = _verdicts(tmp_path / "cal" / "single")
    hit = np.array([float(pred[i] == reference_label("pairwise", r["label"])) for i, r in zip(ids, rows)])
    names = list(dict.fromkeys(groups[i] for i in ids))
    members = [np.array([k for k, i in enumerate(ids) if groups[i] == g]) for g in names]
    draws = np.random.default_rng(0).integers(0, len(names), size=(500, len(names)))
    boots = [hit[np.concatenate([members[c] for c in row])].mean() for row in draws]
    assert s.setting("single").agreement["accuracy"].ci95 == pytest.approx(np.percentile(boots, [2.5, 97.5]).tolist())
    assert "4 clusters" in (tmp_path / "cal" / "report.md").read_text()


# --- the written preset is the measured judge (issue 37) -------------------------------------------
def _coin(body: dict) -> str:
    """A content-keyed verdict: the same request always gets the same reply, and the two answer
    orders of one item agree only sometimes (so escalation screens some items and debates others)."""
    h = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()[0]
    return "Score of Assistant 1: 7\nScore of Assistant 2: 4" if h % 2 else "Score of Assistant 1: 4\nScore of Assistant 2: 7"


def _bodies(server: FakeOpenAIServer) -> list[str]:
    return sorted(json.dumps(b, sort_keys=True) for b in server.requests)  # items run concurrently


def test_written_preset_reproduces_the_settings_verdicts_and_calls(tmp_path, capsys):
    out, preset = tmp_path / "cal", tmp_path / "best.yaml"
    tie = "No verdict from me."  # the baseline's server: nothing readable, so no defined agreement
    with FakeOpenAIServer(responder=lambda b: tie) as base, FakeOpenAIServer(responder=_coin) as other:
        spec = f"esc=chateval_default,escalate=true,stop_early=true,base_url={other.base_url}"
        # Exit 1: the baseline judged nothing (its server's replies are unreadable), so 'esc' is the answer.
        assert cli(str(PAIRS), "--out", str(out), "--setting", "single=single", "--setting", spec, *_fake(base),
                   "--no-cache", "--write-preset", str(preset)) == 1
        measured = _bodies(other)
        server_calls = len(measured)
        other.reset()
        text = preset.read_text()
        written = yaml.safe_load(text)
        assert written["escalate"] is True and written["stop_early"] is True
        assert written["base_url"] == other.base_url and written["model"] == "openai-compatible/judge"
        again = tmp_path / "again"
        assert main(["evaluate", str(PAIRS), "--preset", str(preset), "--out", str(again), "--no-cache",
                     "--max-retries", "0"]) == 0
        assert _bodies(other) == measured  # the same calls, body for body, at the same endpoint
        assert base.requests and all(b["model"] == "judge" for b in base.requests)
    capsys.readouterr()
    s = read_calibration(out)
    assert s.recommended == "esc" and "'esc'" in text
    assert _verdicts(again) == _verdicts(out / "esc")
    assert s.setting("single").n_ok == 0 and s.setting("esc").n_ok == 10
    # What the preset had to carry: some items settled by the screen alone (2 calls), some debated,
    # some debates stopped early. Without escalate and stop_early every item costs 4 other calls.
    rows = read_jsonl(out / "esc" / "samples.jsonl")
    assert {r["escalation"]["escalated"] for r in rows} == {True, False}
    assert any((r.get("stop_early") or {}).get("rounds_skipped") for r in rows)
    assert s.setting("esc").per_item.calls == pytest.approx(server_calls / 10)
    summary = json.loads((again / "summary.json").read_text())
    assert summary["usage"]["calls"] == server_calls


def test_cost_per_item_does_not_depend_on_which_setting_ran_first(tmp_path, capsys):
    # one_by_one and simultaneous share their first debater's first call: whichever runs second
    # finds it in the cache. Its cost per item counts it at the price it had when answered.
    grid = ["single=single", "one_by_one_3x2", "simultaneous_3x2"]
    runs = {}
    with FakeOpenAIServer() as server:
        for name, order in (("ab", grid), ("ba", [grid[0], grid[2], grid[1]])):
            settings = [s if "=" in s else f"{s}={s}" for s in order]
            runs[name] = calibrate(PAIRS, tmp_path / name, settings=settings, model="openai-compatible/judge",
                                   base_url=server.base_url, cache_dir=str(tmp_path / f"cache-{name}"),
                                   price=["judge=1,2"], limit=4, max_retries=0)
    capsys.readouterr()
    ab, ba = runs["ab"], runs["ba"]
    assert ab.setting("simultaneous_3x2").usage["cached_calls"] > 0  # ran second: found shared calls
    assert ba.setting("one_by_one_3x2").usage["cached_calls"] > 0
    for name in grid:
        name = name.partition("=")[0]
        x, y = ab.setting(name).per_item, ba.setting(name).per_item
        assert x.cost_usd is not None and x.cost_usd > 0
        assert x.cost_usd == pytest.approx(y.cost_usd) and x.calls == y.calls and x.tokens == y.tokens
    # What the cold price is: every call of the setting, answered or from the cache, at the table price.
    u = ab.setting("simultaneous_3x2").usage
    tokens_in, tokens_out = u["prompt_tokens"] + u["cached_prompt_tokens"], u["completion_tokens"] + u["cached_completion_tokens"]
    assert ab.setting("simultaneous_3x2").per_item.cost_usd == pytest.approx((tokens_in * 1 + tokens_out * 2) / 1e6 / 4)


# --- the answer: ties to the cheaper setting, the cheapest of the best's statistical ties ---------------
def test_an_exact_tie_goes_to_the_cheaper_setting_not_the_first(tmp_path, capsys):
    out, preset = tmp_path / "cal", tmp_path / "best.yaml"
    # Offline, both panels give the same verdicts on this file: an exact tie, 6 calls against 4.
    assert cli(str(PAIRS), "--out", str(out), "--setting", "big=one_by_one_3x2", "--setting", "small=chateval_default",
               "--baseline", "big", "--write-preset", str(preset)) == 0
    capsys.readouterr()
    s = read_calibration(out)
    assert s.setting("big").agreement["kappa"].value == s.setting("small").agreement["kappa"].value
    assert s.best == "small" and s.recommended == "small" and s.indistinguishable == ["small", "big"]
    assert s.vs_best["big"].diff == 0 and s.vs_best["big"].p_value == 1
    assert s.recommendation.startswith("Recommended: 'small'") and "4.0 calls" in s.recommendation
    assert yaml.safe_load(preset.read_text())["personas"] == ["general_public", "critic"]
    report = (out / "report.md").read_text()
    # The answer first: the recommendation and the cost plot before the settings table.
    assert report.index("## Recommendation") < report.index(s.recommendation) < report.index("## Settings")
    assert report.index("cost_agreement.png") < report.index("## Settings") and (out / "cost_agreement.png").is_file()


def _result(name: str, kappa: float, calls: float, cost: float | None, vs_base: float | None = None):
    from chateval.calibration import Panel, PerItem, SettingResult, Stat
    from chateval.paired import PairedDifference

    vs = {} if vs_base is None else {"kappa": PairedDifference(metric="kappa", a=name, b="single", n=50,
                                                               diff=vs_base, ci95=(vs_base - 0.1, vs_base + 0.1),
                                                               p_value=0.01)}
    return SettingResult(setting=CalibrationSetting(name=name, preset=name), run_dir=name,
                         panel=Panel(model="m", strategy="one_by_one", agents=2, turns=2, personas=["a"],
                                     aggregate="mean", swap=False),
                         config={}, n_items=50, n_ok=50, n_failed=0, complete=True,
                         agreement={"kappa": Stat(value=kappa, ci95=[kappa - 0.1, kappa + 0.1], n=50)},
                         usage={}, per_item=PerItem(calls=calls, tokens=100 * calls, cost_usd=cost), vs_baseline=vs)


def test_the_cheapest_of_the_settings_indistinguishable_from_the_best_is_recommended():
    from chateval.calibration import CalibrationSummary
    from chateval.calibration.recommend import recommend
    from chateval.calibration.report import conclude
    from chateval.paired import PairedDifference

    results = {r.setting.name: r for r in [
        _result("single", 0.20, 1, 0.0002),
        _result("big", 0.50, 12, 0.0030, vs_base=0.30),  # the best
        _result("mid", 0.46, 4, 0.0009, vs_base=0.26),  # not significantly worse than big: recommended
        _result("pricey", 0.48, 14, 0.0040, vs_base=0.28),  # a tie too, but dearer
    ]}
    summary = conclude(CalibrationSummary(input="x", input_format="evaluate", task="pairwise", n_items=50,
                                          n_reference=50, n_multi_annotated=0, model="m", offline=False,
                                          primary_metric="kappa", baseline="single", settings=results,
                                          resamples=100, seed=0, complete=True))
    assert summary.best == "big"

    def vs(name, diff, p):
        return PairedDifference(metric="kappa", a=name, b="big", n=50, diff=diff, p_value=p)

    recommend(summary, {"single": vs("single", -0.3, 0.001), "mid": vs("mid", -0.04, 0.4),
                        "pricey": vs("pricey", -0.02, 0.7)})
    assert summary.recommended == "mid" and summary.indistinguishable == ["mid", "big", "pricey"]
    assert summary.pareto == ["single", "mid", "big"]  # pricey: dearer than big and no better
    text = summary.recommendation
    assert text.startswith("Recommended: 'mid' — Cohen's kappa 0.460 [0.360, 0.560]; +0.260 [+0.160, +0.360] against 'single'")
    assert "$0.00090 per item" in text and "'big'" in text and "cheapest" in text
    assert summary.headline == text
    # Without a price for every setting, calls decide "cheaper"; the order is unchanged here.
    for r in results.values():
        r.per_item.cost_usd = None
    recommend(summary, summary.vs_best)
    assert summary.recommended == "mid" and "cost unknown" in summary.recommendation


def test_preset_of_writes_the_judge_not_the_plumbing(tmp_path, monkeypatch):
    from chateval.calibration.preset import preset_of
    from chateval.evaluation.config import EvalConfig

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    config = EvalConfig(model="openai-compatible/judge", base_url="http://u:secret@127.0.0.1:9/v1?key=k",
                        personas=["critic", "scientist"], escalate=True, cache=False, max_connections=3,
                        persona_dirs=["mine"]).public()
    out = preset_of(config)
    assert "secret" not in json.dumps(out) and out["base_url"] == "http://***@127.0.0.1:9/v1?key=***"
    assert out["escalate"] is True and out["stop_early"] is False and out["agents"] == 2
    assert out["persona_dirs"] == [str(tmp_path / "mine")]  # absolute: the preset works from anywhere
    assert not {"task", "cache", "cache_dir", "max_connections", "max_retries", "timeout_s"} & set(out)
    assert EvalConfig.merged(out | {"base_url": "http://127.0.0.1:9/v1"}).escalate  # a valid preset
