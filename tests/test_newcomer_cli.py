"""What a new user reads first: `chateval --help` and `--version`, help texts of negated flags,
`memory list`, `memory ask`'s embedder, the end-of-run table's columns and cost, and the error of
a data file in the wrong format (issue 27)."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from rich.console import Console

import chateval
from chateval.cli import build_parser, main
from chateval.cli.bench import headline_table
from chateval.models import CallRecord, UsageTotals

from .conftest import FIXTURES


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"chateval {chateval.__version__}"


def test_top_level_help_is_for_users(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "argparse" not in out and "``" not in out  # not the package's developer docstring
    assert "chateval evaluate examples/faireval_pairwise.jsonl --model offline" in out
    assert "--version" in out and "4 a --fail-under gate was not met" in " ".join(out.split())


def _help_of(parser, flag: str) -> str:
    for action in parser._actions:
        if flag in action.option_strings:
            return action.help
    raise AssertionError(flag)


def _sub(parser, *names):
    for name in names:
        parser = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[name]
    return parser


@pytest.mark.parametrize("path, flag, says", [
    (("evaluate",), "--no-cache", "do not use the on-disk completion cache"),
    (("bench", "longmemeval"), "--no-cache", "do not use the on-disk completion cache"),
    (("bench", "longmemeval"), "--no-pre-embed", "do not embed the texts"),
    (("bench", "msc-response"), "--no-bertscore", "do not compute the MiniLM BERTScore"),
    (("bench", "msc-response"), "--no-helpfulness", "do not judge memory helpfulness"),
])
def test_negated_flags_say_what_they_turn_off(path, flag, says):
    assert _help_of(_sub(build_parser(), *path), flag).startswith(says)


@pytest.mark.slow
def test_memory_list_shows_required_settings_and_both_set_syntaxes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # a wide table: the header on one line
    assert main(["memory", "list"]) == 0
    out = capsys.readouterr().out
    assert "PydanticUndefined" not in out
    assert "url=(required)" in out
    assert "chateval bench ... --set SYSTEM.name=value; chateval memory ask ... --set name=value" in out
    assert "--set name=value)" not in out.split("\n")[1]  # the header no longer teaches bench a wrong syntax


def test_memory_ask_defaults_to_the_benchmarks_embedder(monkeypatch, capsys):
    from chateval.bench.config import MemoryBenchConfig
    from chateval.memory import embeddings

    seen = []
    real = embeddings.make_embedder

    def spy(spec, **kw):
        seen.append(spec)
        return real("hash", **kw)  # the spec asked for is what matters; hash keeps the test fast

    monkeypatch.setattr(embeddings, "make_embedder", spy)
    code = main(["memory", "ask", "--system", "full_context", "--data", str(FIXTURES / "lme_tiny.json"),
                 "--question-id", "t_job", "--model", "offline"])
    assert code == 0, capsys.readouterr().err
    assert seen == [MemoryBenchConfig.model_fields["embedder"].default] == ["local/all-MiniLM-L6-v2"]


def _table(rows) -> str:
    console = Console(width=200, file=StringIO(), record=True)
    headline_table(rows, console)
    return console.export_text()


@pytest.mark.slow
def test_locomo_headline_shows_evidence_recall_not_an_empty_recall_all(tmp_path):
    out = tmp_path / "loco"
    assert main(["bench", "locomo", "--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "retrieval",
                 "--answer-model", "offline", "--embedder", "hash", "--limit", "1", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [row] = summary["headline"]
    recall = summary["systems"]["retrieval"]["overall"]["evidence_recall"]
    assert recall is not None and row["evidence recall"] == recall
    text = _table(summary["headline"])
    assert "evidence recall" in text and "recall_all@5" not in text
    assert f"{100 * recall:.1f}%" in text


def test_recall_all_column_kept_where_it_is_scored():
    text = _table([{"system": "s", "n": 2, "metric": "accuracy", "value": 0.5, "recall_all@5": 0.25,
                    "failed": 0, "cost_usd": 0.0}])
    assert "recall_all@5" in text and "0.250" in text


def test_failed_calls_of_an_unknown_price_model_leave_the_cost_unknown():
    t = UsageTotals()
    t.add(CallRecord(model="openai-compatible/x", failed=True, attempts=3))
    assert t.cost_usd is None  # a failed run reads "unknown", as a successful run of that model does
    known = UsageTotals()
    known.add(CallRecord(model="openai/gpt-4o-mini", failed=True, attempts=1, cost_usd=0.0))
    assert known.cost_usd == 0.0


@pytest.mark.slow
def test_failed_run_cost_matches_a_good_run_of_the_same_model(tmp_path):
    from chateval.testing.fake_openai import Fault, FakeOpenAIServer

    with FakeOpenAIServer() as server:
        server.script([Fault("500")] * 50)
        proc = subprocess.run(
            [sys.executable, "-m", "chateval.cli", "evaluate", str(FIXTURES.parent.parent / "examples" /
             "faireval_pairwise.jsonl"), "--model", "openai-compatible/x", "--base-url", server.base_url,
             "--limit", "1", "--max-retries", "0", "--no-cache", "--agents", "1", "--turns", "1",
             "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n_failed"] == 1
    assert summary["usage"]["cost_usd"] is None
    assert "$0.0000" not in proc.stderr + proc.stdout


def test_teafarm_on_a_jsonl_file_names_the_format_it_wants(tmp_path, capsys):
    code = main(["bench", "teafarm", "--data", str(FIXTURES / "msc_release_tiny.jsonl"), "--systems",
                 "full_context", "--answer-model", "offline", "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == 2
    flat = " ".join(err.split())
    assert "JSON Lines" in flat and "LoCoMo file" in flat and "first_session_dialogue" in flat


def test_an_own_agents_plain_settings_model_refuses_unknown_keys():
    from pydantic import BaseModel, ConfigDict

    from chateval.util.errors import ConfigError
    from chateval.memory import MemorySystem

    class Settings(BaseModel):  # as the README's agent writes it: no model_config
        k: int = 5

    class Mine(MemorySystem):
        pass

    Mine.Settings = Settings
    assert Mine.parse_settings({"k": 3}).k == 3
    with pytest.raises(ConfigError, match=r"setting 'kk': unknown setting \(known: k\)"):
        Mine.parse_settings({"kk": 3})

    class Loose(BaseModel):  # a model that chooses to ignore extras keeps its choice
        model_config = ConfigDict(extra="ignore")
        k: int = 5

    Mine.Settings = Loose
    assert Mine.parse_settings({"kk": 3}).k == 5
