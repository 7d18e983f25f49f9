"""What chateval adds per model call, measured against a bare ``openai.AsyncOpenAI`` loop.

Both sides run in this one process, one after the other, against the same fake OpenAI-compatible
server (a separate process, so its threads do not compete for this one's GIL) with a fixed
latency per reply:

  bare      N chat.completions.create calls at concurrency C (a semaphore), messages of the size
            a debate turn sends;
  chateval  N/4 samples judged by a 2-agent, 2-turn one_by_one panel (4 calls each) with
            --max-connections C and no cache: the full path (panel, autogen agents, model layer,
            retries, metering, parsing).

It alternates the two sides ``--repeats`` times and reports the best wall time of each, their
ratio, chateval's CPU time, the process's peak RSS (both sides, the chateval run being the
larger), and `chateval --help` start-up times. Run:

    python benchmarks/client_overhead.py [--calls 2000] [--connections 64] [--latency 0.05] \
        [--out benchmarks/results/client_overhead.json] [--profile FILE.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path


def serve(latency: float, port_queue: "mp.Queue[int]") -> None:
    from chateval.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer(latency_s=latency)
    port_queue.put(server.port)
    while True:
        time.sleep(3600)


async def bare_loop(url: str, calls: int, connections: int) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0)
    limit = asyncio.Semaphore(connections)
    messages = [{"role": "system", "content": "You are one judge on a panel. " * 20},
                {"role": "user", "content": "Question and two answers to compare. " * 40}]

    async def one(i: int) -> None:
        async with limit:
            r = await client.chat.completions.create(model="bench", messages=messages, temperature=0)
            assert r.choices[0].message.content

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall = time.perf_counter() - t0
    await client.close()
    return wall


async def chateval_run(url: str, calls: int, connections: int) -> dict:
    from chateval import Evaluator, Sample

    ev = Evaluator(model="openai-compatible/bench", base_url=url, strategy="one_by_one", agents=2, turns=2,
                   max_connections=connections, cache=False)
    samples = [Sample(id=f"s{i}", question=f"Question number {i}: what is {i} plus {i}?",
                      answer_1=f"It is {2 * i}.", answer_2=f"Maybe {2 * i + 1}.") for i in range(calls // 4)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    results = await ev.evaluate(samples)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    made = ev.layer.totals.calls
    await ev.aclose()
    assert all(r.status == "ok" for r in results), [r.error for r in results if r.status != "ok"][:3]
    return {"wall_s": wall, "cpu_s": cpu, "calls": made}


def help_time(args: list[str], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "chateval.cli", *args], capture_output=True, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--out", default="benchmarks/results/client_overhead.json")
    ap.add_argument("--repeats", type=int, default=3, help="alternate the two sides this many times; best of each")
    ap.add_argument("--profile", help="write a cProfile of the chateval side here")
    args = ap.parse_args()

    ports: "mp.Queue[int]" = mp.Queue()
    server = mp.Process(target=serve, args=(args.latency, ports), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ports.get(timeout=60)}/v1"
    try:
        await bare_loop(url, 64, args.connections)  # warm both paths (imports, connections)
        await chateval_run(url, 64, args.connections)
        bares, ours_runs = [], []
        for _ in range(args.repeats):  # alternated, so a noisy moment on a shared machine hits both sides
            bares.append(await bare_loop(url, args.calls, args.connections))
            ours_runs.append(await chateval_run(url, args.calls, args.connections))
        bare = min(bares)
        ours = min(ours_runs, key=lambda r: r["wall_s"])
        if args.profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
            await chateval_run(url, args.calls, args.connections)
            prof.disable()
            prof.dump_stats(args.profile)
    finally:
        server.terminate()
    result = {
        "machine": f"{platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": "python " + " ".join(sys.argv),
        "calls": args.calls, "connections": args.connections, "latency_s": args.latency,
        "repeats": args.repeats, "bare_openai_walls_s": [round(b, 3) for b in bares],
        "chateval_walls_s": [round(r["wall_s"], 3) for r in ours_runs],
        "bare_openai_wall_s": round(bare, 3), "chateval_wall_s": round(ours["wall_s"], 3),
        "chateval_cpu_s": round(ours["cpu_s"], 3), "chateval_calls": ours["calls"],
        "ratio": round(ours["wall_s"] / bare, 3),
        "lower_bound_s": round(args.calls / args.connections * args.latency, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "help_s": round(help_time(["--help"]), 3), "evaluate_help_s": round(help_time(["evaluate", "--help"]), 3),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
