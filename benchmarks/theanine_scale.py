"""How THEANINE's ingest and replies grow with the store (issue 38; a measurement, not a test).

For each size N (default 2,000, 4,000 and 8,000 memories), a fresh THEANINE ingests a synthetic
user of N memories (N / 10 sessions of 10 turns from a small topic vocabulary, so memories
relate and long, branching timelines form) with the offline model and the hashing embedder, then
answers ``--queries`` dialogues (each a new query: its timelines are walked cold). It reports the
ingest's and the median reply's wall and CPU time (``time.process_time``: the machine may be
shared, and CPU seconds move less with load) and the ratio of each to the size before it; the
goal is ≤ 2.3× per doubling.

    python benchmarks/theanine_scale.py [--sizes 2000,4000,8000] [--queries 9] [--seed 0] \\
        [--repeats 1] [--warmup N] [--qdrant-search] [--blas-threads one|default|both] \\
        [--out benchmarks/results/theanine_scale.json]

On a shared machine one run per size lets the load of the moment decide a wall ratio. With
``--repeats R`` the sizes run interleaved, R rounds in one process (2000, 4000, 8000, 2000, ...),
after ``--warmup`` runs of the smallest size (default 1 when R > 1; excluded: the first run pays
imports, Qdrant's and numpy's first calls and the allocator's growth); each figure is the median
over the rounds, and the ratios are ratios of those medians. Every run also records the 1-minute
load average at its start and end and, from ``getrusage``, its involuntary and voluntary context
switches, blocks written and read, and major page faults (wall time that is not CPU is either
waiting for a core, which the switches show, or waiting for the disk, which the blocks show), and
the number, wall and CPU time of the ingest's exact cosine searches, and the number of Python's
garbage collections during the ingest (full and young) with their CPU time (see ``time_gc``).

``--qdrant-search`` searches Qdrant's local mode once per query, as THEANINE did before issue 38
(for a before/after in one run; slow: quadratic ingest). ``--blas-threads default`` runs the
in-memory search's matrix product on the BLAS's default threads (one per core), as before
``cosine_index.one_blas_thread``; ``both`` measures each size both ways every round (the order
alternating by round). A quick run: ``--sizes 200,400,800``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import resource
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TOPICS = [
    ("guitar", "band", "concert", "song"),
    ("marathon", "running", "training", "race"),
    ("garden", "tomatoes", "roses", "soil"),
    ("puppy", "dog", "walks", "vet"),
    ("kitchen", "recipe", "pasta", "dinner"),
    ("novel", "chapter", "writing", "publisher"),
    ("camping", "tent", "lake", "hiking"),
    ("promotion", "office", "manager", "project"),
    ("apartment", "rent", "landlord", "neighbors"),
    ("painting", "canvas", "gallery", "colors"),
    ("chess", "tournament", "opening", "club"),
    ("wedding", "ring", "venue", "guests"),
    ("piano", "lessons", "recital", "teacher"),
    ("soccer", "team", "coach", "league"),
    ("bakery", "bread", "sourdough", "oven"),
    ("travel", "japan", "flight", "hotel"),
]
MARKERS = ["I now", "I want to", "because of that I", "I felt so happy when I", "I couldn't", "I plan to", "I"]


def synthetic_sessions(n_memories: int, per_session: int, seed: int) -> list[Any]:
    from chateval.memory import Session, Turn

    rng = random.Random(seed)
    start = datetime(2020, 1, 1, tzinfo=UTC)
    sessions = []
    for s in range(n_memories // per_session):
        sid = f"s{s + 1}"
        turns = []
        for t in range(per_session):
            words = rng.sample(rng.choice(TOPICS), 3)
            text = f"{rng.choice(MARKERS)} talked about the {words[0]} and the {words[1]} with {words[2]} today."
            turns.append(Turn(id=f"{sid}-t{t + 1}", role="user", content=text))
        sessions.append(Session(id=sid, date=start + timedelta(days=s), turns=turns))
    return sessions


def qdrant_search() -> None:
    """THEANINE's search as before issue 38: Qdrant's local mode, one query at a time."""
    from chateval.memory.systems.retrieval import VectorMemory
    from chateval.memory.systems.theanine import Theanine

    async def search_many(self: Any, vectors: list[Any], k: int) -> list[Any]:
        return [await VectorMemory.search(self, v, k) for v in vectors]

    async def search(self: Any, vector: Any, k: int) -> Any:
        return await VectorMemory.search(self, vector, k)

    Theanine.search_many = search_many  # type: ignore[method-assign]
    Theanine.search = search  # type: ignore[method-assign]


SEARCH = {"calls": 0, "wall_s": 0.0, "cpu_s": 0.0}  # the ingest's exact cosine searches
GC = {"full_collections": 0, "young_collections": 0, "cpu_s": 0.0}  # the ingest's garbage collections
_GC_START = [0.0]


def time_gc(phase: str, info: dict[str, Any]) -> None:
    """A ``gc.callbacks`` hook: count and time Python's cyclic collections. A full (generation 2)
    collection walks every tracked object of the process, and runs when the objects that survived
    younger collections since the last one exceed a quarter of the objects it kept: a store that
    grows triggers them every 25% or so of growth, so one size may get one and the next three."""
    if phase == "start":
        _GC_START[0] = time.process_time()
        return
    GC["full_collections" if info["generation"] == 2 else "young_collections"] += 1
    GC["cpu_s"] += time.process_time() - _GC_START[0]


def time_searches() -> None:
    """Count and time ``CosineIndex.search_many`` (the ingest's quadratic part: each search is
    O(N), once per session)."""
    from chateval.memory.cosine_index import CosineIndex

    real = CosineIndex.search_many

    def timed(self: Any, queries: Any, k: int) -> Any:
        w, c = time.perf_counter(), time.process_time()
        try:
            return real(self, queries, k)
        finally:
            SEARCH["calls"] += 1
            SEARCH["wall_s"] += time.perf_counter() - w
            SEARCH["cpu_s"] += time.process_time() - c

    CosineIndex.search_many = timed  # type: ignore[method-assign]


def usage() -> dict[str, float]:
    """This process's CPU seconds (user + system, every thread) and what it waited for."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu": r.ru_utime + r.ru_stime,
        "involuntary_switches": r.ru_nivcsw,  # preempted: another process had the core
        "voluntary_switches": r.ru_nvcsw,  # blocked: I/O, a lock, a sleep
        "blocks_written": r.ru_oublock,
        "blocks_read": r.ru_inblock,
        "major_faults": r.ru_majflt,
    }


