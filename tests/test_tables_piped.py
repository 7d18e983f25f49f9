"""Tables piped into a log (issue 39 item 8): no cell is cut; one plain line per row."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO

from rich.console import Console
from rich.table import Table

from chateval.util.tables import print_table

LONG = ["simultaneous_summarizer_3x2", "simultaneous_3x2", ("a value that is much longer than any column at 80 " * 2).strip()]


def test_a_wide_table_to_a_pipe_keeps_every_cell_whole():
    out = StringIO()
    table = Table("setting", "agreement", "note", title="calibration")
    for i, name in enumerate(LONG):
        table.add_row(name, f"[bold]{i}.5%[/bold]", LONG[2])
    print_table(Console(file=out, width=80), table)
    lines = out.getvalue().splitlines()
    assert "…" not in out.getvalue()
    assert lines[0] == "calibration" and lines[1] == "setting | agreement | note"
    assert lines[2:] == [f"{name} | {i}.5% | {LONG[2]}" for i, name in enumerate(LONG)]


def test_a_terminal_still_gets_the_boxed_table():
    out = StringIO()
    table = Table("a", "b")
    table.add_row("1", "2")
    print_table(Console(file=out, width=80, force_terminal=True), table)
    assert "┃" in out.getvalue() or "│" in out.getvalue()


def test_bench_list_piped_shows_every_description_whole():
    from chateval.bench.registry import BUILTIN, describe

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run([sys.executable, "-m", "chateval.cli", "bench", "--list"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "…" not in proc.stdout
    for name in BUILTIN:
        assert f"{name} | {' '.join(describe(name)[0].split())}" in proc.stdout.splitlines()
