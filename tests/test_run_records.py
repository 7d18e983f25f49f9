"""Typed, versioned run records: every kind of run writes ``format_version`` and reads back through
``chateval.read_run`` without losing a field; runs of the format before it (the fixture under
tests/fixtures/runs_v0, written by the version before records were versioned) still load; a bad
run directory is one line naming the file and line; a benchmark from a plugin file gets its
headline, gate and viewer card from its own class."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

import chateval
from chateval.bench.records import (
    JudgeItemRecord,
    MemoryRecord,
    MemorySummary,
    PairRecord,
    SettingsSummary,
    SettingSummary,
)
from chateval.cli import main
from chateval.records.judged import EvaluateSummary, JudgedRecord
from chateval.records.run import NotARunDir, Run
from chateval.runs.envelope import FORMAT_VERSION
from chateval.util.errors import InputError
from chateval.view import load_run
from chateval.view.runlist import run_entry

from .conftest import EXAMPLES, FIXTURES

OLD = FIXTURES / "runs_v0"
OFFLINE = ["--model", "offline", "--no-cache"]
MEMORY = [*OFFLINE, "--answer-model", "offline", "--embedder", "hash"]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def assert_nothing_lost(run: Run) -> None:
    """Each record read back is the JSON the run wrote, field for field (extras included)."""
    for sub in [run, *run.runs.values()]:
        if sub.config is not None:
            assert sub.config.data() == json.loads((sub.path / "config.json").read_text())
        if sub.summary is not None:
            assert sub.summary.data() == json.loads((sub.path / "summary.json").read_text())
        if (sub.path / "samples.jsonl").is_file():
            assert [r.data() for r in sub.records] == lines(sub.path / "samples.jsonl")


def assert_versioned(run: Run) -> None:
    """config.json, summary.json and every sample line carry the format version."""
    for sub in [run, *run.runs.values()]:
        for f in ("config.json", "summary.json"):
            if (sub.path / f).is_file():
                assert json.loads((sub.path / f).read_text())["format_version"] == FORMAT_VERSION, sub.path / f
        assert sub.records and all(r.format_version == FORMAT_VERSION for r in sub.records) or not (
            sub.path / "samples.jsonl").is_file()


# --- runs of the format before format_version still load ---------------------------------------

def test_an_evaluate_run_of_the_old_format_loads():
    run = chateval.read_run(OLD / "evaluate")
    assert run.kind == "evaluate" and run.format_version == 0 and run.benchmark is None and run.complete
    assert isinstance(run.summary, EvaluateSummary) and run.summary.n_ok == 3 == len(run.records)
    assert all(isinstance(r, JudgedRecord) and r.format_version == 0 for r in run.records)
    assert run.records[0].winner in ("1", "2", "tie") and run.records[0].transcript
    assert {"config.json", "samples.jsonl", "summary.json", "report.md"} <= set(run.files)
    assert_nothing_lost(run)


def test_benchmark_runs_of_the_old_format_load():
    lme = chateval.read_run(OLD / "longmemeval")
    assert lme.kind == lme.benchmark == "longmemeval" and isinstance(lme.summary, MemorySummary)
    qa = lme.summary.methods["full_context"].qa["single"]
    assert qa["n"] == 2 and all(isinstance(r, MemoryRecord) and r.method == "full_context" for r in lme.records)
    assert_nothing_lost(lme)

    fe = chateval.read_run(OLD / "faireval")
    assert fe.kind == "faireval" and isinstance(fe.summary, SettingsSummary) and fe.config is None
    assert set(fe.runs) == {"single", "multi"} and fe.summary.settings["single"].n_units == 3
    single = fe.runs["single"]
    assert isinstance(single.summary, SettingSummary) and single.summary.metrics["accuracy"]["value"] is not None
    assert all(isinstance(r, JudgeItemRecord) for _, r in fe.all_records()) and len(list(fe.all_records())) == 6
    assert_nothing_lost(fe)


def test_the_viewer_shows_an_old_run():
    view = load_run(OLD / "faireval")
    assert view.summary["benchmark"] == "faireval" and len(view.samples) == 6 and view.n_records == 6


# --- every kind made offline: written versioned, read back whole -------------------------------

def test_evaluate_round_trip(tmp_path):
    out = tmp_path / "ev"
    assert main(["evaluate", str(EXAMPLES / "faireval_pairwise.jsonl"), "--limit", "2", *OFFLINE,
                 "--out", str(out)]) == 0
    run = chateval.read_run(out)
    assert run.kind == "evaluate" and run.format_version == FORMAT_VERSION
    assert isinstance(run.summary, EvaluateSummary) and run.summary.n_samples == 2 == len(run.records)
    assert [r.id for r in run.records] == [x["id"] for x in lines(EXAMPLES / "faireval_pairwise.jsonl")[:2]]
    assert_versioned(run)
    assert_nothing_lost(run)
    # --resume keeps the finished records (versioned) and writes nothing twice.
    assert main(["evaluate", str(EXAMPLES / "faireval_pairwise.jsonl"), "--limit", "2", *OFFLINE,
                 "--out", str(out), "--resume"]) == 0
    assert [r.data() for r in chateval.read_run(out).records] == [r.data() for r in run.records]


@pytest.mark.parametrize("name, args, record", [
    ("longmemeval", ["--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context", "--limit", "2", *MEMORY],
     MemoryRecord),
    ("head2head", ["--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context,retrieval", "--limit", "2",
                   *MEMORY], PairRecord),
    ("faireval", ["--data", str(FIXTURES / "faireval_tiny.jsonl"), "--limit", "2", *OFFLINE], JudgeItemRecord),
])
def test_benchmark_round_trip(tmp_path, name, args, record):
    out = tmp_path / name
    assert main(["bench", name, *args, "--out", str(out)]) == 0
    run = chateval.read_run(out)
    cls = chateval.bench.BENCHMARKS.get(name)
    assert run.kind == name and isinstance(run.summary, cls.summary_type)
    assert all(isinstance(r, record) for _, r in run.all_records()) and list(run.all_records())
    # The headline kept in summary.json is the benchmark's own, from the summary read back.
    summary = run.summary.data()
    assert summary["headline"] == cls.headline(summary) and summary["headline"][0]["value"] is not None
    assert_versioned(run)
    assert_nothing_lost(run)


def test_calibrate_and_audit_round_trip(tmp_path):
    cal = tmp_path / "cal"
    assert main(["calibrate", str(FIXTURES / "calibrate_pairwise.jsonl"), "--limit", "2", *OFFLINE,
                 "--setting", "one=one_by_one_3x2", "--out", str(cal)]) == 0
    run = chateval.read_run(cal)
    assert run.kind == "calibrate" and run.summary.headline == chateval.read_calibration(cal).headline
    assert run.runs and all(s.kind == "evaluate" and isinstance(s.summary, EvaluateSummary) for s in run.runs.values())
    assert_versioned(run)
    assert_nothing_lost(run)

    aud = tmp_path / "audit"
    assert main(["audit", str(EXAMPLES / "faireval_pairwise.jsonl"), "--limit", "1", *OFFLINE, "--out", str(aud)]) == 0
    run = chateval.read_run(aud)
    summary, units = chateval.read_audit(aud)
    assert run.kind == "audit" and len(run.records) == len(units) == summary.n_units
    assert_versioned(run)
    assert_nothing_lost(run)


# --- a bad run directory: one line naming the file (and line) ----------------------------------

@pytest.fixture
def copy(tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(OLD / "evaluate", out)
    return out


def test_read_run_errors_name_the_file_and_line(tmp_path, copy):
    with pytest.raises(NotARunDir, match="no such run directory"):
        chateval.read_run(tmp_path / "nothere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotARunDir, match="not a run directory"):
        chateval.read_run(tmp_path / "empty")
    samples = copy / "samples.jsonl"
    good = samples.read_text().splitlines(keepends=True)
    samples.write_text(good[0] + "{not json\n" + good[1])
    with pytest.raises(InputError, match=rf"^{samples}:2: not valid JSON"):
        chateval.read_run(copy)
    samples.write_text(good[0] + json.dumps({**json.loads(good[1]), "status": ["ok"]}) + "\n")
    with pytest.raises(InputError, match=rf"^{samples}:2: field 'status'"):
        chateval.read_run(copy)
    samples.write_text("".join(good))
    summary = copy / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "n_failed": "none"}))
    with pytest.raises(InputError, match=rf"^{summary}: field 'n_failed'") as err:
        chateval.read_run(copy)
    assert "\n" not in str(err.value)
    summary.write_text("[1, 2]")
    with pytest.raises(InputError, match="a JSON list, not an object"):
        chateval.read_run(copy)


def test_a_torn_last_line_is_skipped_and_counted(copy):
    samples = copy / "samples.jsonl"
    samples.write_text(samples.read_text() + '{"id": "half a rec')
    (copy / "summary.json").unlink()  # killed before its summary
    run = chateval.read_run(copy)
    assert len(run.records) == 3 and run.unreadable_lines == 1 and run.summary is None and not run.complete


# --- a plugin benchmark: headline, gate, record type and viewer card from its own class --------

PLUGIN = textwrap.dedent('''
    from typing import Any

    from chateval.bench import BenchConfig, Benchmark, benchmark
    from chateval.bench.base import open_run, run_units
    from chateval.runs.envelope import SampleRecord, SummaryRecord

    WORDS = ["apple", "kiwi", "banana"]


    class TinyConfig(BenchConfig):
        pass


    class TinyRecord(SampleRecord):
        word: str
        hit: bool

        def card(self) -> dict[str, Any]:
            return {"tiny word": self.word.upper()}


    class TinySummary(SummaryRecord):
        hits: int


    @benchmark("tiny_records")
    class Tiny(Benchmark):
        description = "a benchmark from a plugin file"
        config_model = TinyConfig
        record_type, summary_type = TinyRecord, TinySummary
        gate_metrics = ["hit_rate"]

        @classmethod
        def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
            return [{"system": "tiny", "n": summary["n_units"], "metric": "hit rate",
                     "value": summary["hits"] / summary["n_units"], "recall_all@5": None,
                     "failed": summary["n_failed"], "cost_usd": None}]

        async def run(self, config: TinyConfig, progress: Any) -> dict[str, Any]:
            async def unit(word: str) -> dict[str, Any]:
                return {"word": word, "hit": "a" in word}

            with open_run(config, {"judging": {"words": WORDS}, "config_hash": "tiny"}) as run:
                records = await run_units([(w, w) for w in WORDS], unit, run, progress=progress)
                summary = {"benchmark": "tiny_records", "n_units": len(records), "n_failed": 0,
                           "hits": sum(r["hit"] for r in records)}
                run.write_summary(summary)
            return summary
''')


def test_a_plugin_benchmark_owns_its_headline_records_and_card(tmp_path, capsys):
    plugin = tmp_path / "tiny_bench.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "tiny"
    assert main(["bench", "tiny_records", "--plugin", str(plugin), "--out", str(out), "--fail-under",
                 "hit_rate=0.5"]) == 0
    printed = capsys.readouterr().err  # the headline table, printed at the end of the run
    assert "hit rate" in printed and "gates met: hit_rate=0.5" in printed
    run = chateval.read_run(out)
    assert run.kind == "tiny_records" and type(run.summary).__name__ == "TinySummary" and run.summary.hits == 2
    assert [type(r).__name__ for r in run.records] == ["TinyRecord"] * 3
    [row] = run.summary.headline
    assert row["metric"] == "hit rate" and row["value"] == pytest.approx(2 / 3)
    assert_versioned(run)
    # The viewer: the run list shows its headline, each sample's card what its record type names.
    assert run_entry(out, tmp_path).headline == "hit rate: tiny 66.7%"
    view = load_run(out)
    assert sorted(s.memory["tiny word"] for s in view.samples) == ["APPLE", "BANANA", "KIWI"]
    # Its gate: the headline value, under the name the benchmark gave it.
    assert main(["bench", "tiny_records", "--plugin", str(plugin), "--out", str(out), "--overwrite",
                 "--fail-under", "hit_rate=0.9"]) == 4
