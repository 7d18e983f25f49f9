"""``chateval evaluate``: judge a JSONL file with a debate panel."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..evaluation.config import EvalConfig
from .cost import EXIT_CODE_TEXT, EXIT_STOPPED, add_cost_options, cap_context, print_estimate, report_cap
from .options import add_model_options, given
from .outcome import add_gate_option, gate_exit, report_accounting

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console

EXIT_CODES = (
    """exit codes: 0 all samples judged; 1 some samples failed or have no result (see summary.json),
or a run file could not be written;
2 bad input or settings (nothing was sent to a model), or the model endpoint refuses connections (the run
stops at the first refusal its retries cannot fix; finished samples are kept, --resume continues);
"""
    + EXIT_CODE_TEXT
    + """;
4 a --fail-under gate was not met (accuracy, kappa: agreement with the input's labels);
130 interrupted (finished samples are kept)."""
)

PANEL = (
    "task",
    "strategy",
    "agents",
    "turns",
    "personas",
    "framing",
    "aggregate",
    "swap",
    "keep_raw_history",
    "structured",
    "aspects",
    "escalate",
    "stop_early",
    "persona_dirs",
    "prompt_dirs",
    "plugins",
)


def add_parser(sub: Any) -> None:
    ev = sub.add_parser(
        "evaluate",
        help="judge a JSONL file with a debate panel",
        description="Judge every record of INPUT with a panel of persona debaters and write "
        "config.json, samples.jsonl and summary.json to --out.",
        epilog=EXIT_CODES + "\n\ninput records: pairwise {id, question, answer_1, answer_2}; score "
        "and correctness {id, question, answer}; optional reference, context, label, aspects.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument("input", help="JSONL file, one record per line")
    ev.add_argument("--out", required=True, help="run directory")
    ev.add_argument("--resume", action="store_true", help="continue a run: skip finished samples, redo failed ones")
    ev.add_argument("--overwrite", action="store_true", help="replace an earlier run in --out instead of refusing")
    ev.add_argument("--limit", type=int, help="judge only the first N records")
    ev.add_argument("--skip-invalid", action="store_true", help="skip and report bad input lines instead of stopping")
    add_judge_options(ev)
    from ..runs.gates import AGREEMENT_METRICS

    add_gate_option(ev, AGREEMENT_METRICS)  # agreement of the verdicts with the input's labels
    add_cost_options(ev)


def add_judge_options(p: argparse.ArgumentParser) -> None:
    """The judge's options (--preset, the panel, the model, --price): `evaluate`'s, shared by every
    command that judges with one setting (`audit`); ``config_from_args`` reads them back."""
    p.add_argument("--preset", help="a strategies/ preset name or a YAML file; options given here override it")
    add_model_options(p, EvalConfig, exclude=[f for f in EvalConfig.model_fields if f not in PANEL], title="panel")
    add_model_options(p, EvalConfig, exclude=PANEL, title="model")
    add_price_option(p)


def add_price_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT[,CACHED_IN[,CACHE_WRITE]]",
        help="USD per million input/output tokens for a model missing from the price table; "
        "optionally the price of input tokens read from (and written to) the provider's "
        "prompt cache (else charged as input)",
    )


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    from ..evaluation.config import find_preset, load_preset
    from ..models.prices import apply_price_specs
    from ..util.plugins import load_plugins

    apply_price_specs(args.price)
    load_plugins(getattr(args, "plugins", None) or [])  # first: a preset may name a task a plugin registers
    preset = load_preset(find_preset(args.preset)) if getattr(args, "preset", None) else {}
    return EvalConfig.merged(preset, given(args, EvalConfig))


def run(args: argparse.Namespace, console: Console) -> int:
    from ..evaluation.evaluator import Evaluator
    from ..util.errors import ConfigError

    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit {args.limit}: must be at least 1")
    from ..runs.gates import AGREEMENT_METRICS, parse_gates

    gates = parse_gates(args.fail_under, AGREEMENT_METRICS, single=True)
    cfg = config_from_args(args)
    if cfg.swap and cfg.task != "pairwise":  # the API ignores it for other tasks; a user asked for it
        raise ConfigError(f"--swap applies only to the pairwise task (not {cfg.task})")
    if args.dry_run:
        return dry_run(args, cfg, console)
    with cap_context(args) as cap:
        ev = Evaluator(cfg)
        return _run(args, ev, console, cap, gates)


def dry_run(args: argparse.Namespace, cfg: EvalConfig, console: Console) -> int:
    from ..evaluation.evaluator import Evaluator
    from ..models.dryrun import dry_run as dry

    async def go() -> Any:
        try:
            return await ev.dry_run_file(
                args.input,
                limit=args.limit,
                skip_invalid=args.skip_invalid,
                resume_from=args.out if args.resume else None,
            )
        finally:
            await ev.aclose()

    import asyncio

    with dry():  # the layer is built as in a dry run: no API key needed, nothing sent
        ev = Evaluator(cfg.model_copy(update={"cache": False}))
    est = asyncio.run(go())
    print_estimate(est, console, as_json=args.json, what="evaluation")
    return 0


def _run(args: argparse.Namespace, ev: Any, console: Console, cap: Any, gates: list[Any]) -> int:
    from ..runs.gates import evaluate_measures
    from ..runs.progress import RunProgress, summary_table

    progress = RunProgress(ev.layer.totals, console)

    def start(total: int, already: int) -> None:
        # Only once the input is valid: a bad input must stay a one-line error.
        if ev.is_offline:
            console.print("[yellow]offline model:[/yellow] verdicts are deterministic heuristics, not LLM judgements.")
        progress.start(total, already)

    async def go() -> dict[str, Any]:
        try:
            return await ev.evaluate_file(
                args.input,
                args.out,
                resume=args.resume,
                overwrite=args.overwrite,
                limit=args.limit,
                skip_invalid=args.skip_invalid,
                on_start=start,
                on_result=lambda r: progress.advance(r.status == "ok", r.id, r.error or _verdict_word(r)),
            )
        finally:
            progress.stop()
            await ev.aclose()

    import asyncio

    summary = asyncio.run(go())
    for bad in summary.get("invalid_lines", []):
        console.print(f"[red]skipped[/red] {bad['error']}")
    summary_table(summary, console)
    console.print(
        f"results in {args.out}/ (config.json, samples.jsonl, summary.json, report.md); "
        f"read the debates: chateval view {args.out}"
    )
    missing = report_accounting(summary, console, args.out)
    if report_cap(cap, console, "samples"):
        return EXIT_STOPPED
    return gate_exit(1 if summary["n_failed"] or missing else 0, gates, evaluate_measures(summary), console)


def _verdict_word(r: Any) -> str:
    v = r.verdict
    if v is None:
        return ""
    if v.winner is not None:
        return f"winner={v.winner}"
    if v.correct is not None or v.tie:
        return "correct" if v.correct else ("tie" if v.tie else "incorrect")
    return f"score={v.score:.2f}" if v.score is not None else ""
