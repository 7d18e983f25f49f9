"""How fast does THEANINE answer with a large memory graph? (a measurement, not a test)

Builds a synthetic user with N memories (default 5,000: 500 sessions of 10 turns, topics drawn
from a small vocabulary so memories relate and long, branching timelines form), ingests it with
the offline model and the hashing embedder, then times respond() on a few dialogues.

    python examples/theanine_scale.py [--memories 5000] [--queries 5] [--seed 0]

It then times the untangling alone on the worst shape for it: a 5,000-memory "ladder" (two
memories per day, each linked to both of the next day's) with 2^2500 raw timelines through
every memory, which are counted exactly and sampled, never listed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from datetime import datetime, timedelta, timezone

from chateval.memory import MEMORY_SYSTEMS, Session, Turn
from chateval.memory import systems as _systems  # noqa: F401  (registers theanine)
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec

TOPICS = [
    ("guitar", "band", "concert", "song"), ("marathon", "running", "training", "race"),
    ("garden", "tomatoes", "roses", "soil"), ("puppy", "dog", "walks", "vet"),
    ("kitchen", "recipe", "pasta", "dinner"), ("novel", "chapter", "writing", "publisher"),
    ("camping", "tent", "lake", "hiking"), ("promotion", "office", "manager", "project"),
    ("apartment", "rent", "landlord", "neighbors"), ("painting", "canvas", "gallery", "colors"),
    ("chess", "tournament", "opening", "club"), ("wedding", "ring", "venue", "guests"),
    ("piano", "lessons", "recital", "teacher"), ("soccer", "team", "coach", "league"),
    ("bakery", "bread", "sourdough", "oven"), ("travel", "japan", "flight", "hotel"),
]
MARKERS = ["I now", "I want to", "because of that I", "I felt so happy when I", "I couldn't", "I plan to", "I"]


def synthetic_sessions(n_memories: int, per_session: int, rng: random.Random) -> list[Session]:
    start = datetime(2020, 1, 1, tzinfo=timezone.utc)
    sessions = []
    for s in range(n_memories // per_session):
        sid = f"s{s + 1}"
        turns = []
        for t in range(per_session):
            topic = rng.choice(TOPICS)
            words = rng.sample(topic, 3)
            text = f"{rng.choice(MARKERS)} talked about the {words[0]} and the {words[1]} with {words[2]} today."
            turns.append(Turn(id=f"{sid}-t{t + 1}", role="user", content=text))
        sessions.append(Session(id=sid, date=start + timedelta(days=s), turns=turns))
    return sessions


def ladder(n: int):
    from chateval.memory.timeline_graph import TimelineGraph

    g = TimelineGraph()
    start = datetime(2020, 1, 1, tzinfo=timezone.utc)
    for i in range(n):
        g.add_memory(f"m{i}", text=f"event {i}", time=start + timedelta(days=i // 2))
        if i >= 2:
            for j in ((i // 2 - 1) * 2, (i // 2 - 1) * 2 + 1):
                g.link(f"m{j}", f"m{i}", "SameTopic")
    return g


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=5000)
    ap.add_argument("--per-session", type=int, default=10)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sessions = synthetic_sessions(args.memories, args.per_session, rng)
    system = MEMORY_SYSTEMS.get("theanine")(ModelLayer(ModelSpec.parse("offline")),
                                            embedder=make_embedder("hash", cache=False))
    t0 = time.perf_counter()
    await system.ingest_all(sessions)
    ingest_s = time.perf_counter() - t0
    g = system.graph
    print(f"graph: {len(g)} memories, {g.g.number_of_edges()} edges, {len(g.components())} components; "
          f"ingest {ingest_s:.1f} s ({1000 * ingest_s / len(sessions):.0f} ms/session, offline model)")
    now = sessions[-1].date + timedelta(days=1)
    latencies, recalls, paths = [], [], []
    for q in range(args.queries):
        topic = TOPICS[q % len(TOPICS)]
        dialogue = [Turn(id="d1", role="assistant", content="How have you been?"),
                    Turn(id="d2", role="user", content=f"Busy with the {topic[0]} and the {topic[1]} again.")]
        before = system.stats().recall_s
        t1 = time.perf_counter()
        resp = await system.respond(dialogue, now)
        latencies.append(time.perf_counter() - t1)
        recalls.append(system.stats().recall_s - before)
        counts = [g.count_timelines(i.id) for i in resp.recalled]
        paths.append(max(counts))
        print(f"query {q + 1}: {latencies[-1] * 1000:.0f} ms (recall incl. timeline untangling "
              f"{recalls[-1] * 1000:.0f} ms); raw timelines through the retrieved memories: "
              f"{', '.join(f'{c:.3g}' for c in counts)}; context {resp.context_tokens} tokens (~)")
    print(f"respond: median {1000 * statistics.median(latencies):.0f} ms, max {1000 * max(latencies):.0f} ms "
          f"over {args.queries} queries (offline model: refinement and answer cost ~0; add your model's latency)")
    g = ladder(args.memories)
    through = f"m{args.memories // 2}"
    t2 = time.perf_counter()
    total = g.count_timelines(through)
    sample = g.sample_timelines(through, 3, random.Random(args.seed))
    print(f"ladder of {args.memories} memories: {len(str(total))}-digit number of raw timelines through {through}; "
          f"counting + sampling 3 took {1000 * (time.perf_counter() - t2):.0f} ms "
          f"(each {len(sample[0])} memories long before the max_events cut)")


if __name__ == "__main__":
    asyncio.run(main())
