"""A model endpoint that refuses connections stops the run after the first call that no retry
fixes: one line naming the endpoint (redacted), exit code 2, finished samples kept, nothing
recorded as failed for it (so --resume does the rest once the server is up)."""

from __future__ import annotations

import json
import socket

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import EXAMPLES, FIXTURES, read_jsonl, write_jsonl

FAST = ["--max-retries", "1", "--retry-base-delay", "0.01", "--no-cache"]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connections are refused
    return port


def samples(tmp_path, n: int = 6):
    rows = read_jsonl(EXAMPLES / "faireval_pairwise.jsonl")  # the fake server answers in its form
    return write_jsonl(tmp_path / "in.jsonl", [dict(rows[i % len(rows)], id=f"s{i}") for i in range(n)])


def one_error_line(err: str, port: int) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and not any("FAILED" in ln for ln in lines), err  # no sample failed one by one
    line = " ".join(err[err.index("error:"):].split())
    assert f"model endpoint http://127.0.0.1:{port}/v1 cannot be reached" in line
    return line


@pytest.mark.slow
def test_evaluate_stops_at_a_refused_connection_and_keeps_finished_samples(tmp_path, capsys):
    data, out = samples(tmp_path), tmp_path / "run"
    with FakeOpenAIServer() as server:  # two samples done while the server is up
        url = server.base_url
        port = int(url.split(":")[2].split("/")[0])
        assert main(["evaluate", str(data), "--task", "pairwise", "--model", "openai-compatible/m", "--base-url",
                     url, "--agents", "1", "--turns", "1", "--limit", "2", *FAST, "--out", str(out)]) == 0
    capsys.readouterr()
    # The server is gone: the rest of the run stops at the first refusal.
    assert main(["evaluate", str(data), "--task", "pairwise", "--model", "openai-compatible/m", "--base-url",
                 url, "--agents", "1", "--turns", "1", *FAST, "--out", str(out), "--resume"]) == 2
    one_error_line(capsys.readouterr().err, port)
    recs = read_jsonl(out / "samples.jsonl")
    assert sorted(r["id"] for r in recs) == ["s0", "s1"] and all(r["status"] == "ok" for r in recs)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and summary["n_ok"] == 2 and summary["n_failed"] == 0


def test_the_endpoint_is_named_without_its_secrets(tmp_path, capsys):
    port = closed_port()
    url = f"http://user:hunter2@127.0.0.1:{port}/v1?api_key=sk-abc"
    assert main(["evaluate", str(samples(tmp_path)), "--task", "pairwise", "--model", "openai-compatible/m",
                 "--base-url", url, *FAST, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err and "sk-abc" not in err
    assert f"127.0.0.1:{port}/v1" in " ".join(err.split()) and "cannot be reached" in err


@pytest.mark.slow
def test_bench_stops_and_writes_an_incomplete_summary(tmp_path, capsys):
    port, out = closed_port(), tmp_path / "lme"
    assert main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context",
                 "--answer-model", "openai-compatible/m", "--base-url", f"http://127.0.0.1:{port}/v1",
                 "--embedder", "hash", *FAST, "--workers", "2", "--out", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err, port)
    assert "--resume" in line
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and "cannot be reached" in summary["stopped"]
    assert not [r for r in read_jsonl(out / "samples.jsonl") if r["status"] != "ok"]  # none failed for it


def test_audit_stops_too(tmp_path, capsys):
    port, out = closed_port(), tmp_path / "audit"
    assert main(["audit", str(samples(tmp_path)), "--model", "openai-compatible/m", "--base-url",
                 f"http://127.0.0.1:{port}/v1", "--agents", "1", "--turns", "1", *FAST, "--out", str(out)]) == 2
    one_error_line(capsys.readouterr().err, port)
    assert not [r for r in read_jsonl(out / "samples.jsonl") if r["status"] != "ok"]
    assert json.loads((out / "summary.json").read_text())["n_failed"] == 0
