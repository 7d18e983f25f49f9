"""The ``chateval`` command: a thin layer over the Python API. All argparse lives in this
package (one module per command group); heavy modules are imported when a command runs."""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from ..util import interrupts, secrets, streams
from ..util.errors import ChatevalError
from . import audit, bench, calibrate, data, evaluate, listing, memory, rejudge, view
from .suggest import Parser

# What `chateval --help` shows a user (the module docstring above is for developers).
DESCRIPTION = """\
chateval judges chat agents' answers with a panel of persona-prompted LLM debaters (ChatEval),
and benchmarks memory-augmented agents (LongMemEval, LoCoMo, MSC, TeaFarm, your own agent).

start here (no API key needed: the offline model is a deterministic heuristic, not an LLM):
  chateval evaluate examples/faireval_pairwise.jsonl --model offline --out runs/demo
  chateval view runs/demo                 one HTML page: numbers, plots, every debate
  chateval bench --list                   the benchmarks; chateval bench NAME --help
  chateval data list                      the public data sets and how to get them

a real model: --model openai/gpt-4o-mini (OPENAI_API_KEY), or openai-compatible/NAME --base-url URL.
Each command's options: chateval COMMAND --help."""

EPILOG = textwrap.fill(
    "exit codes: 0 done; 1 some samples or units failed or have no result, or a run file could not "
    "be written; 2 bad input or settings, or the model endpoint refuses connections (finished work "
    "is kept, --resume continues); 3 stopped at the --max-cost cap; 4 a --fail-under gate was not met; "
    "130 interrupted (Ctrl-C); 143 stopped by SIGTERM, 129 by SIGHUP (each like Ctrl-C: summary written).",
    100,
)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. The benchmarks' subcommands are only built when ``argv`` asks for ``bench``
    (or argv is None), so ``chateval --help`` does not import every benchmark."""
    parser = Parser(
        prog="chateval", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.argv = list(argv or ())
    parser.add_argument("--version", action="version", version=f"chateval {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    evaluate.add_parser(sub)
    calibrate.add_parser(sub)
    audit.add_parser(sub)
    rejudge.add_parser(sub)
    listing.add_parsers(sub)
    memory.add_parser(sub)
    bench.add_parser(sub, with_benchmarks=argv is None or "bench" in argv)
    view.add_parser(sub)
    data.add_parser(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from .. import __version__

    try:
        return version("chateval")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return __version__


COMMANDS = {
    "evaluate": evaluate.run,
    "calibrate": calibrate.run,
    "personas": listing.personas,
    "strategies": listing.strategies,
    "memory": memory.run,
    "bench": bench.run,
    "view": view.run,
    "audit": audit.run,
    "rejudge": rejudge.run,
    "perturbations": listing.perturbations,
    "data": data.run,
}


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


def _stderr() -> Any:
    from rich.console import Console  # not needed for --help: imported when something is printed

    console = Console(stderr=True)
    # Piped (a CI log, `| tee`): rich would break every long line at 80 columns, mid-sentence and
    # between a flag and its value; a log keeps each message on one line (a terminal still wraps).
    console.soft_wrap = not console.is_terminal
    return console


def main(argv: Sequence[str] | None = None) -> int:
    # Every line the command prints (rich tables, progress, errors, warnings, logs) is scrubbed
    # of the configured secrets; the key variables count from the start (`view` builds no model).
    secrets.register_env()
    secrets.install_excepthook()
    # Outermost: a closed pipe is written past (the run goes on; its summary says so), then scrubbed.
    with streams.surviving_output(), secrets.scrubbed_output(), interrupts.stop_signals_like_ctrl_c():
        code = _main(argv)
    stopped = interrupts.stopped_by()
    # stopped by SIGTERM / SIGHUP and handled as a Ctrl-C: the shell's code for that signal
    return 128 + stopped if stopped and code == 130 else code


def _main(argv: Sequence[str] | None) -> int:
    _quiet_library_logs()
    argv = list(sys.argv[1:] if argv is None else argv)
    console = None
    try:
        if argv[:1] == ["bench"]:
            bench.preload_plugins(argv)  # plugins may register benchmarks: before the parser is built
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return 2
        console = _stderr()
        return COMMANDS[args.command](args, console)
    except ChatevalError as e:
        from rich.markup import escape  # a message may hold brackets: pip install 'chateval[local]'

        (console or _stderr()).print(
            f"[red]error:[/red] {escape(secrets.scrub(str(e)))}", highlight=False, soft_wrap=True
        )
        return e.exit_code
    except OSError as e:
        from ..runs.files import WRITE_ERRNOS

        if e.errno not in WRITE_ERRNOS:
            raise
        # A disk that cannot take a file the run writes outside a run directory's own guard
        # (a plot of a benchmark's top folder, say): one line too.
        (console or _stderr()).print(
            f"[red]error:[/red] cannot write {e.filename or 'a run file'}: "
            f"{e.strerror or e}; make room and rerun with --resume",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    except KeyboardInterrupt:
        (console or _stderr()).print(
            f"[yellow]{interrupts.stop_name()}:[/yellow] finished samples are saved; rerun with --resume to continue"
        )
        return 130


__all__ = ["build_parser", "main"]
