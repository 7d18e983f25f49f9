"""Crash safety of a run directory: ``kill -9`` in the middle of a real ``chateval evaluate``
process (plus a torn last line), then ``--resume``: each sample exactly once, and the same
verdicts as a run that was never interrupted. Ctrl-C keeps finished samples and a summary.

The endpoint is the fake OpenAI-compatible server on 127.0.0.1 with a small latency and a
deterministic responder (the verdict depends only on the sample). Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import read_jsonl, write_jsonl

N = 20
MODEL = "openai-compatible/m"
MARK = re.compile(r"\[c(\d\d)\]")


def scores(i: int) -> tuple[int, int]:
    return (6, 6) if i % 7 == 0 else ((9, 2) if i % 3 else (4, 7))


def responder(body: dict[str, Any]) -> str:
    """Deterministic: the reply depends only on which sample the request is about."""
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    found = MARK.search(text)
    a, b = scores(int(found.group(1)) if found else 1)
    return f"A fair comparison.\nScore of Assistant 1: {a}\nScore of Assistant 2: {b}"


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=responder, latency_s=0.05) as s:
        yield s


def data_file(path: Path) -> Path:
    return write_jsonl(path, [{"id": f"c{i:02d}", "question": f"[c{i:02d}] Which reply is better?",
                               "answer_1": f"First reply {i}.", "answer_2": f"Second reply {i}."}
                              for i in range(N)])


def lines_of(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    env = dict(os.environ)  # the test's isolated cache dir and no API keys (conftest)
    # SIGINT back to its default in the child: a run started as a background job of a
    # non-interactive shell (CI under `cmd &`) inherits SIGINT ignored, Python then never raises
    # KeyboardInterrupt, and Ctrl-C would not be tested at all.
    return subprocess.Popen([sys.executable, "-m", "chateval.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_lines(proc: subprocess.Popen, path: Path, n: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while lines_of(path) < n:
        if proc.poll() is not None:
            out, err = proc.communicate(timeout=10)
            pytest.fail(f"the run ended (exit {proc.returncode}) before {n} samples were written:\n{err[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.communicate(timeout=10)
            pytest.fail(f"no {n} samples within {timeout} s")
        time.sleep(0.01)


def reference_run(tmp_path: Path, data: Path, server: FakeOpenAIServer) -> tuple[dict, dict[str, Any]]:
    out = tmp_path / "reference"
    assert main(["evaluate", str(data), "--out", str(out), "--model", MODEL, "--base-url", server.base_url,
                 "--no-cache"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    return summary, {r["id"]: r["verdict"] for r in read_jsonl(out / "samples.jsonl")}


def test_kill_9_then_resume_gives_each_sample_once_and_the_same_verdicts(tmp_path, server, capsys):
    data = data_file(tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    samples = out / "samples.jsonl"
    args = ["evaluate", str(data), "--out", str(out), "--model", MODEL, "--base-url", server.base_url,
            "--cache-dir", str(tmp_path / "cache"), "--max-connections", "2"]

    proc = start(args, tmp_path)
    try:
        wait_for_lines(proc, samples, 3)
        proc.send_signal(signal.SIGKILL)  # kill -9: no cleanup, no summary
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    written = [ln for ln in samples.read_text().splitlines() if ln.strip()]
    assert 3 <= len(written) < N, "the run finished before it was killed: nothing to test"
    assert not (out / "summary.json").exists()

    # A crash in the middle of a write: a torn last line (half of a record, no newline).
    raw = samples.read_bytes()
    if not raw.endswith(b"\n"):
        raw += b"\n"  # the kill itself tore a line: keep that one too, on its own line
    complete = [json.loads(ln) for ln in raw.decode().splitlines() if _is_json(ln)]
    samples.write_bytes(raw + written[-1].encode()[: len(written[-1]) // 2])
    done_before = {r["id"] for r in complete if r["status"] == "ok"}
    assert len(done_before) >= 3

    capsys.readouterr()
    assert main([*args, "--resume"]) == 0
    err = capsys.readouterr().err
    assert f"resuming: {len(done_before)} of {N} samples already done" in err

    rows = read_jsonl(samples)  # every line parses: the torn one is gone
    assert Counter(r["id"] for r in rows) == Counter(f"c{i:02d}" for i in range(N))
    assert all(r["status"] == "ok" for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_samples"] == N and summary["n_ok"] == N and summary["complete"] is True

    ref_summary, ref_verdicts = reference_run(tmp_path, data, server)
    assert summary["verdicts"] == ref_summary["verdicts"]
    assert {r["id"]: r["verdict"] for r in rows} == ref_verdicts
    for key in ("n_samples", "n_ok", "n_failed", "parse_errors", "agent_verdicts"):
        assert summary[key] == ref_summary[key]
    expected = Counter("tie" if a == b else ("1" if a > b else "2") for a, b in map(scores, range(N)))
    assert summary["verdicts"] == dict(expected)


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
        return True
    except ValueError:
        return False


def test_ctrl_c_keeps_finished_samples_and_writes_a_summary(tmp_path, server):
    data = data_file(tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    samples = out / "samples.jsonl"
    args = ["evaluate", str(data), "--out", str(out), "--model", MODEL, "--base-url", server.base_url,
            "--no-cache", "--max-connections", "2"]
    proc = start(args, tmp_path)
    try:
        wait_for_lines(proc, samples, 2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "--resume" in err
    rows = read_jsonl(samples)
    assert len({r["id"] for r in rows}) == len(rows) >= 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_samples"] == len(rows) and summary["complete"] is (len(rows) == N)

    assert main([*args, "--resume"]) == 0
    rows = read_jsonl(samples)
    assert Counter(r["id"] for r in rows) == Counter(f"c{i:02d}" for i in range(N))
    assert all(r["status"] == "ok" for r in rows)
