"""What the `http` memory system adds per request, against a bare shared-client httpx loop
(issue 38; a measurement, not a test).

The reference agent (examples/http_agent.py) runs in its own process on 127.0.0.1. In this
process, alternated ``--repeats`` times, each side runs the same cases (``--cases``, each
``--sessions`` sessions of ``--turns`` turns and one question), ``--concurrency`` cases at a time:

  chateval   one `http` system per case: ``ingest_all`` then ``respond`` (its protocol: /reset,
             /ingest_batch in chunks of ``--ingest-batch`` sessions, /respond), each system with
             its own kept-alive client, retries, size cap, deadline and metering;
  bare       the same requests with the same bodies through one shared ``httpx.AsyncClient``:
             json.dumps, POST, json.loads — nothing else;
  per-request-client (``--old``)  the bare loop with a new ``httpx.AsyncClient`` per request,
             as the `http` system did before issue 38.

It reports the best wall time and the CPU time (``time.process_time``; this process only) of
each side and the ratio chateval / bare (goal ≤ 1.3×). Run:

    python benchmarks/http_agent.py [--cases 40] [--sessions 50] [--concurrency 8] \\
        [--ingest-batch 64] [--repeats 3] [--old] [--out benchmarks/results/http_agent.json]

``--ingest-batch 1`` compares the one-session form (one /ingest per session) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def start_agent() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "http_agent.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()  # "listening on http://127.0.0.1:PORT"
    return proc, line.rsplit(" ", 1)[-1]


def make_cases(n: int, sessions: int, turns: int) -> list[tuple[list[Any], str, datetime]]:
    from chateval.memory import Session, Turn

    t0 = datetime(2023, 1, 1, tzinfo=UTC)
    out = []
    for c in range(n):
        ss = [
            Session(
                id=f"c{c}-s{s}",
                date=t0 + timedelta(days=s),
                turns=[
                    Turn(
                        id=f"c{c}-s{s}-t{t}",
                        role="user" if t % 2 == 0 else "assistant",
                        content=f"In session {s} I talked about topic {(c + s + t) % 17} and my plans for week {t}. "
                        * 3,
                    )
                    for t in range(turns)
                ],
            )
            for s in range(sessions)
        ]
        out.append((ss, f"What did I say about topic {c % 17}?", t0 + timedelta(days=sessions + 1)))
    return out


def requests_of(case: tuple[list[Any], str, datetime], case_id: str, batch: int) -> list[tuple[str, dict[str, Any]]]:
    """The requests the `http` system sends for one case, bodies as it builds them."""
    sessions, question, now = case

    def body(s: Any) -> dict[str, Any]:
        return {
            "session_id": s.id,
            "date": s.date.isoformat(),
            "turns": [{"turn_id": t.id, "role": t.role, "content": t.content} for t in s.turns],
        }

    out: list[tuple[str, dict[str, Any]]] = [("/reset", {"case_id": case_id})]
    for lo in range(0, len(sessions), batch):
        chunk = sessions[lo : lo + batch]
        if len(chunk) > 1:
            out.append(("/ingest_batch", {"case_id": case_id, "sessions": [body(s) for s in chunk]}))
        else:
            out += [("/ingest", {"case_id": case_id, **body(s)}) for s in chunk]
    out.append(("/respond", {"case_id": case_id, "question": question, "date": now.isoformat(), "dialogue": None}))
    return out


HEADERS = {"Content-Type": "application/json; charset=utf-8", "X-Chateval-Protocol": "chateval-memory-agent/1"}


async def run_bare(url: str, cases: list[Any], args: argparse.Namespace, *, shared: bool) -> int:
    import httpx

    sem = asyncio.Semaphore(args.concurrency)
    client = httpx.AsyncClient(timeout=60) if shared else None
    sent = 0

    async def post(path: str, payload: dict[str, Any]) -> dict[str, Any]:
        content = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        if client is not None:
            r = await client.post(url + path, content=content, headers=HEADERS)
        else:
            async with httpx.AsyncClient(timeout=60) as one:
                r = await one.post(url + path, content=content, headers=HEADERS)
        r.raise_for_status()
        data: dict[str, Any] = r.json()
        return data

    async def one(n: int, case: Any) -> None:
        nonlocal sent
        async with sem:
            for path, payload in requests_of(case, f"bare-{n}", args.ingest_batch):
                await post(path, payload)
                sent += 1

    try:
        await asyncio.gather(*(one(n, c) for n, c in enumerate(cases)))
    finally:
        if client is not None:
            await client.aclose()
    return sent


async def run_chateval(url: str, cases: list[Any], args: argparse.Namespace) -> int:
    from chateval.memory import MEMORY_SYSTEMS
    from chateval.memory import systems as _systems  # noqa: F401  (registers http)
    from chateval.models import ModelLayer, ModelSpec

    layer = ModelLayer(ModelSpec.parse("offline"))
    sem = asyncio.Semaphore(args.concurrency)
    sent = 0

    async def one(case: Any) -> None:
        nonlocal sent
        sessions, question, now = case
        async with sem:
            system = MEMORY_SYSTEMS.get("http")(layer, settings={"url": url, "ingest_batch": args.ingest_batch})
            try:
                await system.ingest_all(sessions)
                resp = await system.respond(question, now)
                assert resp.answer
            finally:
                await system.aclose()
            sent += len(requests_of(case, "x", args.ingest_batch))

    await asyncio.gather(*(one(c) for c in cases))
    return sent


def timed(coro: Any) -> tuple[float, float, int]:
    w, c = time.perf_counter(), time.process_time()
    n = asyncio.run(coro)
    return time.perf_counter() - w, time.process_time() - c, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--ingest-batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old", action="store_true", help="also time a new client per request (before issue 38)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    # Imported before anything is timed (a run's start-up is not what this measures).
    from chateval.memory import systems as _systems  # noqa: F401
    from chateval.memory.systems import http_agent

    http_agent._tls()
    proc, url = start_agent()
    try:
        cases = make_cases(args.cases, args.sessions, args.turns)
        sides: dict[str, list[tuple[float, float, int]]] = {"bare": [], "chateval": []}
        if args.old:
            sides["per-request-client"] = []
        for _ in range(args.repeats):
            sides["bare"].append(timed(run_bare(url, cases, args, shared=True)))
            sides["chateval"].append(timed(run_chateval(url, cases, args)))
            if args.old:
                sides["per-request-client"].append(timed(run_bare(url, cases, args, shared=False)))
    finally:
        proc.terminate()
        proc.wait()
    best = {k: min(v) for k, v in sides.items()}
    requests = best["bare"][2]
    for k, runs in sides.items():
        walls = " / ".join(f"{w:.2f}" for w, _, _ in runs)
        print(
            f"{k:>19}: wall {walls} s (best {best[k][0]:.2f}; {1000 * best[k][0] / requests:.1f} ms a request), "
            f"CPU {min(c for _, c, _ in runs):.2f} s"
        )
    ratio = best["chateval"][0] / best["bare"][0]
    cpu_ratio = min(c for _, c, _ in sides["chateval"]) / min(c for _, c, _ in sides["bare"])
    print(f"{requests} requests a side; chateval / bare: {ratio:.2f}× wall, {cpu_ratio:.2f}× CPU (goal ≤ 1.3×)")
    if args.old:
        print(f"per-request client / bare: {best['per-request-client'][0] / best['bare'][0]:.2f}× wall")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"python": platform.python_version(), "argv": sys.argv[1:], "requests": requests}
        runs = {k: [{"wall_s": round(w, 3), "cpu_s": round(c, 3)} for w, c, _ in v] for k, v in sides.items()}
        args.out.write_text(
            json.dumps(
                {"meta": meta, "runs": runs, "ratio_wall": round(ratio, 3), "ratio_cpu": round(cpu_ratio, 3)}, indent=1
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
