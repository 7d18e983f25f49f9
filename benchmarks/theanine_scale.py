"""How THEANINE's ingest and replies grow with the store (issue 38; a measurement, not a test).

For each size N (default 2,000, 4,000 and 8,000 memories), a fresh THEANINE ingests a synthetic
user of N memories (N / 10 sessions of 10 turns from a small topic vocabulary, so memories
relate and long, branching timelines form) with the offline model and the hashing embedder, then
answers ``--queries`` dialogues (each a new query: its timelines are walked cold). It reports the
ingest's and the median reply's wall and CPU time (``time.process_time``: the machine may be
shared, and CPU seconds move less with load) and the ratio of each to the size before it; the
goal is ≤ 2.3× per doubling.

    python benchmarks/theanine_scale.py [--sizes 2000,4000,8000] [--queries 9] [--seed 0] \\
        [--qdrant-search] [--out benchmarks/results/theanine_scale.json]

``--qdrant-search`` searches Qdrant's local mode once per query, as THEANINE did before issue 38
(for a before/after in one run; slow: quadratic ingest). A quick run: ``--sizes 200,400,800``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
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


async def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    from chateval.memory import MEMORY_SYSTEMS, Turn
    from chateval.memory import systems as _systems  # noqa: F401  (registers theanine)
    from chateval.memory.embeddings import make_embedder
    from chateval.models import ModelLayer, ModelSpec

    sessions = synthetic_sessions(size, args.per_session, args.seed)
    system = MEMORY_SYSTEMS.get("theanine")(
        ModelLayer(ModelSpec.parse("offline")), embedder=make_embedder("hash", cache=False)
    )
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        await system.ingest_all(sessions)
        ingest_wall, ingest_cpu = time.perf_counter() - w0, time.process_time() - c0
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
        }
    finally:
        await system.aclose()
    print(
        f"{out['memories']:>6} memories ({out['edges']} edges, largest component {out['largest_component']}): "
        f"ingest {out['ingest_wall_s']:.1f} s wall / {out['ingest_cpu_s']:.1f} s CPU; "
        f"reply median {1000 * out['reply_wall_s']:.0f} ms wall / {1000 * out['reply_cpu_s']:.0f} ms CPU",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2000,4000,8000", help="memories per run, comma-separated")
    ap.add_argument("--per-session", type=int, default=10)
    ap.add_argument("--queries", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--qdrant-search", action="store_true", help="search as before issue 38 (Qdrant local)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.qdrant_search:
        qdrant_search()
    runs = [asyncio.run(measure(int(n), args)) for n in args.sizes.split(",")]
    ratios = []
    for a, b in zip(runs, runs[1:]):
        r = {
            "from": a["memories"],
            "to": b["memories"],
            **{k: round(b[k] / a[k], 2) for k in ("ingest_wall_s", "ingest_cpu_s", "reply_wall_s", "reply_cpu_s")},
        }
        ratios.append(r)
        print(
            f"{r['from']} -> {r['to']}: ingest ×{r['ingest_wall_s']} wall, ×{r['ingest_cpu_s']} CPU; "
            f"reply ×{r['reply_wall_s']} wall, ×{r['reply_cpu_s']} CPU (goal ≤ 2.3×)"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "search": "qdrant" if args.qdrant_search else "index",
        }
        args.out.write_text(json.dumps({"meta": meta, "runs": runs, "ratios": ratios}, indent=1) + "\n")


if __name__ == "__main__":
    main()
