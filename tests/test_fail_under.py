"""`--fail-under METRIC[:SYSTEM]=VALUE`: checked before the run (a typo is exit 2 listing the
metrics, nothing run), and after it exit 4 with one line per gate not met (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.util.errors import ConfigError
from chateval.runs.gates import check, parse_gates

from .conftest import FIXTURES

EXAMPLES = FIXTURES.parent.parent / "examples"
LME = ["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "retrieval",
       "--retrieval-only", "--embedder", "hash", "--limit", "2", "--no-cache"]


def gate_lines(err: str) -> list[str]:
    return [" ".join(ln.split()) for ln in err.splitlines() if ln.startswith("gate failed:")]


def run_eval(tmp_path: Path, capsys, *gates: str) -> tuple[int, str, dict]:
    out = tmp_path / "ev"
    code = main(["evaluate", str(EXAMPLES / "faireval_pairwise.jsonl"), "--model", "offline", "--limit", "3",
                 "--agents", "1", "--turns", "1", "--out", str(out), "--overwrite", *(a for g in gates for a in ("--fail-under", g))])
    return code, capsys.readouterr().err, json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_evaluate_below_the_gate_exits_4_naming_the_metric(tmp_path, capsys):
    code, err, summary = run_eval(tmp_path, capsys, "accuracy=0.999", "kappa=-1")
    accuracy = summary["agreement"]["accuracy"]["value"]
    assert accuracy is not None and accuracy < 0.999
    assert code == 4
    assert gate_lines(err) == [f"gate failed: --fail-under accuracy=0.999: accuracy is {accuracy:.4g}, below 0.999"]


def test_evaluate_meeting_the_gate_exits_0(tmp_path, capsys):
    code, err, _ = run_eval(tmp_path, capsys, "accuracy=0")
    assert code == 0 and gate_lines(err) == [] and "gates met: accuracy=0" in err


@pytest.mark.parametrize("spec, says", [
    ("accuracy", "expected METRIC=VALUE"),
    ("acuracy=0.8", "unknown metric 'acuracy' (metrics: accuracy, kappa)"),
    ("accuracy=high", "'high' is not a number"),
    ("accuracy=nan", "is not a number"),
])
def test_a_bad_gate_is_refused_before_the_run(tmp_path, capsys, spec, says):
    out = tmp_path / "ev"
    code = main(["evaluate", str(EXAMPLES / "correctness.jsonl"), "--model", "offline", "--out", str(out),
                 "--fail-under", spec])
    err = capsys.readouterr().err
    assert code == 2 and says in " ".join(err.split())
    assert len(err.strip().splitlines()) == 1 and not out.exists()  # nothing ran


def test_bench_unknown_metric_lists_the_benchmarks_metrics(tmp_path, capsys):
    code = main([*LME, "--out", str(tmp_path / "b"), "--fail-under", "f1=0.5"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "unknown metric 'f1' (metrics: accuracy, recall_all@K, recall_any@K)" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_bench_recall_at_k_per_system(tmp_path, capsys):
    out = tmp_path / "b"
    # all 5 questions (not 2): recall_all@1 of retrieval is below 1 on them (a gate above 1 is refused up front)
    code = main([*LME, "--limit", "5", "--out", str(out), "--fail-under", "recall_all@5=0",
                 "--fail-under", "recall_all@1:retrieval=1"])
    err = capsys.readouterr().err
    session = json.loads((out / "summary.json").read_text())["methods"]["retrieval"]["retrieval"]["session"]
    assert code == 4
    assert gate_lines(err) == [(f"gate failed: --fail-under recall_all@1:retrieval=1: recall_all@1 of retrieval "
                                f"is {session['recall_all@1']:.4g}, below 1")]


def test_bench_gate_on_a_measure_the_run_does_not_have_fails(tmp_path, capsys):
    # --retrieval-only judges nothing: an accuracy gate cannot pass silently.
    code = main([*LME, "--out", str(tmp_path / "b"), "--fail-under", "accuracy=0.1"])
    assert code == 4
    assert gate_lines(capsys.readouterr().err) == [
        "gate failed: --fail-under accuracy=0.1: accuracy of retrieval was not measured (no result)"]


def test_bench_locomo_f1_gate(tmp_path, capsys):
    out = tmp_path / "loco"
    args = ["bench", "locomo", "--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "retrieval",
            "--answer-model", "offline", "--embedder", "hash", "--limit", "1", "--out", str(out)]
    assert main([*args, "--fail-under", "f1:retrieval=1"]) == 4
    assert "f1 of retrieval is" in capsys.readouterr().err
    assert main([*args, "--overwrite", "--fail-under", "f1=0", "--fail-under", "evidence_recall=0"]) == 0


def test_calibrate_gates_the_best_setting_or_a_named_one(tmp_path, capsys):
    out = tmp_path / "cal"
    code = main(["calibrate", str(FIXTURES / "calibrate_pairwise.jsonl"), "--model", "offline", "--out", str(out),
                 "--fail-under", "kappa=0.99", "--fail-under", "accuracy:single=0"])
    err = capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    best = summary["settings"][summary["recommended"]]["agreement"]["kappa"]["value"]  # what --write-preset writes
    assert code == 4
    assert gate_lines(err) == [f"gate failed: --fail-under kappa=0.99: kappa is {best:.4g}, below 0.99"]


def test_a_failed_run_keeps_its_own_exit_code():
    gates = parse_gates(["accuracy=0.5"], ["accuracy"])
    assert check(gates, {"accuracy": {None: 0.4}}) == ["--fail-under accuracy=0.5: accuracy is 0.4, below 0.5"]
    assert check(gates, {"accuracy": {"a": 0.9, "b": 0.1}}) == [
        "--fail-under accuracy=0.5: accuracy of b is 0.1, below 0.5"]
    assert check(parse_gates(["accuracy:c=0.5"], ["accuracy"]), {"accuracy": {"a": 0.9}}) == [
        "--fail-under accuracy:c=0.5: no system or setting 'c' in this run (a)"]
    with pytest.raises(ConfigError):
        parse_gates(["recall_all@x=1"], ["recall_all@K"])
    assert parse_gates(["recall_all@10=1"], ["recall_all@K"])[0].metric == "recall_all@10"


@pytest.mark.slow
def test_audit_fail_over_a_flip_rate(tmp_path, capsys):
    out = tmp_path / "audit"
    base = ["audit", str(EXAMPLES / "faireval_pairwise.jsonl"), "--model", "offline", "--agents", "1", "--turns", "1",
            "--out", str(out)]
    assert main([*base, "--fail-over", "flip_rate=0.01"]) == 4
    err = capsys.readouterr().err
    rates = {b["perturbation"]: b["rate_lost"] if b["n_lost"] else b["rate"]  # the headline rate
             for b in json.loads((out / "summary.json").read_text())["biases"]}
    above = [p for p, r in rates.items() if r is not None and r > 0.01]
    assert above  # the offline judge flips on some perturbation of these ten items
    assert gate_lines(err) == [(f"gate failed: --fail-over flip_rate=0.01: flip_rate of {p} is {rates[p]:.4g}, "
                                "above 0.01") for p in above]
    assert main([*base, "--resume", "--fail-over", "flip_rate:position=0.5"]) == 0
    assert main([*base, "--resume", "--fail-over", "flips=0.5"]) == 2
    assert "unknown metric 'flips' (metrics: flip_rate)" in " ".join(capsys.readouterr().err.split())


def test_longmemeval_gates_leave_out_its_baseline_rankers():
    from chateval.bench.summaries import gate_measures

    rows = [{"system": s, "value": v} for s, v in (("bm25", 0.9), ("hybrid", 0.95), ("my_memory", 0.4))]
    methods = {s: {"retrieval": {"session": {"recall_all@5": v}}} for s, v in (("bm25", 0.9), ("my_memory", 0.4))}
    measures = gate_measures("longmemeval", {"headline": rows, "methods": methods})
    assert measures["accuracy"] == {"my_memory": 0.4}
    assert measures["recall_all@5"] == {"my_memory": 0.4}
