"""``chateval bench --list`` and ``chateval bench NAME ...``: one subcommand per registered
benchmark, its options generated from the benchmark's settings model; ``--config FILE`` loads
settings from YAML/JSON (flags override it). Runs through ``chateval.bench.arun``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..util.tables import print_table
from .cost import (
    EXIT_CODE_TEXT,
    EXIT_STOPPED,
    add_cost_options,
    cap_context,
    check_executor,
    print_estimate,
    report_cap,
)
from .options import UsageFormatter, add_model_options, given
from .outcome import add_gate_option, gate_exit, report_accounting

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console

EXIT_CODES = (
    "exit codes: 0 every unit done; 1 some units failed or have no result, or a run file could not be "
    "written; 2 bad input or settings, or a model endpoint refuses connections (the run stops; finished "
    "units are kept); "
    + EXIT_CODE_TEXT
    + "; 4 a --fail-under gate was not met; 130 interrupted (finished units are kept)."
)


# The benchmarks whose gates name the --systems themselves (a system's summary key is its name).
SYSTEM_GATES = ("longmemeval", "locomo")


def preload_plugins(argv: Sequence[str]) -> None:
    """Load --plugin files and CHATEVAL_PLUGINS before the benchmark parsers are built."""
    from ..util.plugins import load_plugins

    specs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--plugin"]
    specs += [a.split("=", 1)[1] for a in argv if a.startswith("--plugin=")]
    load_plugins(specs)


def add_parser(sub: Any, *, with_benchmarks: bool = True) -> None:
    bp = sub.add_parser(
        "bench",
        help="run a benchmark (see `chateval bench --list`)",
        description="Run a registered benchmark into a run directory (config.json, samples.jsonl, "
        "summary.json, report.md with plots). --resume continues a run; --config FILE "
        "loads settings (YAML or JSON, keys = option names) that flags override.",
        epilog=EXIT_CODES,
    )
    bp.add_argument("--list", action="store_true", help="list the registered benchmarks")
    bsub = bp.add_subparsers(dest="benchmark", metavar="NAME")
    if not with_benchmarks:
        return
    from ..bench.registry import BENCHMARKS, describe  # not the benchmarks themselves: see describe

    for name in BENCHMARKS.names():
        description, model, metrics = describe(name)
        p = bsub.add_parser(
            name,
            help=description,
            description=description,
            epilog=EXIT_CODES,
            allow_abbrev=False,
            formatter_class=UsageFormatter,
        )
        p.add_argument(
            "--config",
            dest="config_file",
            metavar="FILE",
            help="settings file (YAML or JSON); options given on the command line override it",
        )
        add_model_options(p, model)
        add_gate_option(p, metrics)
        add_cost_options(p, price="price" not in model.model_fields)


def run(args: argparse.Namespace, console: Console) -> int:
    from ..util.extras import require

    require("memory", "chateval bench")  # before anything is read or written
    from ..bench import BENCHMARKS, arun, config_model
    from ..bench.registry import describe
    from ..bench.summaries import gate_measures
    from ..models import UsageTotals
    from ..runs.gates import parse_gates
    from ..runs.progress import RunProgress
    from ..util.options import load_config_file

    if args.list or not args.benchmark:
        from rich.console import Console
        from rich.table import Table

        table = Table("benchmark", "what it measures")
        for name in BENCHMARKS.names():
            table.add_row(name, BENCHMARKS.get(name).description)
        print_table(Console(), table)
        return 0 if args.list else 2
    model = config_model(args.benchmark)
    from_file = load_config_file(model, args.config_file) if args.config_file else {}
    cfg = model.merged(from_file, given(args, model), source=None)
    gates = parse_gates(args.fail_under, describe(args.benchmark).gate_metrics)  # before the run: a typo costs nothing
    systems = getattr(cfg, "systems", None) or []
    if args.benchmark in SYSTEM_GATES and systems and all(isinstance(s, str) and ":" not in s for s in systems):
        # Registered names are the names the gates read (an import path's is its class's: known later).
        parse_gates(args.fail_under, describe(args.benchmark).gate_metrics, subjects=list(systems))
    from ..models.prices import apply_price_specs

    apply_price_specs(getattr(args, "price", None) or getattr(cfg, "price", None) or [])
    import asyncio

    check_executor(args, cfg.executor)
    if args.dry_run:
        from ..bench.api import estimate_bench

        est = asyncio.run(estimate_bench(args.benchmark, cfg))
        print_estimate(est, console, as_json=args.json, what=f"{args.benchmark} run")
        return 0
    # The benchmark points the progress bar at its model layer's totals once it has built it.
    progress = RunProgress(UsageTotals(), console, label="units")
    with cap_context(args) as cap:
        summary = asyncio.run(arun(args.benchmark, cfg, progress=progress))
    if summary.get("note"):
        console.print(f"[yellow]note:[/yellow] {summary['note']}")
    for warning in summary.get("warnings") or []:
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    rates = BENCHMARKS.get(args.benchmark).summary_type.headline_rates  # a correlation is not shown as %
    headline_table(summary.get("headline") or [], console, rate=rates)
    comparisons_table(summary, console)
    failed = summary.get("n_failed", 0)
    missing = summary.get("n_missing", 0)
    console.print(
        f"{args.benchmark}: {summary.get('n_units', '?')} units, {failed} failed"
        + (f", {missing} without a result" if missing else "")
        + f"; results in {cfg.out}/ (summary.json, report.md); samples and debates: chateval view {cfg.out}"
    )
    missing = report_accounting(summary, console, str(cfg.out))
    if report_cap(cap, console):
        return EXIT_STOPPED
    return gate_exit(1 if failed or missing else 0, gates, gate_measures(args.benchmark, summary), console)


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{100 * v:.1f}%" if pct else f"{v:.3f}"
    return str(v)


_ROW_KEYS = ("system", "n", "metric", "value", "recall_all@5", "failed", "cost_usd")


def headline_table(rows: list[dict[str, Any]], console: Console, *, rate: bool = True) -> None:
    """``rate``: the values are rates, shown as percentages (the benchmark's summary type says)."""
    if not rows:
        return
    from rich.table import Table

    metric = next((r["metric"] for r in rows if r.get("metric")), "score")
    pct = rate
    # Further labelled numbers of a row (the other judge's accuracy, ties and losses): after the metric.
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in _ROW_KEYS))
    # recall_all@5 only where retrieval is scored that way (LongMemEval); elsewhere it would be
    # a column of dashes next to a benchmark's own retrieval number.
    recall = ["recall_all@5"] if any(r.get("recall_all@5") is not None for r in rows) else []
    table = Table("system", "n", metric, *extra, *recall, "failed", "cost")
    for r in rows:
        cost = r.get("cost_usd")
        table.add_row(
            str(r["system"]),
            _fmt(r.get("n")),
            _fmt(r.get("value"), pct=pct),
            *(_fmt(r.get(k), pct=pct) for k in extra),
            *(_fmt(r.get(k)) for k in recall),
            _fmt(r.get("failed")),
            "unknown" if cost is None else f"${cost:.4f}",
        )
    print_table(console, table)


def comparisons_table(summary: dict[str, Any], console: Console) -> None:
    """The summary's paired comparisons, one row each (report.md has the same table)."""
    from rich.table import Table

    from ..paired import read_comparisons

    rows = read_comparisons(summary)
    if not rows:
        return
    table = Table("A vs B", "metric", "A − B", "95% CI", "p", "n", title="paired differences (same items)")
    for c in rows:
        ci = "–" if c.ci95 is None else f"[{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]"
        p = "–" if c.p_value is None else ("<0.001" if c.p_value < 0.001 else f"{c.p_value:.3f}")
        n = f"{c.n}" + (f" ({c.n_clusters} clusters)" if c.n_clusters is not None else "")
        table.add_row(f"{c.a} vs {c.b}", c.metric, "–" if c.diff is None else f"{c.diff:+.3f}", ci, p, n)
    print_table(console, table)
    few = sorted({c.n_clusters for c in rows if c.few_clusters and c.n_clusters is not None})
    if few:
        console.print(
            f"[yellow]few clusters ({', '.join(map(str, few))}):[/yellow] intervals from the exact permutation test "
            "(a jackknife t for kappa/correlations); nothing counts as significant unless the exact p <= 0.05.",
            highlight=False,
        )
