"""The CLI end to end with the offline model: run files, resume, cache, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chateval.cli import main

from .conftest import EXAMPLES, read_jsonl, write_jsonl

PAIRS = EXAMPLES / "faireval_pairwise.jsonl"


def run(*args: str) -> int:
    return main(list(args))


@pytest.mark.parametrize("strategy", ["one_by_one", "simultaneous", "simultaneous_summarizer"])
def test_evaluate_each_strategy_writes_run_files(tmp_path, strategy):
    out = tmp_path / "run"
    assert run("evaluate", str(PAIRS), "--strategy", strategy, "--agents", "3", "--turns", "2",
               "--out", str(out), "--no-cache") == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model"] == "offline" and config["offline"] is True
    assert config["config"]["strategy"] == strategy and len(config["config_hash"]) == 16
    assert "autogen-agentchat" in config["versions"]
    rows = read_jsonl(out / "samples.jsonl")
    assert len(rows) == 10 and len({r["id"] for r in rows}) == 10
    for r in rows:
        assert r["status"] == "ok"
        assert len(r["agents"]) == 3 and all(a["winner"] in ("1", "2", "tie") for a in r["agents"])
        debate_turns = [t for t in r["transcript"] if t["kind"] == "debate"]
        assert len(debate_turns) == 6
        assert {t["round"] for t in debate_turns} == {1, 2}
    summaries = [t for t in rows[0]["transcript"] if t["kind"] == "summary"]
    assert len(summaries) == (1 if strategy == "simultaneous_summarizer" else 0)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_samples"] == 10 and summary["n_ok"] == 10 and summary["complete"] is True
    assert summary["offline"] is True and "heuristic" in summary["note"]
    assert summary["usage"]["calls"] == 10 * (6 + len(summaries))


@pytest.mark.parametrize("task,example", [("score", "score.jsonl"), ("correctness", "correctness.jsonl")])
def test_other_tasks(tmp_path, task, example):
    out = tmp_path / "run"
    assert run("evaluate", str(EXAMPLES / example), "--task", task, "--out", str(out)) == 0
    rows = read_jsonl(out / "samples.jsonl")
    assert all(r["status"] == "ok" and r["verdict"]["task"] == task for r in rows)
    if task == "score":
        assert set(rows[0]["verdict"]["scores"]) == {"naturalness", "coherence", "engagingness", "groundedness"}
        assert rows[0]["verdict"]["score"] > rows[1]["verdict"]["score"]  # on-topic beats off-topic
    else:
        assert [r["verdict"]["correct"] for r in rows] == [True, False]


def test_second_identical_run_makes_zero_model_calls(tmp_path):
    cache = tmp_path / "cache"
    args = ["evaluate", str(PAIRS), "--cache-dir", str(cache), "--limit", "4"]
    assert run(*args, "--out", str(tmp_path / "a")) == 0
    assert run(*args, "--out", str(tmp_path / "b")) == 0
    first = json.loads((tmp_path / "a" / "summary.json").read_text())["usage"]
    second = json.loads((tmp_path / "b" / "summary.json").read_text())["usage"]
    assert first["calls"] == 16 and first["cached_calls"] == 0
    assert second["calls"] == 0 and second["cached_calls"] == 16
    a = [r["verdict"] for r in read_jsonl(tmp_path / "a" / "samples.jsonl")]
    b = [r["verdict"] for r in read_jsonl(tmp_path / "b" / "samples.jsonl")]
    assert sorted(map(json.dumps, a)) == sorted(map(json.dumps, b))
    # --no-cache bypasses it
    assert run(*args, "--no-cache", "--out", str(tmp_path / "c")) == 0
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["usage"]["calls"] == 16


def test_resume_after_interruption_gives_each_sample_once(tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    assert run("evaluate", str(PAIRS), "--out", str(full), "--no-cache") == 0
    assert run("evaluate", str(PAIRS), "--out", str(part), "--no-cache") == 0
    # Simulate a crash: keep 3 finished lines, a torn 4th line, a failed 5th, no summary.
    lines = [ln for ln in (part / "samples.jsonl").read_text().split("\n") if ln]  # at \n only, as chateval reads
    failed = json.loads(lines[4]) | {"status": "failed", "error": "boom", "verdict": None}
    (part / "samples.jsonl").write_text("\n".join(lines[:3]) + "\n" + json.dumps(failed) + "\n" + lines[3][:40])
    (part / "summary.json").unlink()
    assert run("evaluate", str(PAIRS), "--out", str(part), "--no-cache", "--resume") == 0
    rows = read_jsonl(part / "samples.jsonl")
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in read_jsonl(full / "samples.jsonl"))
    assert all(r["status"] == "ok" for r in rows)
    by_id = {r["id"]: r["verdict"] for r in read_jsonl(full / "samples.jsonl")}
    assert all(by_id[r["id"]] == r["verdict"] for r in rows)
    s_full = json.loads((full / "summary.json").read_text())
    s_part = json.loads((part / "summary.json").read_text())
    for key in ("n_samples", "n_ok", "verdicts", "label_accuracy", "parse_errors"):
        assert s_full[key] == s_part[key]


def test_resume_refuses_different_settings_and_existing_out_needs_resume(tmp_path, capsys):
    out = tmp_path / "run"
    assert run("evaluate", str(PAIRS), "--out", str(out), "--limit", "2") == 0
    assert run("evaluate", str(PAIRS), "--out", str(out), "--limit", "2") == 2
    assert "--resume" in capsys.readouterr().err
    assert run("evaluate", str(PAIRS), "--out", str(out), "--turns", "3", "--resume") == 2
    assert "turns" in capsys.readouterr().err


def test_malformed_line_is_a_one_line_error_before_any_call(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "q", "answer_1": "x", "answer_2": "y"}\n{"id": "b", "question": "q"\n')
    out = tmp_path / "run"
    assert run("evaluate", str(bad), "--out", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert f"{bad}:2: invalid JSON" in err.replace("\n", "") and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("line,needle", [
    ('{"id": "a", "question": "q", "answer_1": "x"}', "field 'answer_2': missing"),
    ('{"id": "a", "question": "q", "answer_1": 3, "answer_2": "y"}', "field 'answer_1': expected a string"),
    ('{"id": "a", "question": " ", "answer_1": "x", "answer_2": "y"}', "field 'question': empty"),
    ('[1, 2]', "expected a JSON object"),
])
def test_bad_records(tmp_path, capsys, line, needle):
    bad = write_jsonl(tmp_path / "bad.jsonl", [])
    bad.write_text(line + "\n")
    assert run("evaluate", str(bad), "--out", str(tmp_path / "o")) == 2
    assert needle in capsys.readouterr().err


def test_duplicate_id_and_skip_invalid(tmp_path, capsys):
    rows = [{"id": "a", "question": "q", "answer_1": "x", "answer_2": "y"}] * 2
    rows.append({"id": "c", "question": "q", "answer_1": "x", "answer_2": "y"})
    path = write_jsonl(tmp_path / "dup.jsonl", rows)
    assert run("evaluate", str(path), "--out", str(tmp_path / "o1")) == 2
    assert "duplicate id 'a' (first on line 1)" in capsys.readouterr().err
    assert run("evaluate", str(path), "--out", str(tmp_path / "o2"), "--skip-invalid") == 0
    summary = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert summary["n_samples"] == 2 and summary["invalid_lines"][0]["line"] == 2


def test_unknown_names_and_bad_presets(tmp_path, capsys):
    assert run("evaluate", str(PAIRS), "--out", str(tmp_path / "o"), "--personas", "nobody") == 2
    assert "unknown persona 'nobody'" in capsys.readouterr().err
    assert run("evaluate", str(PAIRS), "--out", str(tmp_path / "o"), "--strategy", "shouting") == 2
    assert "unknown strategy 'shouting'" in capsys.readouterr().err
    preset = tmp_path / "p.yaml"
    preset.write_text("strategy: one_by_one\nrounds: 3\n")
    assert run("evaluate", str(PAIRS), "--out", str(tmp_path / "o"), "--preset", str(preset)) == 2
    assert "unknown setting 'rounds'" in capsys.readouterr().err
    pdir = tmp_path / "personas"
    pdir.mkdir()
    (pdir / "broken.yaml").write_text("name: Broken\nrole: [unclosed\n")
    assert run("evaluate", str(PAIRS), "--out", str(tmp_path / "o"), "--persona-dir", str(pdir),
               "--personas", "broken") == 2
    assert "broken.yaml:" in capsys.readouterr().err
    (pdir / "norole.yaml").write_text("name: No Role\n")
    assert run("evaluate", str(PAIRS), "--out", str(tmp_path / "o"), "--persona-dir", str(pdir),
               "--personas", "norole") == 2
    assert "field 'role'" in capsys.readouterr().err
    assert run("evaluate", str(EXAMPLES / "score.jsonl"), "--task", "score", "--aggregate", "vote",
               "--out", str(tmp_path / "o")) == 2
    assert not (tmp_path / "o").exists()


def test_preset_and_custom_strategy_plugin(tmp_path):
    out = tmp_path / "run"
    assert run("evaluate", str(PAIRS), "--preset", "memory_panel", "--plugin", str(EXAMPLES / "custom_strategy.py"),
               "--strategy", "alternating_order", "--turns", "2", "--limit", "2", "--out", str(out)) == 0
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["strategy"] == "alternating_order"
    assert config["personas"] == ["memory_keeper", "timekeeper", "user_advocate"]
    speakers = [(t["speaker"], t["round"]) for t in read_jsonl(out / "samples.jsonl")[0]["transcript"]]
    assert speakers == [("Memory_Keeper", 1), ("Timekeeper", 1), ("User_Advocate", 1),
                        ("User_Advocate", 2), ("Timekeeper", 2), ("Memory_Keeper", 2)]


@pytest.mark.slow
def test_plain_progress_and_console_script(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "chateval.cli", "evaluate", str(PAIRS), "--limit", "2",
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "[1/2]" in proc.stderr and "\x1b[" not in proc.stderr  # plain lines when not a terminal
    assert "heuristic" in proc.stderr
    help_text = subprocess.run([sys.executable, "-m", "chateval.cli", "evaluate", "--help"],
                               capture_output=True, text=True, timeout=60).stdout
    assert "--swap" in help_text and "exit codes" in help_text


def test_cli_against_local_openai_compatible_server(tmp_path):
    from chateval.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        out = tmp_path / "real"
        assert run("evaluate", str(PAIRS), "--limit", "2", "--model", "openai-compatible/judge-model",
                   "--base-url", server.base_url, "--out", str(out), "--no-cache") == 0
        assert len(server.requests) == 8 and all(r["model"] == "judge-model" for r in server.requests)
    offline = tmp_path / "offline"
    assert run("evaluate", str(PAIRS), "--limit", "2", "--out", str(offline), "--no-cache") == 0

    def shape(obj):
        if isinstance(obj, dict):
            return {k: shape(v) for k, v in obj.items() if k not in ("note",)}
        if isinstance(obj, list):
            return [shape(obj[0])] if obj else []
        return type(obj).__name__ if obj is not None else None

    real_rows, off_rows = read_jsonl(out / "samples.jsonl"), read_jsonl(offline / "samples.jsonl")
    assert set(real_rows[0]) == set(off_rows[0])
    assert shape(real_rows[0]["agents"]) == shape(off_rows[0]["agents"])
    assert set(real_rows[0]["transcript"][0]) == set(off_rows[0]["transcript"][0])
    real_summary = json.loads((out / "summary.json").read_text())
    assert real_summary["offline"] is False and real_summary["usage"]["cost_usd"] is None  # unknown price
    assert real_summary["usage"]["tokens_approx"] is False


def _usage(argv: list[str]) -> str:
    from chateval.cli import build_parser

    parser = build_parser(argv)
    sub = parser._subparsers._group_actions[0].choices["bench"]._subparsers._group_actions[0].choices[argv[1]]
    return " ".join(sub.format_usage().split()), sub.format_help()


def test_bench_help_marks_what_a_run_cannot_start_without():
    usage, text = _usage(["bench", "longmemeval"])
    # No default: unbracketed in the usage line, in their own group, "(required)" in the help.
    assert " --out OUT " in usage and "[--out OUT]" not in usage
    assert " --data DATA " in usage and "[--data DATA]" not in usage
    assert "required (here or in --config FILE):\n  --out OUT" in text
    assert "[--resume]" in usage  # the rest stays optional
    # A benchmark whose --data has a default (the shared data folder) keeps it optional and says so.
    usage, text = _usage(["bench", "faireval"])
    assert "[--data DATA]" in usage and " --out OUT " in usage
    help_text = " ".join(text.split())
    assert "--data DATA the data folder or file (default: <benchmark>/ in the data folder" in help_text
    assert "`chateval data get`" in help_text
