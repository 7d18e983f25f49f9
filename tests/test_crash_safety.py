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


@pytest.mark.slow
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
    written = [ln for ln in samples.read_text().split("\n") if ln.strip()]
    assert 3 <= len(written) < N, "the run finished before it was killed: nothing to test"
    assert not (out / "summary.json").exists()

    # A crash in the middle of a write: a torn last line (half of a record, no newline).
    raw = samples.read_bytes()
    if not raw.endswith(b"\n"):
        raw += b"\n"  # the kill itself tore a line: keep that one too, on its own line
    complete = [json.loads(ln) for ln in raw.decode().split("\n") if _is_json(ln)]
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


@pytest.mark.slow
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


# --- user code's sys.exit() / KeyboardInterrupt fails its unit; a real Ctrl-C stops the run --------
FIX = Path(__file__).parent / "fixtures"
QUITTER = '''
import sys, time
from chateval.memory import MemorySystem, memory_system


@memory_system("{name}", replace=True)
class Quitter(MemorySystem):
    description = "a plugin that exits (or sleeps) on some questions"

    async def _ingest(self, session):
        pass

    async def context(self, question, now, items):
        return ""

    def item_count(self):
        return 0

    def _reset(self):
        pass

    async def respond(self, query, now):
        text = query if isinstance(query, str) else query[-1].content
        if any(w in text.lower() for w in {words!r}):
            {action}
        return await super().respond(query, now)
'''


def quitter(tmp_path: Path, name: str, action: str, words: tuple[str, ...]) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(QUITTER.format(name=name, action=action, words=words))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("action,needle", [("sys.exit(3)", "sys.exit(3)"),
                                           ("raise KeyboardInterrupt('boom')", "KeyboardInterrupt")])
@pytest.mark.parametrize("bench,data,systems", [("longmemeval", "lme_tiny.json", "{q}"),
                                                ("head2head", "lme_tiny.json", "{q},full_context"),
                                                ("locomo", "locomo_tiny.json", "{q}")])
def test_user_code_exit_fails_its_unit_not_the_run(tmp_path, capsys, action, needle, bench, data, systems):
    name = f"quit_{bench}_{'exit' if 'exit' in action else 'kbd'}"
    plugin = quitter(tmp_path, name, action, ("cat", "garden", "hobby", "when"))
    out = tmp_path / "run"
    args = ["bench", bench, "--data", str(FIX / data), "--systems", systems.format(q=name), "--out", str(out),
            "--embedder", "hash", "--no-cache", "--plugin", str(plugin)]
    code = main(args)
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err  # 1: some units failed
    summary = json.loads((out / "summary.json").read_text())
    rows = read_jsonl(out / "samples.jsonl")
    failed = [r for r in rows if r["status"] == "failed"]
    assert summary["n_failed"] == len(failed) >= 1 and summary["n_units"] == len(rows)
    assert all(needle in r["error"] and "\n" not in r["error"] for r in failed)
    # LoCoMo: one unit per conversation, and a failure per question inside it
    items = [qa for r in rows for qa in r["qa"]] if bench == "locomo" else rows
    assert 0 < sum(i["status"] == "failed" for i in items) < len(items), "some fail, not all"
    assert (out / "report.md").is_file()
    # --resume redoes exactly the failed units (they fail again: the plugin still exits)
    capsys.readouterr()
    assert main([*args, "--resume"]) == 1
    err = capsys.readouterr().err
    assert f"[{len(rows)}/{len(rows)}]" in err and err.count("FAILED") == len(failed), err  # only those redone
    assert json.loads((out / "summary.json").read_text())["n_failed"] == len(failed)


def test_user_strategy_exit_fails_its_sample_in_evaluate(tmp_path, capsys):
    plugin = tmp_path / "quitting_strategy.py"
    plugin.write_text(
        "import sys\n"
        "from chateval import strategy\n"
        "from chateval.debate.strategies.one_by_one import OneByOne\n\n"
        "@strategy('quitting', replace=True)\n"
        "class Quitting(OneByOne):\n"
        "    description = 'exits on every other sample'\n"
        "    async def run(self, debate):\n"
        "        if int(debate.sample.id[1:]) % 2:\n"
        "            sys.exit(4)\n"
        "        await super().run(debate)\n")
    data = write_jsonl(tmp_path / "pairs.jsonl", [{"id": f"c{i:02d}", "question": f"Q{i}?", "answer_1": "a",
                                                   "answer_2": "b"} for i in range(4)])
    out = tmp_path / "run"
    code = main(["evaluate", str(data), "--out", str(out), "--model", "offline", "--plugin", str(plugin),
                 "--strategy", "quitting", "--no-cache"])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    rows = {r["id"]: r for r in read_jsonl(out / "samples.jsonl")}
    assert len(rows) == 4
    assert [rows[f"c{i:02d}"]["status"] for i in range(4)] == ["ok", "failed", "ok", "failed"], rows
    assert "sys.exit(4)" in rows["c01"]["error"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_failed"] == 2 and summary["n_samples"] == 4
    assert code == 1


@pytest.mark.slow
def test_real_ctrl_c_still_stops_a_benchmark(tmp_path):
    """A real SIGINT while a plugin's code is running stops the run (exit 130, one line), unlike
    a KeyboardInterrupt the code raises itself."""
    plugin = quitter(tmp_path, "sleeper", "time.sleep(0.3)", ("",))  # every question: slow
    out = tmp_path / "run"
    proc = start(["bench", "longmemeval", "--data", str(FIX / "lme_tiny.json"), "--systems", "sleeper",
                  "--out", str(out), "--embedder", "hash", "--no-cache", "--plugin", str(plugin),
                  "--workers", "1"], tmp_path)
    try:
        wait_for_lines(proc, out / "samples.jsonl", 1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "--resume" in err
    rows = read_jsonl(out / "samples.jsonl")
    assert rows and all(r["status"] == "ok" for r in rows) and len(rows) < 5


def test_keyboard_interrupt_is_contained_only_without_a_real_sigint():
    """The rule behind the two tests above, in one process: code's own KeyboardInterrupt becomes
    an ordinary error; once a real SIGINT has arrived, a KeyboardInterrupt goes through."""
    import asyncio

    from chateval.util.interrupts import UserCodeExit, contain_exits, watch_sigint

    async def raise_inside(real_sigint: bool) -> None:
        with watch_sigint():
            if real_sigint:
                os.kill(os.getpid(), signal.SIGINT)  # asyncio's handler cancels this task; ours notes it
                time.sleep(0.05)  # the handler runs in the main thread before the next bytecode
            with contain_exits():
                raise KeyboardInterrupt("from code")

    with pytest.raises(UserCodeExit, match="KeyboardInterrupt"):
        asyncio.run(raise_inside(False))
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(raise_inside(True))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
