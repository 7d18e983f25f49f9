"""``chateval.read_run`` on a 10,000-record evaluate run against ``json.loads`` of the same lines.

One offline ``chateval evaluate`` record (a real run's, with its debate transcript) is copied
``--records`` times with new ids into a run directory beside the real config and summary. Then,
in this one process and alternating ``--repeats`` times: ``read_run(run)`` (the typed run, as a
notebook or the viewer reads it) and ``json.loads`` of each samples.jsonl line (the file read and
split at ``\\n`` as read_run does). Also timed: read_run and then reading every record (each
record is validated when first read). Medians and their ratios:

    python benchmarks/read_run.py [--records 10000] [--repeats 7] [--out benchmarks/results/read_run.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from chateval.records.run import read_run  # noqa: E402


def make_run(root: Path, n: int, seed_run: str | None) -> Path:
    """An offline evaluate run of one sample (or ``seed_run``), its first record copied ``n``
    times with new ids (``id``, and ``key`` where it has one)."""
    seed = Path(seed_run) if seed_run else root / "seed"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "chateval.cli",
            "evaluate",
            str(REPO / "examples/faireval_pairwise.jsonl"),
            "--model",
            "offline",
            "--limit",
            "1",
            "--out",
            str(seed),
            "--no-cache",
        ],
        stdout=subprocess.DEVNULL,
        check=True,
        cwd=REPO,
    ) if not seed_run else None
    record = json.loads((seed / "samples.jsonl").read_text().splitlines()[0])
    run = root / "run"
    run.mkdir()
    for name in ("config.json", "summary.json"):
        (run / name).write_bytes((seed / name).read_bytes())
    with open(run / "samples.jsonl", "w") as f:
        for i in range(n):
            new = {"id": f"copy-{i}"} | ({"key": f"copy-{i}"} if "key" in record else {})
            f.write(json.dumps(record | new) + "\n")
    return run


def loads(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def walk(path: Path) -> int:
    run = read_run(path)
    return sum(r.status == "ok" for r in run.records)  # each record validated as its kind's type


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/read_run.json"))
    ap.add_argument("--seed-run", help="copy this run's first record (default: a fresh offline evaluate run's)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="chateval-read-run-") as tmp:
        run = make_run(Path(tmp), args.records, args.seed_run)
        samples = run / "samples.jsonl"
        size = samples.stat().st_size
        assert len(read_run(run).records) == args.records == len(loads(samples))
        times: dict[str, list[float]] = {"json.loads": [], "read_run": [], "read_run + touch every record": []}
        for _ in range(args.repeats):
            for name, fn in (
                ("json.loads", lambda: loads(samples)),
                ("read_run", lambda: read_run(run)),
                ("read_run + touch every record", lambda: walk(run)),
            ):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["json.loads"]
    result = {
        "seed_run": args.seed_run or "offline evaluate of examples/faireval_pairwise.jsonl --limit 1",
        "records": args.records,
        "samples_bytes": size,
        "repeats": args.repeats,
        "median_s": med,
        "ratio_to_json_loads": {k: v / base for k, v in med.items()},
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "command": "python benchmarks/read_run.py " + " ".join(sys.argv[1:]),
    }
    print(f"{args.records} records, {size / 1e6:.1f} MB samples.jsonl, median of {args.repeats}:")
    for k, v in med.items():
        print(f"  {k:32s} {v:7.3f} s  {v / base:5.2f}x json.loads")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
