"""SIGTERM and SIGHUP stop a run as Ctrl-C does (issue 35 item 12): finished records kept,
summary.json written with complete=false, one line said, exit 128 + the signal (143, 129).
Real ``chateval`` processes, real signals, a slow fake endpoint on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import write_jsonl

pytestmark = pytest.mark.slow
N = 30
FIX = Path(__file__).parent / "fixtures"


def reply(body: dict) -> str:
    return "Fine.\nScore of Assistant 1: 8\nScore of Assistant 2: 3"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(responder=reply, latency_s=0.15) as s:
        yield s


def pairs(path: Path) -> Path:
    return write_jsonl(
        path,
        [
            {
                "id": f"c{i:02d}",
                "question": f"Question {i}?",
                "answer_1": f"One {i}.",
                "answer_2": f"Two {i}.",
                "label": "1",
            }
            for i in range(N)
        ],
    )


def records(out: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in out.rglob("*.jsonl") if p.is_file())


def command(kind: str, tmp_path: Path, server: FakeOpenAIServer) -> list[str]:
    model = ["--model", "openai-compatible/m", "--base-url", server.base_url, "--no-cache", "--max-retries", "0"]
    out = str(tmp_path / "run")
    if kind == "evaluate":
        return ["evaluate", str(pairs(tmp_path / "p.jsonl")), "--out", out, *model, "--max-connections", "1"]
    if kind == "calibrate":
        return ["calibrate", str(pairs(tmp_path / "p.jsonl")), "--out", out, *model, "--max-connections", "1"]
    if kind == "audit":
        return [
            "audit",
            str(pairs(tmp_path / "p.jsonl")),
            "--out",
            out,
            *model,
            "--agents",
            "1",
            "--turns",
            "1",
            "--structured",
            "off",
            "--max-connections",
            "1",
        ]
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(
        "import time\nfrom chateval.memory import memory_system\n"
        "from chateval.memory.systems.full_context import FullContext\n\n"
        "@memory_system('sleeper', replace=True)\nclass Sleeper(FullContext):\n"
        "    description = 'slow'\n"
        "    async def respond(self, query, now):\n        time.sleep(0.3)\n"
        "        return await super().respond(query, now)\n"
    )
    return [
        "bench",
        "longmemeval",
        "--data",
        str(FIX / "lme_tiny.json"),
        "--systems",
        "sleeper",
        "--out",
        out,
        "--embedder",
        "hash",
        "--no-cache",
        "--plugin",
        str(sleeper),
        "--workers",
        "1",
    ]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("kind", ["evaluate", "bench", "calibrate", "audit"])
def test_a_stop_signal_writes_the_summary_like_ctrl_c(tmp_path, server, kind, sig):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "chateval.cli", *command(kind, tmp_path, server)],
        cwd=tmp_path,
        env=dict(os.environ, COLUMNS="200"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 90
        while records(out) < 1:
            if proc.poll() is not None:
                pytest.fail(f"ended (exit {proc.returncode}) before a record:\n{proc.communicate()[1][-3000:]}")
            assert time.monotonic() < deadline, "no record within 90 s"
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 128 + sig, err[-3000:]
    assert "Traceback" not in err and f"stopped by {sig.name}" in err, err[-3000:]
    summaries = list(out.rglob("summary.json"))
    assert summaries, f"no summary.json: {sorted(p.name for p in out.rglob('*'))}"
    summary = json.loads(summaries[0].read_text())
    assert summary.get("complete") is False, summary


def test_data_get_stopped_by_sigterm_keeps_the_part_file(tmp_path):
    from chateval.testing.file_server import FileServer

    rel = "longmemeval/longmemeval_oracle.json"
    (tmp_path / "srv" / "longmemeval").mkdir(parents=True)
    (tmp_path / "srv" / rel).write_bytes(b"[]" * 20_000)
    with FileServer(tmp_path / "srv") as server:
        server.trickle[rel] = 0.02
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chateval.cli",
                "data",
                "get",
                "longmemeval-oracle",
                "--to",
                str(tmp_path / "d"),
                "--mirror",
                server.base_url,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, COLUMNS="200"),
        )
        part = tmp_path / "d" / (rel + ".part")
        deadline = time.monotonic() + 30
        while not (part.exists() and part.stat().st_size > 0):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert part.stat().st_size > 0 and not (tmp_path / "d" / rel).exists()


@pytest.mark.parametrize("ignored", [True, False])
def test_an_ignored_sighup_stays_ignored_and_handlers_are_restored(ignored):
    from chateval.util import interrupts

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN if ignored else signal.SIG_DFL)
    try:
        with interrupts.stop_signals_like_ctrl_c():
            assert (signal.getsignal(signal.SIGHUP) == signal.SIG_IGN) is ignored
            if not ignored:
                with pytest.raises(KeyboardInterrupt):
                    os.kill(os.getpid(), signal.SIGHUP)
                    time.sleep(1)
                assert interrupts.stopped_by() == signal.SIGHUP and interrupts.stop_name() == "stopped by SIGHUP"
        assert signal.getsignal(signal.SIGHUP) == (signal.SIG_IGN if ignored else signal.SIG_DFL)
    finally:
        signal.signal(signal.SIGHUP, before)
