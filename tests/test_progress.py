"""The live progress line at common terminal widths: the N/M counter always shows; lower-value
columns (bar, elapsed time, token and cache counters) give way first."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from chateval.models import UsageTotals
from chateval.runs.progress import RunProgress


def rendered(width: int, total: int = 200, done: int = 37) -> str:
    """The progress line as a terminal of ``width`` columns shows it mid-run."""
    console = Console(width=width, record=True, file=StringIO(), force_terminal=True)
    totals = UsageTotals(calls=1234, cached_calls=56, prompt_tokens=987_654, completion_tokens=12_345)
    p = RunProgress(totals, console)
    p.start(total, 0)
    for i in range(done):
        p.advance(i % 10 != 0)
    screen = Console(width=width, file=StringIO())
    with screen.capture() as cap:
        screen.print(p._progress.make_tasks_table(p._progress.tasks))
    p.stop()
    return cap.get().rstrip("\n")


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_counter_survives_narrow_terminals(width):
    line = rendered(width)
    assert "\n" not in line and len(line) <= width
    assert line.startswith("samples ") and " 37/200 " in line  # label and N/M, whole
    assert "failed 4" in line and "…" not in line  # counters are dropped whole, never cut mid-word


def test_lower_value_columns_go_first():
    wide, mid, narrow = rendered(120), rendered(80), rendered(60)
    assert "calls 1,234" not in wide  # (counts are printed plainly)
    assert "calls 1234" in wide and "tokens 999,999" in wide and "cached 56" in wide and "━" in wide
    assert "calls 1234" in mid and "cached" not in mid  # the cache count goes before calls
    assert "calls 1234" in narrow and "━" not in narrow and "tokens" not in narrow  # no bar at 60