def set_blas(variant: str) -> None:
    """``one``: the search's product on one BLAS thread (``cosine_index.one_blas_thread``);
    ``default``: on the BLAS's default threads (one per core), as before it."""
    import contextlib

    from chateval.memory import cosine_index

    if not hasattr(cosine_index, "_one_blas_thread"):
        cosine_index._one_blas_thread = cosine_index.one_blas_thread  # type: ignore[attr-defined]
    saved = cosine_index._one_blas_thread  # type: ignore[attr-defined]
    cosine_index.one_blas_thread = saved if variant == "one" else contextlib.nullcontext  # type: ignore[assignment]


async def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    from chateval.memory import MEMORY_SYSTEMS, Turn
    from chateval.memory import systems as _systems  # noqa: F401  (registers theanine)
    from chateval.memory.embeddings import make_embedder
    from chateval.models import ModelLayer, ModelSpec

    sessions = synthetic_sessions(size, args.per_session, args.seed)
    system = MEMORY_SYSTEMS.get("theanine")(
        ModelLayer(ModelSpec.parse("offline")), embedder=make_embedder("hash", cache=False)
    )
    gc.collect()  # the previous run's garbage is not this run's cost
    load0, u0 = os.getloadavg()[0], usage()
    SEARCH.update(calls=0, wall_s=0.0, cpu_s=0.0)
    GC.update(full_collections=0, young_collections=0, cpu_s=0.0)
    gc.callbacks.append(time_gc)
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            await system.ingest_all(sessions)
        finally:
            gc.callbacks.remove(time_gc)
        ingest_wall, ingest_cpu = time.perf_counter() - w0, time.process_time() - c0
        u1, searches, collections = usage(), dict(SEARCH), dict(GC)
        g = system.graph
        now = sessions[-1].date + timedelta(days=1)
        walls, cpus = [], []
        for q in range(args.queries):
            topic = TOPICS[q % len(TOPICS)]
            dialogue = [
                Turn(id="d1", role="assistant", content=f"How have you been? (query {q})"),
                Turn(id="d2", role="user", content=f"Busy with the {topic[q % 4]} and the {topic[(q + 1) % 4]}."),
            ]
            w1, c1 = time.perf_counter(), time.process_time()
            await system.respond(dialogue, now)
            walls.append(time.perf_counter() - w1)
            cpus.append(time.process_time() - c1)
        out = {
            "memories": len(g),
            "edges": g.g.number_of_edges(),
            "largest_component": max(len(c) for c in g.components()),
            "ingest_wall_s": round(ingest_wall, 3),
            "ingest_cpu_s": round(ingest_cpu, 3),
            "reply_wall_s": round(statistics.median(walls), 4),
            "reply_cpu_s": round(statistics.median(cpus), 4),
            # what the ingest waited for (see usage()); wall / CPU above 1 is time off the CPU
            "ingest_wait": {k: round(u1[k] - u0[k], 3) for k in u0 if k != "cpu"},
            "ingest_search": {k: round(v, 3) for k, v in searches.items()},
            "ingest_gc": {k: round(v, 3) for k, v in collections.items()},
            "load_start": round(load0, 2),
            "load_end": round(os.getloadavg()[0], 2),
        }
    finally:
        await system.aclose()
    print(
        f"{out['memories']:>6} memories ({out['edges']} edges, largest component {out['largest_component']}): "
        f"ingest {out['ingest_wall_s']:.1f} s wall / {out['ingest_cpu_s']:.1f} s CPU; "
        f"reply median {1000 * out['reply_wall_s']:.0f} ms wall / {1000 * out['reply_cpu_s']:.0f} ms CPU; "
        f"load {out['load_start']:.1f}-{out['load_end']:.1f}; ingest waits {out['ingest_wait']}; "
        f"ingest searches {out['ingest_search']}; ingest GC {out['ingest_gc']}",
        flush=True,
    )
    return out


