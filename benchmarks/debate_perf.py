"""Debate performance against a fake OpenAI-compatible endpoint with simulated latency.

Measures, with the real client code path (autogen's OpenAI client inside chateval's model layer):
  1. wall time per sample for each strategy vs its critical path (sequential model calls x latency);
  2. throughput of N samples vs --max-connections, against the two lower bounds
     ceil(N / C) x critical path x latency and (total calls / C) x latency;
  3. an identical rerun: calls made and speed-up from the completion cache.

Run: python benchmarks/debate_perf.py [--latency 0.1] [--samples 24] [--out benchmarks/results/debate_perf.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import tempfile
import time
from pathlib import Path

from chateval import Evaluator, Sample
from chateval.debate.strategies import STRATEGIES
from chateval.testing.fake_openai import FakeOpenAIServer

AGENTS, TURNS = 3, 2


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", question=f"Question number {i}: what is {i} plus {i}?",
                   answer_1=f"It is {2 * i}.", answer_2=f"Maybe {2 * i + 1}.") for i in range(n)]


def evaluator(url: str, strategy: str, connections: int, cache_dir: str | None = None) -> Evaluator:
    return Evaluator(model="openai-compatible/bench", base_url=url, strategy=strategy, agents=AGENTS, turns=TURNS,
                     max_connections=connections, cache=cache_dir is not None, cache_dir=cache_dir)


async def per_sample(url: str, latency: float, repeats: int = 3) -> list[dict]:
    rows = []
    for name in ("one_by_one", "simultaneous", "simultaneous_summarizer"):
        ev = evaluator(url, name, connections=16)
        crit = STRATEGIES.get(name)().critical_path_calls(AGENTS, TURNS)
        walls = []
        for s in samples(repeats):
            t0 = time.perf_counter()
            r = await ev.judge(s)
            walls.append(time.perf_counter() - t0)
            assert r.status == "ok", r.error
        wall = min(walls)  # best of a few: scheduling noise only adds
        rows.append({"strategy": name, "calls_per_sample": r.usage.calls, "critical_path_calls": crit,
                     "bound_s": crit * latency, "wall_s": wall, "ratio": wall / (crit * latency)})
        await ev.aclose()
    return rows


async def throughput(url: str, latency: float, n: int) -> list[dict]:
    rows = []
    crit = STRATEGIES.get("one_by_one")().critical_path_calls(AGENTS, TURNS)
    for c in (1, 2, 4, 8, 16):
        ev = evaluator(url, "one_by_one", connections=c)
        t0 = time.perf_counter()
        results = await ev.evaluate(samples(n))
        wall = time.perf_counter() - t0
        calls = sum(r.usage.calls for r in results)
        bound_samples = math.ceil(n / c) * crit * latency
        bound_calls = max(calls / c, crit) * latency
        rows.append({"max_connections": c, "samples": n, "calls": calls, "wall_s": wall,
                     "samples_per_s": n / wall, "bound_ceil_n_over_c_s": bound_samples,
                     "bound_calls_over_c_s": bound_calls, "ratio_to_calls_bound": wall / bound_calls})
        await ev.aclose()
    return rows


async def cache_rerun(url: str, n: int, server: FakeOpenAIServer) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        out = {}
        for run in ("first", "rerun"):
            before = len(server.requests)
            ev = evaluator(url, "one_by_one", connections=8, cache_dir=cache)
            t0 = time.perf_counter()
            await ev.evaluate(samples(n))
            out[run] = {"wall_s": time.perf_counter() - t0, "requests": len(server.requests) - before}
            await ev.aclose()
        out["speedup"] = out["first"]["wall_s"] / out["rerun"]["wall_s"]
        return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--out", default="benchmarks/results/debate_perf.json")
    args = ap.parse_args()
    with FakeOpenAIServer(latency_s=args.latency) as server:
        result = {
            "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                        "platform": platform.platform()},
            "latency_s": args.latency, "agents": AGENTS, "turns": TURNS,
            "per_sample": await per_sample(server.base_url, args.latency),
            "throughput": await throughput(server.base_url, args.latency, args.samples),
            "cache": await cache_rerun(server.base_url, args.samples, server),
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
