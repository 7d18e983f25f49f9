"""CPU per call of a simultaneous batch, against a bare ``openai.AsyncOpenAI`` loop (issue 38 item 7).

  bare      the same number of ``chat.completions.create`` calls at concurrency C, messages of a
            debate turn's size (``client_overhead.bare_loop``);
  chateval  a batch of N samples judged by the ``simultaneous`` strategy, 2 agents x 2 turns
            (4 calls a sample) with --max-connections C, no cache: panel, agents, model layer,
            parsing.

Both in this process against one fake OpenAI-compatible server (a separate process), alternated
``--repeats`` times after a warm-up; reports each side's median CPU seconds (this process's user +
system time, what a loaded machine inflates least) and wall seconds, and the CPU ratio. Run:

    python benchmarks/simultaneous_batch.py [--samples 20] [--connections 64] [--latency 0.05] \\
        [--repeats 7] [--out benchmarks/results/simultaneous_batch.json] [--profile FILE.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_overhead import bare_loop, serve  # noqa: E402


async def ours(url: str, samples: int, connections: int) -> tuple[float, float, int]:
    from chateval import Evaluator, Sample

    ev = Evaluator(model="openai-compatible/bench", base_url=url, strategy="simultaneous", agents=2, turns=2,
                   max_connections=connections, cache=False)
    batch = [Sample(id=f"s{i}", question=f"Question number {i}: what is {i} plus {i}?",
                    answer_1=f"It is {2 * i}.", answer_2=f"Maybe {2 * i + 1}.") for i in range(samples)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    results = await ev.evaluate(batch)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    calls = ev.layer.totals.calls
    await ev.aclose()
    assert all(r.status == "ok" for r in results), [r.error for r in results if r.status != "ok"][:3]
    return cpu, wall, calls


async def bare(url: str, calls: int, connections: int) -> tuple[float, float]:
    cpu0 = time.process_time()
    wall = await bare_loop(url, calls, connections)
    return time.process_time() - cpu0, wall


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default="benchmarks/results/simultaneous_batch.json")
    ap.add_argument("--profile", help="write a cProfile of the chateval side (--repeats batches) here")
    args = ap.parse_args()

    ports: mp.Queue[int] = mp.Queue()
    server = mp.Process(target=serve, args=(args.latency, ports), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ports.get(timeout=60)}/v1"
    try:
        _, _, calls = await ours(url, args.samples, args.connections)  # warm-up: imports, first connections
        await bare(url, calls, args.connections)
        b, o = [], []
        for _ in range(args.repeats):
            b.append(await bare(url, calls, args.connections))
            o.append((await ours(url, args.samples, args.connections))[:2])
        if args.profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.repeats):
                await ours(url, args.samples, args.connections)
            prof.disable()
            prof.dump_stats(args.profile)
    finally:
        server.terminate()

    def med(xs: list[tuple[float, float]], i: int) -> float:
        return round(statistics.median(x[i] for x in xs), 4)

    result = {
        "command": "python benchmarks/simultaneous_batch.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_avg_at_end": os.getloadavg()},
        "samples": args.samples, "calls": calls, "connections": args.connections, "latency_s": args.latency,
        "repeats": args.repeats,
        "bare": {"cpu_s": med(b, 0), "wall_s": med(b, 1)},
        "chateval": {"cpu_s": med(o, 0), "wall_s": med(o, 1)},
        "cpu_ratio": round(med(o, 0) / med(b, 0), 2),
        "wall_ratio": round(med(o, 1) / med(b, 1), 2),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
