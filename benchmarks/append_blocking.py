"""How long the event loop is blocked in ``RunDir.append`` during an offline ``evaluate`` (issue 38
item 4): the writer thread's group commit (now) against the former append, which wrote and
fsynced each record on the loop (kept here as ``inline_append``), side by side in one process on
the same disk, alternating so the machine's load hits both. Run:

    python benchmarks/append_blocking.py [--samples 500] [--rounds 2] [--dir DIR]

``--dir`` puts the runs on the disk to measure (default: a temporary folder under the current one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from chateval.evaluation.evaluator import Evaluator
from chateval.runs.directory import RunDir
from chateval.runs.envelope import stamp
from chateval.util.errors import RunWriteError
from chateval.util.jsonl import dumps_line
from chateval.util.secrets import scrub_obj


def inline_append(self: RunDir, record: dict[str, Any]) -> None:
    """The append before the writer thread: write and fsync on the caller's (the loop's) thread."""
    record = stamp(scrub_obj(record), self.record_type)
    data = dumps_line(record).encode("ascii")
    fd = self._fh.fileno()
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as e:
        os.ftruncate(fd, start)
        raise RunWriteError(self.samples_path, e) from None


def one_run(data: Path, out: Path, append: Any) -> dict[str, float]:
    spent: list[float] = []

    def timed(self: RunDir, record: dict[str, Any]) -> None:
        t0 = time.perf_counter()
        append(self, record)
        spent.append(time.perf_counter() - t0)

    saved = RunDir.append
    RunDir.append = timed  # type: ignore[method-assign]
    try:
        ev = Evaluator(model="offline", cache=False)
        t0 = time.perf_counter()
        summary = ev.evaluate_file_sync(data, out)
        wall = time.perf_counter() - t0
    finally:
        RunDir.append = saved  # type: ignore[method-assign]
    assert summary["n_ok"] == len(spent), summary
    ms = sorted(s * 1000 for s in spent)
    return {
        "wall_s": wall,
        "in_append_s": sum(spent),
        "share_of_wall": sum(spent) / wall,
        "p90_ms": ms[int(0.9 * (len(ms) - 1))],
        "max_ms": ms[-1],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path.cwd())
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "append_blocking.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="append-blocking-") as tmp:
        data = Path(tmp) / "pairs.jsonl"
        with data.open("w") as f:
            for i in range(args.samples):
                q = f"Question {i}: which reply explains the idea better?"
                f.write(
                    json.dumps(
                        {
                            "id": f"s{i}",
                            "question": q,
                            "answer_1": f"A short answer {i}.",
                            "answer_2": f"A longer and more careful answer number {i}.",
                        }
                    )
                    + "\n"
                )
        runs: dict[str, list[dict[str, float]]] = {"inline_fsync": [], "writer_thread": []}
        for r in range(args.rounds):
            for name, append in (("inline_fsync", inline_append), ("writer_thread", RunDir.append)):
                runs[name].append(one_run(data, Path(tmp) / f"{name}-{r}", append))
    med = {n: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for n, rs in runs.items()}
    ratio = med["writer_thread"]["in_append_s"] / med["inline_fsync"]["in_append_s"]
    result = {
        "samples": args.samples,
        "rounds": args.rounds,
        "median": med,
        "runs": runs,
        "in_append_ratio_writer_over_inline": ratio,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    for n, m in med.items():
        print(
            f"{n:14s} wall {m['wall_s']:.2f} s  in append {m['in_append_s'] * 1000:.0f} ms "
            f"({m['share_of_wall']:.1%} of wall)  p90 {m['p90_ms']:.2f} ms  max {m['max_ms']:.2f} ms"
        )
    print(f"time the loop spends in append, writer thread / inline fsync: {ratio:.3f}")


if __name__ == "__main__":
    main()
