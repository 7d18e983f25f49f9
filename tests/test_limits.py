"""Nothing overshoots (issue 35): the --max-cost bound with many units in flight, usage an endpoint
reports validated before it is trusted, and every HTTP client's overall deadline and size cap."""

from __future__ import annotations

import asyncio
import json

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer, Fault
from chateval.testing.faults import FaultMix

from .conftest import EXAMPLES, read_jsonl, write_jsonl

PRICED = "limits-test-model"
FAST = ["--max-retries", "0", "--timeout", "30", "--no-cache"]


def _many_samples(tmp_path, n: int):
    rows = read_jsonl(EXAMPLES / "faireval_pairwise.jsonl")
    return write_jsonl(tmp_path / "many.jsonl", [rows[i % len(rows)] | {"id": f"s{i}"} for i in range(n)])


def test_max_cost_with_many_samples_in_flight_stays_within_cap_plus_running_estimates(tmp_path, capsys):
    # 16 connections, 32 samples in flight at once and a cap of about 3 samples: checking only what
    # was spent let all of them start before any was counted (the issue's $24.72 for a $0.50 cap).
    data = _many_samples(tmp_path, 48)
    with FakeOpenAIServer(latency_s=0.05) as server:
        base = [
            "evaluate",
            str(data),
            "--model",
            f"openai-compatible/{PRICED}",
            f"--base-url={server.base_url}",
            "--price",
            f"{PRICED}=1000,1000",
            "--agents",
            "1",
            "--turns",
            "1",
            "--max-connections",
            "16",
            *FAST,
        ]
        one = tmp_path / "one"
        assert main([*base, "--out", str(one), "--limit", "1"]) == 0
        unit_cost = json.loads((one / "summary.json").read_text())["usage"]["cost_usd"]
        server.reset()

        out = tmp_path / "capped"
        cap = 3.5 * unit_cost
        assert main([*base, "--out", str(out), "--max-cost", f"{cap:.6f}"]) == 3
    summary = json.loads((out / "summary.json").read_text())
    rows = read_jsonl(out / "samples.jsonl")
    costliest = max(r["usage"]["cost_usd"] for r in rows)
    spent = summary["usage"]["cost_usd"]
    assert 0 < len(rows) < 48 and summary["stopped"]["n_not_run"] == 48 - len(rows)
    # A sample starts only while spent + reserved + its estimate (the costliest finished sample) fits
    # the cap: the cap is passed by at most what running samples cost beyond that estimate.
    assert spent <= cap + costliest * 0.2, (spent, cap, costliest, len(rows))
    assert len(rows) >= 2  # it does not stop before the cap is (nearly) used


def test_unit_runner_reserves_each_units_estimate(tmp_path, monkeypatch):
    """The benchmarks', calibrate's and audit's unit runner: 40 units, 16 workers, a cap of 4 units."""
    from chateval.bench.base import run_units
    from chateval.models import ModelLayer
    from chateval.models.budget import cost_cap
    from chateval.models.prices import PRICES, Price
    from chateval.models.spec import ModelSpec
    from chateval.runs.directory import RunDir

    monkeypatch.setitem(PRICES, PRICED, Price(1000, 1000))

    async def go(server: FakeOpenAIServer, cap_usd: float):
        with cost_cap(cap_usd) as cap:
            layer = ModelLayer(ModelSpec.parse(f"openai-compatible/{PRICED}", server.base_url), max_connections=16)

            async def unit(u: int) -> dict:
                from autogen_core.models import UserMessage

                comp = await layer.complete([UserMessage(content=f"unit {u} " + "x" * 400, source="user")])
                return {"status": "ok", "text": comp.text}

            with RunDir(tmp_path / f"run{cap_usd}", {"config_hash": "x"}, key="key") as run:
                records = await run_units([(f"u{i}", i) for i in range(40)], unit, run, workers=16)
            await layer.close()
        return cap, records

    with FakeOpenAIServer(latency_s=0.05) as server:
        probe, _ = asyncio.run(go(server, 1e9))
        per_unit = probe.spent_usd / 40
        cap, records = asyncio.run(go(server, 4 * per_unit))
    assert cap.not_run > 0 and len(records) + cap.not_run == 40
    assert cap.spent_usd <= 4 * per_unit * 1.05, (cap.spent_usd, per_unit)
    assert len(records) >= 3


# --- usage an endpoint reports ------------------------------------------------------------------

