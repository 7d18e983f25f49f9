"""``chateval view RUN_DIR [RUN_DIR ...]``: one self-contained HTML page to read the runs' debates."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console


def add_parser(sub: Any) -> None:
    vp = sub.add_parser(
        "view", help="write one HTML page to read runs: config, numbers, plots, debates, memory context",
        description="Render one or more run directories (of `chateval evaluate` or any `chateval bench`) into one "
                    "self-contained HTML file (inline CSS and JS, nothing fetched): the config and headline "
                    "numbers, the plots, and per sample the inputs, the debate round by round, the verdicts and "
                    "the human label, with filters and search. Two or more run directories are shown side by side, "
                    "sample by sample. Only the run directories are read.",
        epilog="exit codes: 0 page written; 2 a path is not a run directory or a run file is not readable.")
    vp.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directory (as given to --out)")
    vp.add_argument("--out", type=Path, help="the HTML file to write (default: RUN_DIR/view.html of the first run)")
    vp.add_argument("--open", action="store_true", help="open the page in the default web browser")


def run(args: argparse.Namespace, console: Console) -> int:
    from ..view import build_view

    path = build_view([Path(p) for p in args.runs], out=args.out)
    print(path)
    if args.open:
        import webbrowser

        if not webbrowser.open(path.resolve().as_uri()):
            console.print("[yellow]no web browser found:[/yellow] open the file above yourself", highlight=False)
    return 0
