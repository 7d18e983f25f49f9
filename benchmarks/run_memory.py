"""Peak memory of ``chateval evaluate`` as the run grows (issue 38 item 3): the peak RSS of a
whole CLI process (offline model, no cache) judging 1,000 and 10,000 generated pairwise samples,
side by side, as a ratio. Each run is its own subprocess; its peak RSS is the kernel's
``ru_maxrss`` for that child (``os.wait4``). Run:

    python benchmarks/run_memory.py [--sizes 1000 10000] [--dir DIR]
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


def peak_rss(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """Peak RSS (MiB), wall time (s) and exit code of one subprocess."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(
            f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
        )
    return usage.ru_maxrss / 1024, wall, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--dir", type=Path, default=Path.cwd())
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
            rss, wall, _ = peak_rss(argv, Path(tmp))
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
