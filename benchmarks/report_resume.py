"""What a finished run's ``--resume`` costs with its figures up to date, against drawing them again.

A finished run's ``--resume`` runs no unit; it writes the summary and the report again. Its
figures' inputs have not changed, so each PNG (stamped with the hash of what drew it) is kept and
matplotlib is never imported. The other side is the same command after deleting the PNGs:
every figure is drawn, as every report did before the stamps. Both are fresh
``python -m chateval.cli bench longmemeval ... --resume`` processes, alternated ``--repeats``
times; the table gives median wall and CPU (user + system) seconds and their ratios. Run:

    python benchmarks/report_resume.py [--repeats 5] [--out benchmarks/results/report_resume.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests/fixtures/lme_tiny.json"


def timed(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/report_resume.json"))
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="chateval-report-resume-"))
    out = tmp / "run"
    argv = [sys.executable, "-m", "chateval.cli", "bench", "longmemeval", "--data", str(FIXTURE),
            "--systems", "full_context,retrieval", "--answer-model", "offline", "--embedder", "hash",
            "--no-cache", "--out", str(out)]
    try:
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)  # the finished run
        pngs = sorted(p.name for p in out.glob("*.png"))
        if not pngs:
            print("the run drew no figure: nothing to measure", file=sys.stderr)
            return 1
        kept: list[tuple[float, float]] = []
        drawn: list[tuple[float, float]] = []
        for _ in range(args.repeats):
            kept.append(timed([*argv, "--resume"]))
            for p in out.glob("*.png"):
                p.unlink()
            drawn.append(timed([*argv, "--resume"]))
            if sorted(p.name for p in out.glob("*.png")) != pngs:
                print("the figures drawn again are not the run's figures", file=sys.stderr)
                return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs: list[tuple[float, float]], i: int) -> float:
        return round(statistics.median(x[i] for x in xs), 3)

    result = {
        "command": "python benchmarks/report_resume.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_avg_at_end": os.getloadavg()},
        "figures": pngs,
        "repeats": args.repeats,
        "kept": {"wall_s": med(kept, 0), "cpu_s": med(kept, 1)},
        "drawn": {"wall_s": med(drawn, 0), "cpu_s": med(drawn, 1)},
        "wall_ratio": round(med(kept, 0) / med(drawn, 0), 2),
        "cpu_ratio": round(med(kept, 1) / med(drawn, 1), 2),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
