"""What --executor ray costs against a local run of the same benchmark.

The same retrieval-only LongMemEval run (baseline rankers and the ``retrieval`` memory system,
hash embedder, offline model, no completion cache) is timed

  local     --executor local --workers W (one process, asyncio);
  ray       --executor ray --ray-workers 2 --workers W on a local Ray instance started first
            (ray.init(num_cpus=2); its start-up is reported on its own, as a cluster would
            already be running): includes starting the two actors, each importing chateval
            and rebuilding the run's settings, and sending every unit and record;

and the script checks that both summaries agree (timing fields aside) before reporting wall
times, their ratio and the overhead per unit ((ray - local) / units). Run:

    python benchmarks/ray_overhead.py [--data ../shared/data/longmemeval/longmemeval_s_dev.json] \
        [--limit 20] [--workers 4] [--out benchmarks/results/ray_overhead.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def untimed(x: Any) -> Any:
    """A summary without what differs between any two runs (wall-clock fields) or says which
    executor ran (``pre_embed``: the run-level embedding pass runs locally only, and says why not)."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if not (k.endswith("_s") or k in ("latency", "pre_embed"))}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="default: longmemeval_s_dev.json in $CHATEVAL_DATA_DIR/longmemeval "
                                                  "or ../shared/data/longmemeval")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/ray_overhead.json"))
    args = ap.parse_args()

    import ray

    from chateval.bench import run
    from chateval.bench.selection import default_data_candidates

    if args.data is None:
        found = [c / "longmemeval_s_dev.json" for c in default_data_candidates("longmemeval")]
        args.data = str(next((f for f in found if f.is_file()), found[0]))

    tmp = Path(tempfile.mkdtemp(prefix="chateval-ray-bench-"))
    cfg = {"data": args.data, "retrieval_only": True, "rankers": ["bm25", "dense", "hybrid"],
           "systems": ["retrieval"], "embedder": "hash", "answer_model": "offline", "cache": False,
           "limit": args.limit, "workers": args.workers}
    try:
        t0 = time.perf_counter()
        local = run("longmemeval", cfg | {"out": str(tmp / "local")})
        local_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray_init_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        remote = run("longmemeval", cfg | {"out": str(tmp / "ray"), "executor": "ray", "ray_workers": 2})
        ray_s = time.perf_counter() - t0
        ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if untimed(local) != untimed(remote):
        a, b = untimed(local), untimed(remote)
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        print(f"the two summaries differ ({', '.join(keys)}): no timing reported", file=sys.stderr)
        for k in keys:
            print(f"  {k}: local {json.dumps(a.get(k))[:300]}\n  {k}: ray   {json.dumps(b.get(k))[:300]}", file=sys.stderr)
        return 1
    units = local["n_units"]
    result = {
        "command": "python benchmarks/ray_overhead.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_avg_at_end": os.getloadavg()},
        "ray": ray.__version__, "units": units, "questions": local["n_questions"], "workers_per_process": args.workers,
        "local_s": round(local_s, 2), "ray_s": round(ray_s, 2), "ray_init_s": round(ray_init_s, 2),
        "ratio": round(ray_s / local_s, 2), "overhead_per_unit_s": round((ray_s - local_s) / units, 3),
        "summaries_equal": True,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
