"""A pool of endpoints (`--base-url URL1,URL2` or the flag repeated): least-busy routing, resting
an endpoint that keeps failing, and a run that finishes when one server dies mid-run."""

from __future__ import annotations

import json
import threading
import time

import pytest

from chateval.cli import main
from chateval.models import ModelLayer, ModelSpec, RetryPolicy
from chateval.models.pool import REST_AFTER, REST_S, Endpoint, EndpointPool
from chateval.testing.fake_openai import DEFAULT_REPLY, FakeOpenAIServer

from .conftest import REPO, read_jsonl

PAIRWISE = REPO / "examples" / "faireval_pairwise.jsonl"


def evaluate(out, *base_urls: str, extra: tuple[str, ...] = ()) -> int:
    flags = [a for u in base_urls for a in ("--base-url", u)]
    return main(["evaluate", str(PAIRWISE), "--model", "openai-compatible/x", *flags, "--out", str(out),
                 "--no-cache", "--retry-base-delay", "0.01", "--max-connections", "8", *extra])


@pytest.mark.slow
def test_calls_are_spread_over_the_pool(tmp_path):
    with FakeOpenAIServer(latency_s=0.05) as a, FakeOpenAIServer(latency_s=0.05) as b:
        assert evaluate(tmp_path / "o", a.base_url, b.base_url) == 0
        na, nb = len(a.requests), len(b.requests)
    assert na + nb > 20 and min(na, nb) >= 0.3 * (na + nb), (na, nb)  # least-busy routing balances them
    cfg = json.loads((tmp_path / "o" / "config.json").read_text())
    assert cfg["judging"]["base_url"] == f"{a.base_url},{b.base_url}"


def test_a_server_killed_mid_run_costs_no_sample(tmp_path):
    with FakeOpenAIServer(latency_s=0.02) as a:
        b = FakeOpenAIServer(latency_s=0.02)
        seen = []

        def dies_after_five(body: dict) -> str:
            seen.append(1)
            if len(seen) == 5:  # kill the server from outside its own handler thread
                threading.Thread(target=b.close).start()
            return DEFAULT_REPLY

        b.responder = dies_after_five
        try:
            rc = evaluate(tmp_path / "o", f"{a.base_url},{b.base_url}")
        finally:
            b.close()
        served_by_a = len(a.requests)
    rows = read_jsonl(tmp_path / "o" / "samples.jsonl")
    assert rc == 0 and rows and all(r["status"] == "ok" for r in rows)
    assert len(seen) >= 5 and served_by_a > len(seen)


class Flaky:
    model_info = {"structured_output": False}
    sends_schema = True

    def __init__(self, fail: bool) -> None:
        self.fail, self.calls = fail, 0

    async def complete(self, messages, *, step, response_format, params):
        self.calls += 1
        if self.fail:
            raise ConnectionError("refused")
        from chateval.models.backends import Completion

        return Completion(text="ok", prompt_tokens=1, completion_tokens=1)

    async def close(self) -> None:
        return None


async def test_an_endpoint_that_keeps_failing_is_rested(monkeypatch):
    bad, good = Flaky(fail=True), Flaky(fail=False)
    pool = EndpointPool([Endpoint("bad", bad), Endpoint("good", good)])  # type: ignore[arg-type]
    layer = ModelLayer(ModelSpec.parse("openai-compatible/x", "http://127.0.0.1:9/v1"), backend=pool,
                       retry=RetryPolicy(max_retries=2, base_delay_s=0.0))
    for _ in range(20):
        assert (await layer.complete([], step=None)).text == "ok"
    assert bad.calls == 1 and good.calls == 20  # one failure (retried elsewhere) moves the traffic away

    pool.endpoints[1].in_flight = 5  # the healthy endpoint is busy, so the failing idle one is picked...
    for _ in range(REST_AFTER - 1):
        with pytest.raises(ConnectionError):
            await pool.complete([], step=None, response_format=None, params=None)
    assert pool.endpoints[0].consecutive == REST_AFTER
    assert pool.pick().name == "good"  # ... until it has failed REST_AFTER times in a row: rested
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + REST_S + 1)
    assert pool.pick().name == "bad"  # back after the rest
    assert pool.stats() == {"bad": {"calls": 0, "failures": REST_AFTER}, "good": {"calls": 20, "failures": 0}}


def test_a_bad_url_in_the_pool_is_one_line(tmp_path, capsys):
    assert evaluate(tmp_path / "o", "http://127.0.0.1:1/v1", "not-a-url") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'not-a-url' is not an http(s) URL" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("given", [["http://127.0.0.1:8004/v1", "http://127.0.0.1:8005/v1"], ["http://127.0.0.1:8004/v1,http://127.0.0.1:8005/v1"]])
def test_pool_is_built_from_either_form(given):
    from chateval.evaluation.config import EvalConfig

    cfg = EvalConfig.merged({"model": "openai-compatible/x", "base_url": given if len(given) > 1 else given[0]})
    backend = ModelLayer(ModelSpec.parse(cfg.model, cfg.base_url)).backend
    assert isinstance(backend, EndpointPool) and [e.name for e in backend.endpoints] == ["127.0.0.1:8004/v1", "127.0.0.1:8005/v1"]
