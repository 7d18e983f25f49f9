"""The ``chateval`` command: a thin layer over the Python API."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any, Sequence

from rich.console import Console

from .config import EvalConfig, find_preset, load_preset
from .runs import clear_run
from .errors import ChatevalError
from .models import register_price

EPILOG = """exit codes: 0 all samples judged; 1 some samples failed (see summary.json);
2 bad input or settings (nothing was sent to a model); 130 interrupted (finished samples are kept)."""


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _add_model_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", help="offline (default), openai/<model>, or openai-compatible/<model>")
    g.add_argument("--base-url", help="endpoint for openai-compatible models (or CHATEVAL_BASE_URL)")
    g.add_argument("--temperature", type=float)
    g.add_argument("--max-tokens", type=int)
    g.add_argument("--seed", type=int)
    g.add_argument("--max-connections", type=int, help="model calls in flight at once, shared by all calls (default 8)")
    g.add_argument("--max-retries", type=int, help="retries on 429/5xx/timeouts/connection errors (default 4)")
    g.add_argument("--timeout", type=float, dest="timeout_s", help="seconds per model call attempt (default 120)")
    g.add_argument("--retry-base-delay", type=float, dest="retry_base_delay_s",
                   help="seconds before the first retry, doubled each retry, with jitter (default 1)")
    g.add_argument("--no-cache", action="store_true", help="bypass the on-disk completion cache")
    g.add_argument("--cache-dir", help="completion cache folder (default ~/.cache/chateval/completions or CHATEVAL_CACHE_DIR)")
    g.add_argument("--price", action="append", default=[], metavar="MODEL=IN,OUT",
                   help="USD per million input/output tokens for a model missing from the price table")


def _add_panel_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("panel")
    g.add_argument("--preset", help="a strategies/ preset name or a YAML file; options given here override it")
    g.add_argument("--strategy", help="communication strategy (see `chateval strategies`)")
    g.add_argument("--agents", type=int, help="number of debaters")
    g.add_argument("--turns", type=int, help="debate rounds")
    g.add_argument("--personas", type=_csv, help="comma-separated persona names (see `chateval personas`)")
    g.add_argument("--aggregate", choices=["vote", "mean"], help="vote (default for pairwise/correctness) or mean")
    g.add_argument("--swap", action="store_true", default=None,
                   help="pairwise: judge both answer orders and combine per agent (position calibration)")
    g.add_argument("--keep-raw-history", action="store_true", default=None,
                   help="simultaneous_summarizer: keep raw messages besides the summary (the original code's behaviour)")
    g.add_argument("--structured", choices=["auto", "on", "off"],
                   help="ask for JSON verdicts via the API's response format (auto: when the model supports it)")
    g.add_argument("--aspects", type=_csv, help="score task: aspects to rate (e.g. naturalness,coherence)")
    g.add_argument("--persona-dir", action="append", dest="persona_dirs", help="extra folder of persona YAML files")
    g.add_argument("--prompt-dir", action="append", dest="prompt_dirs", help="extra folder of prompt templates (overrides by name)")
    g.add_argument("--plugin", action="append", dest="plugins",
                   help="a .py file or module to import first (e.g. one registering a custom strategy)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chateval", description=__doc__ or "", epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    ev = sub.add_parser("evaluate", help="judge a JSONL file with a debate panel",
                        description="Judge every record of INPUT with a panel of persona debaters and write "
                                    "config.json, samples.jsonl and summary.json to --out.",
                        epilog=EPILOG + "\n\ninput records: pairwise {id, question, answer_1, answer_2}; score and "
                               "correctness {id, question, answer}; optional reference, context, label, aspects.",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ev.add_argument("input", help="JSONL file, one record per line")
    ev.add_argument("--task", choices=["pairwise", "score", "correctness"])
    ev.add_argument("--out", required=True, help="run directory")
    ev.add_argument("--resume", action="store_true", help="continue a run: skip finished samples, redo failed ones")
    ev.add_argument("--overwrite", action="store_true", help="replace an earlier run in --out instead of refusing")
    ev.add_argument("--limit", type=int, help="judge only the first N records")
    ev.add_argument("--skip-invalid", action="store_true", help="skip and report bad input lines instead of stopping")
    _add_panel_options(ev)
    _add_model_options(ev)

    pp = sub.add_parser("personas", help="list the available personas")
    pp.add_argument("--persona-dir", action="append", dest="persona_dirs")
    sp = sub.add_parser("strategies", help="list communication strategies and presets")
    sp.add_argument("--plugin", action="append", dest="plugins")

    from .memory.cli import add_memory_parser

    add_memory_parser(sub, _add_model_options)

    from .bench.cli import add_bench_parser

    add_bench_parser(sub)
    return parser


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    keys = set(EvalConfig.model_fields)
    out = {k: v for k, v in vars(args).items() if k in keys and v is not None}
    if getattr(args, "no_cache", False):
        out["cache"] = False
    return out


def _apply_prices(specs: list[str]) -> None:
    from .errors import ConfigError

    for spec in specs:
        try:
            model, _, nums = spec.partition("=")
            inp, out = (float(x) for x in nums.split(","))
        except ValueError:
            raise ConfigError(f"--price '{spec}': expected MODEL=IN,OUT (USD per million tokens)") from None
        register_price(model.strip(), inp, out)


def cmd_evaluate(args: argparse.Namespace, console: Console) -> int:
    from .errors import ConfigError
    from .evaluator import Evaluator
    from .progress import RunProgress, summary_table

    _apply_prices(args.price)
    preset = load_preset(find_preset(args.preset)) if args.preset else {}
    cfg = EvalConfig.merged(preset, settings_from_args(args))
    if cfg.swap and cfg.task != "pairwise":  # the API ignores it for other tasks; a user asked for it
        raise ConfigError(f"--swap applies only to the pairwise task (not {cfg.task})")
    ev = Evaluator(cfg)
    progress = RunProgress(ev.layer.totals, console)

    def start(total: int, already: int) -> None:
        # Only once the input is valid: a bad input must stay a one-line error.
        if ev.is_offline:
            console.print("[yellow]offline model:[/yellow] verdicts are deterministic heuristics, not LLM judgements.")
        progress.start(total, already)

    async def run() -> dict[str, Any]:
        try:
            return await ev.evaluate_file(
                args.input, args.out, resume=args.resume, limit=args.limit, skip_invalid=args.skip_invalid,
                on_start=start,
                on_result=lambda r: progress.advance(r.status == "ok", r.id, r.error or _verdict_word(r)),
            )
        finally:
            progress.stop()
            await ev.aclose()

    if args.overwrite and not args.resume:
        clear_run(args.out)
    summary = asyncio.run(run())
    for bad in summary.get("invalid_lines", []):
        console.print(f"[red]skipped[/red] {bad['error']}")
    summary_table(summary, console)
    console.print(f"results in {args.out}/ (config.json, samples.jsonl, summary.json)")
    return 1 if summary["n_failed"] else 0


def _verdict_word(r: Any) -> str:
    v = r.verdict
    if v is None:
        return ""
    if v.winner is not None:
        return f"winner={v.winner}"
    if v.correct is not None or v.tie:
        return "correct" if v.correct else ("tie" if v.tie else "incorrect")
    return f"score={v.score:.2f}" if v.score is not None else ""


def cmd_personas(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    from .debate import PersonaLibrary

    lib = PersonaLibrary(args.persona_dirs)
    table = Table("name", "persona", "description", "model")
    for key in lib.names():
        p = lib.get(key)
        table.add_row(key, p.name, p.description or p.role[:80], p.model or "-")
    Console().print(table)
    return 0


def cmd_strategies(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    from .debate import STRATEGIES
    from .evaluator import load_plugins
    from .paths import search_path

    load_plugins(args.plugins or [])
    out = Console()
    table = Table("strategy", "description")
    for name in STRATEGIES.names():
        table.add_row(name, STRATEGIES.get(name).description)
    out.print(table)
    presets = Table("preset", "settings")
    for d in search_path("strategies"):
        for f in sorted(d.glob("*.y*ml")) if d.is_dir() else []:
            data = load_preset(f)
            presets.add_row(f.stem, ", ".join(f"{k}={v}" for k, v in data.items()))
    out.print(presets)
    return 0


def cmd_memory(args: argparse.Namespace, console: Console) -> int:
    from .memory.cli import run

    return run(args, console)


def cmd_bench(args: argparse.Namespace, console: Console) -> int:
    from .bench.cli import run

    return run(args, console)


COMMANDS = {"evaluate": cmd_evaluate, "personas": cmd_personas, "strategies": cmd_strategies, "memory": cmd_memory,
            "bench": cmd_bench}


def _quiet_library_logs() -> None:
    # autogen's runtime logs every error raised inside an agent with a full traceback (Python's
    # last-resort handler prints it to stderr). The failure is already recorded on its sample as
    # a one-line error, so on the command line those logs are noise: keep only critical ones.
    logging.getLogger("autogen_core").setLevel(logging.CRITICAL)
    # After Ctrl-C, asyncio.run() cancels the agents' runtime tasks and logs each one's error
    # with a traceback; the interruption itself is reported in one line by main().
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, _ShutdownNoise) for f in asyncio_log.filters):
        asyncio_log.addFilter(_ShutdownNoise())


class _ShutdownNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("unhandled exception during asyncio.run() shutdown")


def main(argv: Sequence[str] | None = None) -> int:
    _quiet_library_logs()
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return COMMANDS[args.command](args, console)
    except ChatevalError as e:
        console.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        return e.exit_code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted:[/yellow] finished samples are saved; rerun with --resume to continue")
        return 130


if __name__ == "__main__":
    sys.exit(main())
