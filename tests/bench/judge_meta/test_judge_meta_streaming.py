"""FairEval and Topical-Chat build each setting's summary, comparisons and reports from views of
its records (issue 38 item 3): the oracle is the same run with each record kept whole (the old
path), whose summary.json files and report.md files must be the same, field by field."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chateval.bench.judge_meta.faireval import FairEval
from chateval.bench.judge_meta.topical_chat import TopicalChat
from chateval.cli import main

from ...conftest import FIXTURES, read_jsonl

FAIREVAL_ARGS = ("faireval", "--setting", "single", "--setting", "multi", "--sweep", "turns=1,2")
TOPICAL_ARGS = ("topical-chat", "--sweep", "agents=1,2")


def run(tmp_path: Path, name: str, args: tuple[str, ...], data: Path) -> Path:
    out = tmp_path / name
    # Own cache each: a shared one would make the second run's calls cached (other usage).
    cache = tmp_path / f"cache-{name}"
    assert (
        main(["bench", *args, "--model", "offline", "--data", str(data), "--cache-dir", str(cache), "--out", str(out)])
        == 0
    )
    return out


def outputs(out: Path) -> dict[str, str]:
    """Every summary.json and report.md under ``out`` (sub-runs too), with the run's own folder
    written as OUT (the reports name their sub-runs' paths)."""
    files = sorted([*out.rglob("summary.json"), *out.rglob("report.md")])
    assert len(files) >= 4
    return {str(p.relative_to(out)): p.read_text().replace(str(out), "OUT") for p in files}


def compare(tmp_path, monkeypatch, bench_cls, args, data) -> Path:
    # One clock: wall times and latencies are then the same in both runs, so the files compare whole.
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    views = run(tmp_path, "views", args, data)
    with monkeypatch.context() as m:
        m.setattr(bench_cls, "view", lambda self, record: record)  # the old path: whole records
        whole = run(tmp_path, "whole", args, data)
    got, want = outputs(views), outputs(whole)
    assert sorted(got) == sorted(want)
    for name in want:
        if name.endswith(".json"):
            a, b = json.loads(got[name]), json.loads(want[name])
            assert sorted(a) == sorted(b), name
            for k in b:
                assert a[k] == b[k], (name, k)
        else:
            assert got[name] == want[name], name
    return views


def test_faireval_summaries_from_views_equal_the_whole_record_ones(tmp_path, monkeypatch):
    out = compare(tmp_path, monkeypatch, FairEval, FAIREVAL_ARGS, FIXTURES / "faireval_tiny.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["comparisons"] and summary["settings"]["multi"]["metrics"]["original_order"]
    rec = read_jsonl(out / "multi" / "samples.jsonl")[0]
    view = FairEval().view(rec)
    assert rec["transcript"] and "transcript" not in view and "inputs" not in view and "usage" not in view
    assert set(view) <= {"key", "status", "error", "human", "pred", "orders", "agents"}
    assert all(set(a) == {"parse_error"} for a in view["agents"])


def test_topical_chat_summaries_from_views_equal_the_whole_record_ones(tmp_path, monkeypatch):
    out = compare(tmp_path, monkeypatch, TopicalChat, TOPICAL_ARGS, FIXTURES / "topical_chat_tiny.json")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["comparisons"] and summary["sweeps"]["agents"][1]["metrics"]["aspects"]
    rec = read_jsonl(out / "agents-2" / "samples.jsonl")[0]
    view = TopicalChat().view(rec)
    assert set(view) == {"key", "status", "error", "human", "pred", "context_index"} and view["error"] is None
    assert "per_aspect" in rec or "transcript" in rec


@pytest.mark.parametrize("bench_cls", [FairEval, TopicalChat])
def test_a_failed_unit_keeps_its_error_for_the_report(bench_cls):
    view = bench_cls().view({"key": "k", "status": "failed", "error": "boom", "transcript": [1], "usage": {}})
    assert view == {"key": "k", "status": "failed", "error": "boom"}