BAD_USAGE = {
    "negative input": {"prompt_tokens": -1e9},
    "absurd input": {"prompt_tokens": 1e300},
    "negative output": {"completion_tokens": -3},
    "output past max_tokens": {"completion_tokens": 10_000_000},
    "input past the request": {"prompt_tokens": 5_000_000},
    "cache reads past input": {"prompt_tokens_details": {"cached_tokens": 10**6}},
}


def _layer(spec: str, base_url: str, retries: int = 1):
    from chateval.models import ModelLayer, ModelSpec
    from chateval.models.retry import RetryPolicy

    return ModelLayer(ModelSpec.parse(spec, base_url), retry=RetryPolicy(max_retries=retries, base_delay_s=0))


def _ask(layer, text: str = "How are you?"):
    from autogen_core.models import UserMessage

    async def go():
        try:
            return await layer.complete([UserMessage(content=text, source="user")])
        finally:
            await layer.close()

    return asyncio.run(go())


@pytest.mark.parametrize("usage", list(BAD_USAGE.values()), ids=list(BAD_USAGE))
def test_impossible_usage_is_a_failed_call_and_never_metered(usage, monkeypatch):
    from chateval.models.prices import PRICES, Price
    from chateval.util.errors import ModelCallError

    monkeypatch.setitem(PRICES, PRICED, Price(1000, 1000))
    with FakeOpenAIServer() as server:
        server.script([Fault("usage", usage=usage)] * 2)  # the first answer and its retry
        layer = _layer(f"openai-compatible/{PRICED}", server.base_url)
        with pytest.raises(ModelCallError, match="impossible usage"):
            _ask(layer)
        assert server.counts["usage"] == 2
    t = layer.totals
    assert t.failed_calls == 1 and t.calls == 0 and t.prompt_tokens == 0 and t.completion_tokens == 0
    assert t.cost_usd == 0.0


def test_usage_within_the_bound_is_metered_as_reported(monkeypatch):
    from chateval.models.prices import PRICES, Price

    monkeypatch.setitem(PRICES, PRICED, Price(1000, 1000))
    with FakeOpenAIServer() as server:
        server.script([Fault("usage", usage={"prompt_tokens": 900, "completion_tokens": 1000})])
        layer = _layer(f"openai-compatible/{PRICED}", server.base_url)
        assert _ask(layer, "x" * 400).text == "ok"
    assert (layer.totals.prompt_tokens, layer.totals.completion_tokens) == (900, 1000)


def test_impossible_usage_from_anthropic_fails_the_call(monkeypatch):
    pytest.importorskip("anthropic")
    from chateval.util.errors import ModelCallError

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeOpenAIServer() as server:
        server.script([Fault("usage", usage={"input_tokens": -10**9})] * 2)
        layer = _layer("anthropic/claude-test", server.base_url.removesuffix("/v1"))
        with pytest.raises(ModelCallError, match="impossible usage"):
            _ask(layer)
    assert layer.totals.failed_calls == 1 and layer.totals.prompt_tokens == 0


def test_impossible_embedding_usage_fails_the_batch(monkeypatch):
    from chateval.models.embeddings import EmbeddingClient
    from chateval.util.errors import ModelCallError

    with FakeOpenAIServer() as server:
        server.script([Fault("usage", usage={"prompt_tokens": -10**9})] * 2)
        client = EmbeddingClient("openai-compatible/emb", base_url=server.base_url,
                                 layer=_layer("openai-compatible/emb", server.base_url))

        async def go():
            try:
                return await client.embed(["a text", "another"])
            finally:
                await client.close()

        with pytest.raises(ModelCallError, match="impossible usage"):
            asyncio.run(go())
    assert client.log.totals().prompt_tokens == 0


def test_a_cap_still_trips_when_the_endpoint_reports_negative_usage(tmp_path, capsys):
    # Every reply claims -1e9 input tokens: before, the run's cost went to -$1.6M and the cap never
    # tripped; now each such call fails, nothing negative is metered and the samples are failed.
    data = _many_samples(tmp_path, 4)
    with FakeOpenAIServer() as server:
        server.faults = FaultMix({Fault("usage", usage={"prompt_tokens": -1e9}): 1.0})
        code = main(["evaluate", str(data), "--model", f"openai-compatible/{PRICED}", f"--base-url={server.base_url}",
                     "--price", f"{PRICED}=1000,1000", "--agents", "1", "--turns", "1", "--max-cost", "1",
                     "--out", str(tmp_path / "o"), *FAST])
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert code != 0 and summary["usage"]["cost_usd"] >= 0 and summary["usage"]["prompt_tokens"] >= 0
    rows = read_jsonl(tmp_path / "o" / "samples.jsonl")
    assert rows and all(r["status"] == "failed" and "impossible usage" in r["error"] for r in rows)
