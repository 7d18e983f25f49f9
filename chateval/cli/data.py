"""``chateval data list`` and ``chateval data get NAME``: the public data sets the benchmarks
read, downloaded into the data folder the benchmarks look in."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..util.errors import ConfigError

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console

FOLDER_HELP = (
    "the data folder (default: $CHATEVAL_DATA_DIR, else ~/.cache/chateval/data; every benchmark's --data "
    "and `memory ask --data` find a data set's name or file name there, see `chateval data list`)"
)
EXIT_CODES = (
    "exit codes: 0 every file is in place (and verified where the catalog pins a sha256); 1 a download "
    "failed or broke off (what arrived is kept in FILE.part: run the same command again to resume); 2 bad "
    "input (unknown name, a file already there that differs from the catalog); 3 a checksum mismatch "
    "(the download is refused and removed); 130 interrupted, 143 SIGTERM, 129 SIGHUP (FILE.part kept)."
)


def add_parser(sub: Any) -> None:
    dp = sub.add_parser(
        "data",
        help="list the public data sets the benchmarks read, and download them",
        description="The public data sets the benchmarks read: where they come from, their "
        "licences and sizes (list), and a download into the data folder (get).",
    )
    dsub = dp.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    dp.set_defaults(data_help=dp.print_help)
    ls = dsub.add_parser(
        "list",
        help="every data set: what reads it, size, licence, source, and whether it is here",
        description="Every data set the benchmarks read, with its source, licence note, size, "
        "whether its checksum is pinned, and whether it is in the data folder.",
    )
    ls.add_argument("--to", metavar="DIR", help=FOLDER_HELP)
    get = dsub.add_parser(
        "get",
        help="download data sets into the data folder (resumable, checksummed)",
        description="Download the official public files of one or more data sets into the data "
        "folder, continue an interrupted download, verify sizes and sha256 checksums, "
        "and convert them to the layout the loaders read. See `chateval data list`.",
        epilog=EXIT_CODES,
    )
    get.add_argument("names", nargs="+", metavar="NAME", help="data set name(s) from `chateval data list`")
    get.add_argument("--to", metavar="DIR", help=FOLDER_HELP)
    get.add_argument(
        "--mirror",
        metavar="URL",
        help="download from URL/<folder>/<file> (a server holding a data "
        "folder's layout) instead of the official URLs "
        "(default: $CHATEVAL_DATA_MIRROR when set)",
    )
    get.add_argument("--force", action="store_true", help="download again even when a file is already there")
    get.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds without data before giving up")
    get.add_argument(
        "--deadline",
        type=float,
        default=4 * 3600.0,
        metavar="S",
        help="seconds the whole command may take; what arrived by then is kept for the next run (default: 14400)",
    )
    get.add_argument(
        "--max-size",
        type=float,
        default=4.0,
        metavar="GB",
        help="stop a file the catalog gives no exact size for at this many GB (default: 4; a file with an "
        "exact size in the catalog stops at that size)",
    )


def _root(args: argparse.Namespace) -> Path:
    from ..datasets.catalog import data_root

    root = Path(args.to).expanduser() if args.to else data_root()
    if root.exists() and not root.is_dir() or any(p.is_file() for p in root.parents):
        raise ConfigError(f"--to {root}: not a folder")
    return root


def run(args: argparse.Namespace, console: Console) -> int:
    if args.data_command == "list":
        return cmd_list(args)
    if args.data_command == "get":
        return cmd_get(args, console)
    args.data_help()
    return 2


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ..datasets.catalog import CATALOG
    from ..datasets.download import status

    root = _root(args)
    # Without --to, the lookup every `--data` uses: a file shown present is one `--data` finds.
    where = root if args.to else None
    out = Console()
    # One block per data set rather than a table: the sources and licence notes stay readable
    # on a narrow terminal.
    for d in CATALOG:
        pinned = sum(f.sha256 is not None for f in d.files)
        sums = (
            "sha256 pinned"
            if pinned == len(d.files)
            else "sha256 not pinned"
            if not pinned
            else f"sha256 pinned for {pinned} of {len(d.files)} files"
        )
        here = status(d, where)
        colour = {"present": "green", "partial": "yellow"}.get(here, "dim")
        out.print(
            f"[bold]{d.name}[/bold]  [{colour}]{here}[/{colour}]  {escape(d.title)}", highlight=False, soft_wrap=True
        )
        for key, value in (
            ("read by", ", ".join(d.benchmarks)),
            ("size", f"{d.size} · {sums}"),
            ("licence", d.licence),
            ("source", d.source),
            ("files", ", ".join(d.reads)),
            *_found_elsewhere(d.reads, root, where),
        ):
            out.print(f"    {key:<8} {escape(value)}", highlight=False, soft_wrap=True)
    out.print(
        f"data folder: {root}  (`chateval data get NAME` puts a data set there; --to DIR or "
        "$CHATEVAL_DATA_DIR for another folder)",
        highlight=False,
        soft_wrap=True,
    )
    return 0


def _found_elsewhere(reads: tuple[str, ...], root: Path, where: Path | None) -> list[tuple[str, str]]:
    """('found', folder) for files the lookup finds outside the data folder (../shared/data)."""
    from ..datasets.locate import locate

    hits = [p for r in reads if (p := locate(r, where)) is not None and not p.is_relative_to(root.resolve())]
    return [("found", ", ".join(str(p) for p in hits))] if hits else []


class _Bar:
    """A rich download bar per file (bytes, speed, time left)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task: Any = None

    def start(self, label: str, total: int | None, done: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task(label, total=total, completed=done)

    def advance(self, n: int) -> None:
        self.progress.advance(self.task, n)

    def finish(self) -> None:
        self.progress.stop()


def cmd_get(args: argparse.Namespace, console: Console) -> int:
    from ..datasets.catalog import find, names
    from ..datasets.download import get, mirror_url

    unknown = [n for n in args.names if find(n) is None]
    if unknown:
        from ..util.registry import did_you_mean

        hint = did_you_mean(unknown[0], names())
        raise ConfigError(
            f"unknown data set '{unknown[0]}'{hint} (known: {', '.join(names())}; see `chateval data list`)"
        )
    for flag, value in (("--timeout", args.timeout), ("--deadline", args.deadline), ("--max-size", args.max_size)):
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{flag} {value}: must be a number more than 0")
    max_bytes = int(args.max_size * 1e9)
    if max_bytes < 1:
        raise ConfigError(f"--max-size {args.max_size}: must be at least one byte")
    mirror = mirror_url(args.mirror)  # checked (an http(s) URL) and its credentials masked from here on
    root = _root(args)
    deadline = time.monotonic() + args.deadline
    for name in dict.fromkeys(args.names):
        ds = find(name)
        assert ds is not None
        console.print(f"[bold]{ds.name}[/bold]: {ds.title} — licence: {ds.licence}", highlight=False, soft_wrap=True)
        try:
            result = get(
                ds,
                root,
                mirror=mirror,
                force=args.force,
                reporter=_Bar(console),
                timeout=args.timeout,
                max_bytes=max_bytes,
                deadline=deadline,
            )
        except KeyboardInterrupt:
            console.print(
                "[yellow]interrupted:[/yellow] what arrived is kept in FILE.part; run the same command again to resume",
                highlight=False,
            )
            return 130
        for f in result.files:
            check = (
                "sha256 verified"
                if f.pinned
                else f"sha256 {f.sha256}; not pinned in the catalog: check it against the source, then pin it"
                if f.length_checked
                else "sha256 not shown: neither the catalog nor the server gave its length, so it may be incomplete"
            )
            console.print(f"  {f.action}: {f.path} ({check})", highlight=False, soft_wrap=True)
        for p in result.built:
            rel = p.relative_to(root).as_posix()
            extra = f" sha256 {result.unpinned_built[rel]}" if rel in result.unpinned_built else " (sha256 verified)"
            console.print(f"  {'built' if result.rebuilt else 'present'}: {p}{extra}", highlight=False, soft_wrap=True)
        reads = ", ".join(str(root / r) for r in ds.reads)
        print(f"{ds.name}: ready: {reads}")
    return 0
