"""zep: one episode per session (our default) against one per message (the paper's choice), on
the first LongMemEval oracle questions: graphiti LLM calls (offline model, so every call is a
deterministic heuristic and the wall time measures graphiti + Kuzu + our adapters, not a model),
facts in the graph and ingest wall time. Run:

    python benchmarks/zep_episodes.py [--data ../shared/data/longmemeval/longmemeval_oracle.json] \
        [--questions 3] [--out benchmarks/results/zep_episodes.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path

from chateval.datasets import load_longmemeval
from chateval.memory import MEMORY_SYSTEMS
from chateval.memory import systems as _systems  # noqa: F401  (registers zep)
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec


async def measure(questions: list, episodes: str) -> dict:
    calls = facts = turns = sessions = 0
    wall = 0.0
    for q in questions:
        z = MEMORY_SYSTEMS.get("zep")(ModelLayer(ModelSpec.parse("offline")), settings={"episodes": episodes},
                                      embedder=make_embedder("hash", cache=False))
        t0 = time.perf_counter()
        await z.ingest_all(q.sessions)
        wall += time.perf_counter() - t0
        calls += z.stats().llm_calls
        facts += z.item_count()
        sessions += len(q.sessions)
        turns += sum(len(s.turns) for s in q.sessions)
        await z.aclose()
    return {"episodes": episodes, "questions": len(questions), "sessions": sessions, "messages": turns,
            "llm_calls": calls, "llm_calls_per_session": calls / sessions, "facts": facts,
            "ingest_wall_s": round(wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"
                                          / "longmemeval" / "longmemeval_oracle.json"))
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/zep_episodes.json")
    args = ap.parse_args()
    questions = load_longmemeval(args.data, limit=args.questions)
    rows = [asyncio.run(measure(questions, e)) for e in ("session", "message")]
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
              "command": f"python benchmarks/zep_episodes.py --questions {args.questions}", "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
