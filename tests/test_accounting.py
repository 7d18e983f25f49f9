"""Honest accounting: cached calls and tokens apart from live ones, unknown prices as null (not
$0), retries and failed calls counted per run and per sample, wall time over every resumed
attempt, the effective endpoint recorded (redacted), and one file mode for all run files."""

from __future__ import annotations

import json
import stat

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer, Fault

from .conftest import REPO, read_jsonl

PAIRWISE = REPO / "examples" / "faireval_pairwise.jsonl"


def evaluate(out, base_url: str, *extra: str) -> int:
    return main(["evaluate", str(PAIRWISE), "--model", "openai-compatible/acct-model", "--base-url", base_url,
                 "--out", str(out), "--retry-base-delay", "0.01", "--limit", "3", *extra])


def usage(out) -> dict:
    return json.loads((out / "summary.json").read_text())["usage"]


@pytest.mark.slow
def test_a_cached_rerun_reports_cache_apart_and_an_unknown_price_as_null(tmp_path):
    with FakeOpenAIServer() as server:
        assert evaluate(tmp_path / "a", server.base_url) == 0
        first = usage(tmp_path / "a")
        live_requests = len(server.requests)
        assert evaluate(tmp_path / "a", server.base_url, "--overwrite") == 0
        again = usage(tmp_path / "a")
        assert len(server.requests) == live_requests  # all from the cache
    assert first["calls"] == live_requests and first["prompt_tokens"] > 0 and first["cached_calls"] == 0
    assert first["cost_usd"] is None  # no price for this model: unknown, not $0
    assert again["calls"] == 0 and again["cached_calls"] == live_requests
    assert again["prompt_tokens"] == again["completion_tokens"] == 0
    assert (again["cached_prompt_tokens"], again["cached_completion_tokens"]) == (first["prompt_tokens"],
                                                                                  first["completion_tokens"])
    assert again["cost_usd"] is None  # still unknown: a cache hit of an unpriced model is not free


def test_a_priced_model_costs_nothing_from_the_cache(tmp_path):
    with FakeOpenAIServer() as server:
        price = ("--price", "acct-model=1,2")
        assert evaluate(tmp_path / "a", server.base_url, *price) == 0
        assert evaluate(tmp_path / "a", server.base_url, *price, "--overwrite") == 0
    assert usage(tmp_path / "a")["cost_usd"] == 0.0


def test_retries_and_failed_calls_are_counted_per_run_and_per_sample(tmp_path):
    with FakeOpenAIServer() as server:
        server.script([Fault("429", retry_after=0.01), Fault("500")])
        assert evaluate(tmp_path / "a", server.base_url, "--no-cache", "--max-connections", "1") == 0
    u = usage(tmp_path / "a")
    rows = read_jsonl(tmp_path / "a" / "samples.jsonl")
    assert u["retries"] == 2 and u["failed_calls"] == 0
    assert sum(r["usage"]["retries"] for r in rows) == 2


def test_wall_time_covers_every_attempt_and_the_endpoint_is_recorded(tmp_path, monkeypatch):
    out = tmp_path / "a"
    with FakeOpenAIServer() as server:
        server.script([Fault("500")] * 3)  # the first sample's first call fails for good
        # One sample, so its one call meets all three faults.
        assert evaluate(out, server.base_url, "--no-cache", "--max-retries", "2", "--limit", "1") == 1
        failed = usage(out)
        assert failed["failed_calls"] == 1 and failed["retries"] == 2
        assert evaluate(out, server.base_url, "--no-cache", "--resume", "--limit", "1") == 0
    summary = json.loads((out / "summary.json").read_text())
    attempts = summary["wall_time_attempts_s"]
    assert len(attempts) == 2 and summary["wall_time_s"] == sum(attempts)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["judging"]["base_url"] == server.base_url and "chateval" in cfg["versions"]


def test_openai_base_url_from_the_environment_is_recorded_redacted(tmp_path, monkeypatch):
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-canary")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url.replace("http://", "http://user:pw@"))
        assert main(["evaluate", str(PAIRWISE), "--model", "openai/gpt-4o-mini", "--out", str(tmp_path / "a"),
                     "--limit", "1"]) == 0
        assert server.requests  # the calls went there
    text = (tmp_path / "a" / "config.json").read_text()
    base = json.loads(text)["judging"]["base_url"]
    assert base == server.base_url.replace("http://", "http://***@")
    assert "pw@" not in text and "sk-test-canary" not in text


def test_run_files_share_one_mode(tmp_path):
    with FakeOpenAIServer() as server:
        assert evaluate(tmp_path / "a", server.base_url) == 0
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "a").iterdir() if not p.name.startswith(".")}
    assert modes["config.json"] == modes["summary.json"] == modes["samples.jsonl"], modes
