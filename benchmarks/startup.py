"""Start-up time of every ``chateval ... --help``, against ``python -c "import openai"`` (what any
OpenAI client pays) and ``python -c pass`` (the interpreter alone).

Each command is a fresh ``python -m chateval.cli ... --help`` process, timed ``--repeats`` times
in round-robin order (so a burst of load on a shared machine hits every command alike); the
table shows each command's median wall time and its ratio to ``import openai``'s median, and the
same for CPU time (user + system), which a loaded machine inflates far less than wall time. Exits
1 when a help's median wall time is over ``--max-seconds`` (0.5) or over ``--max-ratio`` (1.5)
times ``import openai``'s, so it can gate a CI job; speed is measured here, never asserted in the
test suite. Run:

    python benchmarks/startup.py [--repeats 7] [--out benchmarks/results/startup.json]

``--workloads`` times the commands a user waits for instead of the helps (issue 39): the offline
demo (README's first command), ``evaluate --resume`` and ``bench longmemeval|locomo --resume`` on
runs that are already finished (nothing left to do: what is left is start-up, imports and the
summary). Each finished run is made once, untimed, before the timed runs. ``--tree NAME=PATH``
(repeatable) measures the source trees given, round-robin in one session (each process runs
with PYTHONPATH=PATH from a neutral working directory), so a before/after comparison meets the
same load:

    python benchmarks/startup.py --workloads --repeats 5 --tree before=../main --tree after=. \
        [--out benchmarks/results/workloads.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commands() -> list[list[str]]:
    """Every command and subcommand the parser has (``bench NAME`` for each registered benchmark)."""
    from chateval.cli import build_parser

    out: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        out.append(prefix)
        for action in parser._actions:  # argparse keeps subcommands here only
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, prefix + [name])

    walk(build_parser(None), [])
    return out


def workloads(tmp: Path) -> dict[str, tuple[list[str], list[str] | None]]:
    """name -> (the timed command's arguments, the untimed command that prepares its run or None)."""
    demo = ["evaluate", str(ROOT / "examples/faireval_pairwise.jsonl"), "--model", "offline", "--no-cache"]
    lme = ["bench", "longmemeval", "--data", str(ROOT / "tests/fixtures/lme_tiny.json"), "--systems",
           "full_context,retrieval", "--embedder", "hash", "--answer-model", "offline", "--out", str(tmp / "lme")]
    loco = ["bench", "locomo", "--data", str(ROOT / "tests/fixtures/locomo_tiny.json"), "--systems", "full_context",
            "--answer-model", "offline", "--out", str(tmp / "locomo")]
    finished = [*demo, "--out", str(tmp / "done")]
    return {
        "evaluate demo (offline, 10 items)": ([*demo, "--out", str(tmp / "demo"), "--overwrite"], None),
        "evaluate --resume (finished demo)": ([*finished, "--resume"], finished),
        "bench longmemeval --resume (finished, 2 systems)": ([*lme, "--resume"], lme),
        "bench locomo --resume (finished)": ([*loco, "--resume"], loco),
    }


def timed(argv: list[str], tree: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run. On a loaded machine the CPU time
    stays close to what the wall time is on an idle one."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # A tree: its code first on the path, from a directory without a chateval package (``python -m``
    # puts the working directory ahead of PYTHONPATH).
    env = None if tree is None else {**os.environ, "PYTHONPATH": tree}
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          env=env, cwd=None if tree is None else tempfile.gettempdir(), text=True)
    if proc.returncode:  # a failed run is not a start-up time: say so rather than report it
        sys.exit(f"{' '.join(argv[1:])} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def machine() -> dict[str, object]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(), "load_average": load}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="runs of each command; the median is reported")
    ap.add_argument("--max-seconds", type=float, default=0.5, help="fail when a help takes longer than this")
    ap.add_argument("--max-ratio", type=float, default=1.5, help="fail when a help takes longer than this × import openai")
    ap.add_argument("--only", help="time only the commands starting with these words, e.g. 'bench'")
    ap.add_argument("--out", help="also write the numbers as JSON here")
    ap.add_argument("--workloads", action="store_true", help="time the demo and --resume of finished runs instead")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                    help="with --workloads: measure these source trees, round-robin (default: what python imports)")
    args = ap.parse_args()
    trees = {n: str(Path(p).resolve()) for n, _, p in (t.partition("=") for t in args.tree)} or {"": None}

    py = [sys.executable]
    runs: dict[str, list[str]] = {'python -c "pass"': py + ["-c", "pass"],
                                  'python -c "import openai"': py + ["-c", "import openai"]}
    tmp = Path(tempfile.mkdtemp(prefix="chateval-startup-"))
    os.environ.setdefault("CHATEVAL_CACHE_DIR", str(tmp / "cache"))  # the runs' children inherit it
    where: dict[str, str | None] = {}  # run name -> its tree
    for tree_name, tree in trees.items() if args.workloads else ():
        (tmp / tree_name).mkdir(exist_ok=True)
        for name, (argv, setup) in workloads(tmp / tree_name if tree_name else tmp).items():
            if setup:
                timed(py + ["-m", "chateval.cli", *setup], tree)
            key = f"{tree_name}: {name}" if tree_name else name
            runs[key], where[key] = py + ["-m", "chateval.cli", *argv], tree
    for c in [] if args.workloads else commands():
        if args.only and c[:len(args.only.split())] != args.only.split():
            continue
        runs[" ".join(["chateval", *c, "--help"])] = py + ["-m", "chateval.cli", *c, "--help"]
    for name, argv in runs.items():  # warm the file cache and the bytecode: not part of what is measured
        timed(argv, where.get(name))
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, argv in runs.items():
            w, c = timed(argv, where.get(name))
            times[name].append(w)
            cpu[name].append(c)
    median = {name: statistics.median(ts) for name, ts in times.items()}
    median_cpu = {name: statistics.median(cs) for name, cs in cpu.items()}
    openai_s = median['python -c "import openai"']

    info = machine()
    print(f"python {info['python']} on {info['platform']}, {info['cpus']} CPUs ({info['processor']}), "
          f"load average {info['load_average']}; median of {args.repeats} runs each")
    width = max(map(len, runs))
    print(f"{'command':<{width}}  {'median s':>8}  {'min s':>6}  {'× openai':>8}  {'CPU s':>6}  {'CPU × openai':>12}")
    failed = []
    for name in runs:
        ratio = median[name] / openai_s
        slow = name.startswith("chateval") and (median[name] > args.max_seconds or ratio > args.max_ratio)
        slow = slow and not args.workloads  # the limits are the helps'; a workload is reported, not gated
        if slow:
            failed.append(name)
        cpu_ratio = median_cpu[name] / median_cpu['python -c "import openai"']
        print(f"{name:<{width}}  {median[name]:8.3f}  {min(times[name]):6.3f}  {ratio:8.2f}  {median_cpu[name]:6.3f}  "
              f"{cpu_ratio:12.2f}" + ("  SLOW" if slow else ""))
    if args.out:
        Path(args.out).write_text(json.dumps({"machine": info, "repeats": args.repeats, "median_s": median,
                                              "min_s": {n: min(t) for n, t in times.items()},
                                              "median_cpu_s": median_cpu}, indent=2) + "\n")
    if failed:
        print(f"{len(failed)} over {args.max_seconds} s or {args.max_ratio}× import openai: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
