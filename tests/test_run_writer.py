"""The run's writer thread (group commit): fsync never runs on the event loop, records are
written in batches, a failed batch stops the run as a failed write always did, and ``kill -9``
loses only the records in flight (every record whose flush returned is on disk, whole)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from chateval.runs import writer
from chateval.runs.directory import RunDir, read_jsonl
from chateval.util.errors import RunWriteError

from .conftest import REPO


def slow_fsync(calls: list[str], delay: float = 0.02, fail_at: int | None = None):
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append(threading.current_thread().name)
        if fail_at is not None and len(calls) == fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        time.sleep(delay)  # a slow disk
        real(fd)

    return fsync


def test_fsync_runs_on_the_writer_thread_in_batches_and_the_loop_does_not_wait(tmp_path, monkeypatch):
    calls: list[str] = []
    n = 60

    async def run(rd: RunDir) -> float:
        async def one(i: int) -> float:
            await asyncio.sleep(0.001 * (i % 5))
            t = time.perf_counter()
            rd.append({"id": f"s{i}", "status": "ok"})
            return time.perf_counter() - t

        return sum(await asyncio.gather(*(one(i) for i in range(n))))

    with RunDir(tmp_path / "run", {"config_hash": "x"}) as rd:
        monkeypatch.setattr(writer.os, "fsync", slow_fsync(calls))  # (config.json was fsynced on the main thread)
        in_append = asyncio.run(run(rd))
        rd.flush()
        assert sorted(r["id"] for r in read_jsonl(rd.samples_path)[0]) == sorted(f"s{i}" for i in range(n))
    assert calls and set(calls) == {"run-writer"}  # never the loop's thread
    assert len(calls) < n / 3  # group commit: several records per fsync
    assert in_append < 0.02 * len(calls) / 2  # the loop did not wait for the (slow) disk


def test_a_failed_batch_is_cut_back_and_stops_the_run(tmp_path, monkeypatch):
    calls: list[str] = []
    rd = RunDir(tmp_path / "run", {"config_hash": "x"})
    monkeypatch.setattr(writer.os, "fsync", slow_fsync(calls, delay=0.0, fail_at=3))
    with pytest.raises(RunWriteError) as caught:
        with rd:
            for i in range(3):  # one batch each: fsynced before the next is queued
                rd.append({"id": f"s{i}", "status": "ok"})
                rd.flush()
            assert rd.write_error is not None and "No space left" in str(rd.write_error)
            with pytest.raises(RunWriteError):
                rd.append({"id": "s3", "status": "ok"})  # refused: the run stops
            assert rd.accounting()["write_error"] == "No space left on device"
    assert caught.value is rd.write_error  # surfaced once more as the run's error on exit
    raw = rd.samples_path.read_bytes()
    assert raw.endswith(b"\n")  # the failed batch was cut back to the last whole line
    assert [r["id"] for r in read_jsonl(rd.samples_path)[0]] == ["s0", "s1"]


CHILD = """
import sys
from chateval.runs.directory import RunDir
rd = RunDir(sys.argv[1], {"config_hash": "x"})
i = 0
while True:
    for _ in range(7):
        rd.append({"id": f"s{i}", "status": "ok", "pad": "x" * 2000})
        i += 1
    rd.flush()
    print(i, flush=True)  # every record up to i is on disk (fsynced)
"""


@pytest.mark.slow
def test_kill_9_keeps_every_flushed_record_whole(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        flushed = 0
        while flushed < 200:
            line = proc.stdout.readline()
            assert line, "the writer process ended early"
            flushed = int(line)
        proc.send_signal(signal.SIGKILL)  # mid-run: records are queued and a batch is being written
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    records, torn = read_jsonl(out / "samples.jsonl")
    ids = [r["id"] for r in records]
    assert ids == [f"s{i}" for i in range(len(ids))]  # in order, each once, none half written
    assert len(ids) >= flushed and torn <= 1
    assert all(json.loads(json.dumps(r))["pad"] == "x" * 2000 for r in records)