TIMES = ("ingest_wall_s", "ingest_cpu_s", "reply_wall_s", "reply_cpu_s")


def summarise(runs: list[dict[str, Any]], sizes: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per size the median of each time over the rounds; per doubling the ratio of the medians,
    with the range of the same ratio within each round (how much one round alone could mislead)."""
    by_size = {n: [r for r in runs if r["size"] == n] for n in sizes}
    medians = [
        {"memories": n, "rounds": len(rs), **{k: round(statistics.median(r[k] for r in rs), 4) for k in TIMES}}
        for n, rs in by_size.items()
    ]
    ratios = []
    for a, b in zip(medians, medians[1:]):
        rounds = sorted({r["round"] for r in by_size[a["memories"]]} & {r["round"] for r in by_size[b["memories"]]})
        per_round = {
            k: [
                next(r[k] for r in by_size[b["memories"]] if r["round"] == i)
                / next(r[k] for r in by_size[a["memories"]] if r["round"] == i)
                for i in rounds
            ]
            for k in TIMES
        }
        ratios.append(
            {
                "from": a["memories"],
                "to": b["memories"],
                **{k: round(b[k] / a[k], 2) for k in TIMES},
                "round_range": {k: [round(min(v), 2), round(max(v), 2)] for k, v in per_round.items()},
            }
        )
    return medians, ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000,4000,8000", help="memories per run, comma-separated")
    ap.add_argument("--per-session", type=int, default=10)
    ap.add_argument("--queries", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="rounds over the sizes, interleaved, in one run")
    ap.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="excluded runs of the smallest size first (default: 1 with --repeats > 1, else 0)",
    )
    ap.add_argument("--qdrant-search", action="store_true", help="search as before issue 38 (Qdrant local)")
    ap.add_argument(
        "--blas-threads",
        choices=("one", "default", "both"),
        default="one",
        help="the search's product on one BLAS thread (ours), the BLAS's default threads (before), or both "
        "(each size measured with each, in alternating order, every round)",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.qdrant_search:
        qdrant_search()
    else:
        time_searches()
    sizes = [int(n) for n in args.sizes.split(",")]
    warmup = args.warmup if args.warmup is not None else (1 if args.repeats > 1 else 0)
    variants = ["one", "default"] if args.blas_threads == "both" else [args.blas_threads]
    for _ in range(warmup):
        print("warm-up (excluded): ", end="", flush=True)
        set_blas(variants[0])
        asyncio.run(measure(min(sizes), args))
    runs = []
    for i in range(args.repeats):
        for n in sizes:
            for v in variants if i % 2 == 0 else variants[::-1]:
                set_blas(v)
                print(f"round {i + 1}/{args.repeats}, BLAS threads {v}: ", end="", flush=True)
                runs.append({"round": i + 1, "size": n, "blas_threads": v, **asyncio.run(measure(n, args))})
    summary = {}
    for v in variants:
        medians, ratios = summarise([r for r in runs if r["blas_threads"] == v], sizes)
        summary[v] = {"medians": medians, "ratios": ratios}
        for m in medians:
            print(
                f"BLAS threads {v}, median of {m['rounds']}: {m['memories']:>6} memories: ingest "
                f"{m['ingest_wall_s']:.1f} s wall / {m['ingest_cpu_s']:.1f} s CPU; reply "
                f"{1000 * m['reply_wall_s']:.0f} ms wall / {1000 * m['reply_cpu_s']:.0f} ms CPU"
            )
        for r in ratios:
            rr = r["round_range"]
            print(
                f"BLAS threads {v}, {r['from']} -> {r['to']}: ingest ×{r['ingest_wall_s']} wall (rounds "
                f"{rr['ingest_wall_s']}), ×{r['ingest_cpu_s']} CPU (rounds {rr['ingest_cpu_s']}); reply "
                f"×{r['reply_wall_s']} wall (rounds {rr['reply_wall_s']}), ×{r['reply_cpu_s']} CPU (rounds "
                f"{rr['reply_cpu_s']}) (goal ≤ 2.3×)"
            )
    loads = [r[k] for r in runs for k in ("load_start", "load_end")]
    print(
        f"load average (1 min) over the runs: {min(loads):.1f}–{max(loads):.1f}, median {statistics.median(loads):.1f}"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "search": "qdrant" if args.qdrant_search else "index",
            "blas_threads": args.blas_threads,
            "repeats": args.repeats,
            "warmup_runs_excluded": warmup,
            "order": "interleaved: every size once per round, smallest first",
            "load_average_1min": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
        }
        first = summary[variants[0]]
        out = {"meta": meta, "runs": runs, "medians": first["medians"], "ratios": first["ratios"]}
        if len(variants) > 1:
            out["by_blas_threads"] = summary
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
