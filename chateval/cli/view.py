"""``chateval view RUN_DIR [RUN_DIR ...]``: one self-contained HTML page to read the runs' debates;
``chateval view DIR`` over a folder of runs: the run list; ``--serve``: a local server over it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..util.errors import ConfigError

LARGE_PAGE = 50_000_000  # bytes

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console


def add_parser(sub: Any) -> None:
    vp = sub.add_parser(
        "view",
        help="write one HTML page to read runs: config, numbers, plots, debates, memory context",
        description="Render one or more run directories (of `chateval evaluate` or any `chateval bench`) into one "
        "HTML file (inline CSS and JS, nothing fetched from the network; a large run's rows in chunks "
        "beside it, view_data/, loaded as they are opened): the config and headline "
        "numbers, the plots, and per sample the inputs, the debate round by round, the verdicts and "
        "the human label, with filters and search. Two or more run directories are shown side by side, "
        "sample by sample, with the settings that differ as a table, in compare.html (never over a "
        "run's own view.html). A folder that holds runs (at any depth: evaluate, bench, calibrate, "
        "audit) gets a run list, DIR/index.html (kind, data, systems or panel, headline, cost, status, "
        "date; each run's page linked), and each run's view.html where it is missing or out of date. "
        "--serve serves that list and the pages from 127.0.0.1 instead, rendered on request, so runs "
        "still writing refresh as they go, and runs ticked in the list open side by side. Only the "
        "run directories are read.",
        epilog="exit codes: 0 page written (or the server stopped with Ctrl-C); 2 a path is not a run directory "
        "or a folder of runs, a run file is not readable, or the port is taken.",
    )
    vp.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directory (as given to --out), or a folder of runs")
    vp.add_argument(
        "--out",
        help="the HTML file to write (default: RUN_DIR/view.html for one run; compare.html in "
        "the current directory for two or more; DIR/index.html for a folder of runs)",
    )
    vp.add_argument(
        "--serve",
        action="store_true",
        help="serve the run list and the runs' pages on http://127.0.0.1:PORT/ (this machine only) "
        "until Ctrl-C; pages refresh while a run is writing",
    )
    vp.add_argument(
        "--port",
        type=int,
        default=None,
        metavar="PORT",
        help="the port --serve listens on (default: 8765; 0 picks a free one)",
    )
    vp.add_argument("--open", action="store_true", help="open the page in the default web browser")
    vp.add_argument(
        "--context-chars",
        type=int,
        metavar="N",
        help="show at most N characters of each memory context (default: all of it; full-context "
        "systems give the model whole haystacks, so large runs make large pages); the rest is "
        "counted on the page",
    )
    vp.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="questions per chunk of a page (default: 100): the page holds the list of every question "
        "and the first chunk; the others are written beside it (view.html -> view_data/) or, with "
        "--serve, sent as they are opened. A run of N questions or fewer makes one whole page",
    )
    vp.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        default=[],
        metavar="PLUGIN",
        help="a .py file or module to import first: a plugin task's own verdict text (without it, "
        "a task the plugin registered is shown by its verdict's fields)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    from ..util.plugins import load_plugins
    from ..view import build_view
    from ..view.paging import CHUNK_ROWS, MAX_CHUNK_ROWS

    load_plugins(args.plugins)
    if args.context_chars is not None and args.context_chars < 0:
        raise ConfigError(f"--context-chars must be 0 or more, not {args.context_chars}")
    if args.out is not None and not args.out.strip():
        raise ConfigError(
            "--out is empty: give the HTML file to write (default: RUN_DIR/view.html; "
            "compare.html for two or more runs)"
        )
    out = Path(args.out) if args.out is not None else None
    chunk_rows = CHUNK_ROWS if args.chunk_size is None else args.chunk_size
    if not 1 <= chunk_rows <= MAX_CHUNK_ROWS:
        raise ConfigError(f"--chunk-size must be 1 to {MAX_CHUNK_ROWS:,} questions, not {chunk_rows}")
    if args.port is not None and not args.serve:
        raise ConfigError("--port is for --serve: add --serve, or leave --port out")
    if args.serve:
        return _serve(args, console, chunk_rows)
    if len(args.runs) == 1 and _is_folder_of_runs(Path(args.runs[0])):
        from ..view import build_index

        path = build_index(Path(args.runs[0]), out=out, context_chars=args.context_chars, chunk_rows=chunk_rows)
    else:
        path = build_view(
            [Path(p) for p in args.runs], out=out, context_chars=args.context_chars, chunk_rows=chunk_rows
        )
    print(path)
    if len(args.runs) > 1:
        from ..view.protocol import differing_card_rows

        if rows := differing_card_rows([Path(p) for p in args.runs]):
            console.print(
                f"[yellow]warning:[/yellow] the runs' protocol cards differ ({', '.join(rows)}): their numbers "
                "are not comparable as they stand; the page tables the differences",
                highlight=False,
            )
    size, what = _largest(path)
    if size > LARGE_PAGE:
        console.print(
            f"[yellow]warning:[/yellow] {what} is {size / 1e6:.0f} MB; browsers get slow on files this "
            "large: --context-chars 20000 keeps each memory context to its first 20,000 characters, "
            "a smaller --chunk-size puts fewer questions in each chunk",
            highlight=False,
        )
    if args.open:
        import webbrowser

        if not webbrowser.open(path.resolve().as_uri()):
            console.print("[yellow]no web browser found:[/yellow] open the file above yourself", highlight=False)
    return 0


def _largest(page: Path) -> tuple[int, str]:
    """The page's size, or its largest chunk's if that is larger (what a browser has to take at once)."""
    from ..view.paging import data_dir

    sizes = [(page.stat().st_size, "the page")]
    folder = data_dir(page)
    if folder.is_dir():
        sizes += [(f.stat().st_size, f"the chunk {f}") for f in folder.glob("chunk-*.js")]
    return max(sizes)


def _is_folder_of_runs(path: Path) -> bool:
    from ..view.runlist import is_run_dir

    return path.is_dir() and not is_run_dir(path)


def _serve(args: argparse.Namespace, console: Console, chunk_rows: int) -> int:
    from ..view.server import DEFAULT_PORT, ViewServer

    if len(args.runs) != 1:
        raise ConfigError(
            f"--serve takes one folder (of runs, or one run), not {len(args.runs)}: "
            f"chateval view --serve {Path(args.runs[0]).parent}"
        )
    if args.out is not None:
        raise ConfigError("--out is for the written pages; --serve writes none (leave --out out)")
    root = Path(args.runs[0])
    if not root.is_dir():
        raise ConfigError(f"{root}: no such folder")
    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be 0 to 65535, not {port}")
    try:
        server = ViewServer(root, port, context_chars=args.context_chars, chunk_rows=chunk_rows)
    except OSError as e:
        raise ConfigError(f"cannot listen on 127.0.0.1:{port} ({e.strerror or e}); choose another --port") from None
    print(server.url, flush=True)
    console.print(
        f"serving the runs under {root} on {server.url} (this machine only); Ctrl-C stops it", highlight=False
    )
    if args.open:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
