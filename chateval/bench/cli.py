"""`chateval bench --list` and `chateval bench NAME ...`: one subcommand per registered benchmark."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.console import Console
from rich.table import Table

from ..models import UsageTotals
from ..progress import RunProgress
from .base import BENCHMARKS


def add_bench_parser(sub: Any) -> None:
    bp = sub.add_parser("bench", help="run a benchmark (see `chateval bench --list`)",
                        description="Run a registered benchmark into a run directory (config.json, samples.jsonl, "
                                    "summary.json, report.md with plots). --resume continues a run.",
                        epilog="exit codes: 0 every unit done; 1 some units failed; 2 bad input or settings; "
                               "130 interrupted (finished units are kept).")
    bp.add_argument("--list", action="store_true", help="list the registered benchmarks")
    bsub = bp.add_subparsers(dest="benchmark", metavar="NAME")
    for name in BENCHMARKS.names():
        cls = BENCHMARKS.get(name)
        p = bsub.add_parser(name, help=cls.description, description=cls.description,
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        cls.add_arguments(p)


def run(args: argparse.Namespace, console: Console) -> int:
    if args.list or not args.benchmark:
        table = Table("benchmark", "what it measures")
        for name in BENCHMARKS.names():
            table.add_row(name, BENCHMARKS.get(name).description)
        Console().print(table)
        return 0 if args.list else 2
    bench = BENCHMARKS.get(args.benchmark)()
    # The benchmark points the progress bar at its model layer's totals once it has built it.
    progress = RunProgress(UsageTotals(), console, label="units")
    summary = asyncio.run(bench.run(args, progress))
    if summary.get("note"):
        console.print(f"[yellow]note:[/yellow] {summary['note']}")
    failed = summary.get("n_failed", 0)
    console.print(f"{args.benchmark}: {summary.get('n_units', '?')} units, {failed} failed; "
                  f"results in {args.out}/ (summary.json, report.md)")
    return 1 if failed else 0

