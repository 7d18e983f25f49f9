"""Nothing overshoots (issue 35): the --max-cost bound with many units in flight, usage an endpoint
reports validated before it is trusted, and every HTTP client's overall deadline and size cap."""

from __future__ import annotations

import asyncio
import json

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

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
