"""Peak memory of ``chateval evaluate`` as the run grows (issue 38 item 3): the peak RSS of a
whole CLI process (offline model, no cache) judging 1,000 and 10,000 generated pairwise samples,
side by side, as a ratio. Each run is its own subprocess; its peak RSS is the kernel's
``ru_maxrss`` for that child (``os.wait4``). Run:

    python benchmarks/run_memory.py [--sizes 1000 10000] [--dir DIR] [--repo TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def write_input(path: Path, n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            q = f"Question {i}: which reply explains how the user's weekend plans changed after the move?"
            f.write(
                json.dumps(
                    {
                        "id": f"s{i}",
                        "question": q,
                        "answer_1": f"They planned a hike {i} but it rained, so they stayed in and read.",
                        "answer_2": f"Answer {i}: the user moved, then went to the coast with a friend.",
                    }
                )
                + "\n"
            )


def peak_rss(argv: list[str], cwd: Path, repo: Path) -> tuple[float, float]:
    """Peak RSS (MiB) and wall time (s) of one subprocess."""
    env = dict(os.environ, PYTHONPATH=str(repo))
    log = cwd / "stderr.log"  # a file, not a pipe: a run's progress lines would fill a pipe and stall it
    t0 = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(argv)} failed ({code}): {log.read_text()[-2000:]}")
    return usage.ru_maxrss / 1024, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--dir", type=Path, default=Path.cwd())
    ap.add_argument("--repo", type=Path, default=REPO, help="the chateval tree to run (another checkout: before/after)")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "run_memory.json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="run-memory-") as tmp:
        for n in args.sizes:
            data = Path(tmp) / f"pairs{n}.jsonl"
            write_input(data, n)
            argv = [
                sys.executable,
                "-m",
                "chateval.cli",
                "evaluate",
                str(data),
                "--out",
                str(Path(tmp) / f"run{n}"),
                "--model",
                "offline",
                "--no-cache",
            ]
            rss, wall = peak_rss(argv, Path(tmp), args.repo)
            rows.append({"samples": n, "peak_rss_mib": round(rss, 1), "wall_s": round(wall, 1)})
            print(f"{n:>7} samples: peak RSS {rss:.1f} MiB, {wall:.1f} s wall", flush=True)
    base = rows[0]["peak_rss_mib"]
    for r in rows:
        r["ratio_to_first"] = round(r["peak_rss_mib"] / base, 3)
    print("peak RSS ratio to the first size: " + ", ".join(f"{r['samples']}: {r['ratio_to_first']:.2f}x" for r in rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
