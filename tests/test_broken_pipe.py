"""A closed output pipe does not stop the work (issue 35 item 11): ``chateval evaluate ... 2>&1 |
head -c1`` used to stop after 2 samples with exit 1 and nothing said. Real processes whose
output pipe is closed by the reader while they run; summary.json says the output was lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.util import streams

from .conftest import read_jsonl, write_jsonl

N = 12


def reply(body: dict) -> str:
    return "Fine.\nScore of Assistant 1: 8\nScore of Assistant 2: 3"


@pytest.mark.slow
@pytest.mark.parametrize("closed", ["stdout+stderr", "stderr", "stdout"])
def test_evaluate_goes_on_when_its_output_pipe_is_closed(tmp_path, closed):
    data = write_jsonl(
        tmp_path / "p.jsonl",
        [{"id": f"c{i:02d}", "question": f"Q{i}?", "answer_1": "a", "answer_2": "b"} for i in range(N)],
    )
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=reply, latency_s=0.05) as server:
        args = [
            sys.executable,
            "-m",
            "chateval.cli",
            "evaluate",
            str(data),
            "--out",
            str(out),
            "--model",
            "openai-compatible/m",
            "--base-url",
            server.base_url,
            "--no-cache",
            "--max-connections",
            "1",
        ]
        pipe_err = subprocess.STDOUT if closed == "stdout+stderr" else subprocess.PIPE
        if closed == "stdout":
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ))
            reader = proc.stdout
        else:
            proc = subprocess.Popen(
                args,
                stdout=subprocess.DEVNULL if closed == "stderr" else subprocess.PIPE,
                stderr=pipe_err,
                env=dict(os.environ),
            )
            reader = proc.stdout if closed == "stdout+stderr" else proc.stderr
        assert reader is not None
        if closed != "stdout":
            assert reader.read(1)  # as `head -c1` does: one byte, then the pipe is closed
        reader.close()
        proc.wait(timeout=120)
    assert proc.returncode == 0
    rows = read_jsonl(out / "samples.jsonl")
    assert len({r["id"] for r in rows}) == N and all(r["status"] == "ok" for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True and summary["n_samples"] == N
    if closed != "stdout":  # stdout carries only the last lines, printed after summary.json is written
        assert "stderr" in summary["output_lost"] and "closed" in summary["output_lost"]["stderr"]


def test_a_closed_stream_is_written_past_and_noted(tmp_path, monkeypatch):
    monkeypatch.setattr(streams, "_lost", {})
    r, w = os.pipe()
    os.close(r)
    stream = os.fdopen(w, "w", buffering=1)
    wrapped = streams.SurvivingStream(stream, "stderr")  # type: ignore[arg-type]
    assert streams.lost_output() == {}
    for _ in range(3):
        wrapped.write("progress line\n")
        wrapped.flush()
    assert "stderr" in streams.lost_output()
    stream.write("x" * 100_000)  # the descriptor now points at /dev/null: the stream itself works too
    stream.flush()
    stream.close()


def test_other_write_errors_are_not_hidden(tmp_path):
    class Full:
        def write(self, text):
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        streams.SurvivingStream(Full(), "stdout").write("x")  # type: ignore[arg-type]


def test_a_summary_written_after_lost_output_says_so(tmp_path, monkeypatch):
    from chateval.runs.directory import write_summary_file

    monkeypatch.setattr(streams, "_lost", {"stderr": "stderr was closed (broken pipe); output dropped"})
    write_summary_file(Path(tmp_path / "summary.json"), {"complete": True})
    assert json.loads((tmp_path / "summary.json").read_text())["output_lost"]["stderr"].startswith("stderr was")


@pytest.mark.slow
def test_a_benchmark_goes_on_when_its_output_pipe_is_closed(tmp_path):
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(
        "import time\nfrom chateval.memory import memory_system\n"
        "from chateval.memory.systems.full_context import FullContext\n\n"
        "@memory_system('pipe_sleeper', replace=True)\nclass Sleeper(FullContext):\n"
        "    description = 'slow'\n"
        "    async def respond(self, query, now):\n        time.sleep(0.2)\n"
        "        return await super().respond(query, now)\n"
    )
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chateval.cli",
            "bench",
            "longmemeval",
            "--data",
            str(Path(__file__).parent / "fixtures" / "lme_tiny.json"),
            "--systems",
            "pipe_sleeper",
            "--out",
            str(out),
            "--embedder",
            "hash",
            "--no-cache",
            "--plugin",
            str(sleeper),
            "--workers",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None and proc.stdout.read(1)
    proc.stdout.close()
    proc.wait(timeout=120)
    assert proc.returncode == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True and summary["n_failed"] == 0
    assert "stderr" in summary["output_lost"]
