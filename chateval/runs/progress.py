"""Progress display: a rich bar on a terminal (samples, calls, tokens, cost), plain lines otherwise."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from ..models import UsageTotals, cost_text, prompt_cache_text
from ..models.usage import endpoint_usage_rows
from ..stats.agreement import baseline_text
from ..stats.self_consistency import consistency_text
from ..util.tables import print_table
from .savings import calls_saved_text


def _cost(c: float | None) -> str:
    return "n/a (unknown price)" if c is None else f"${c:.4f}"


class RunProgress:
    def __init__(self, totals: UsageTotals, console: Console | None = None, label: str = "samples") -> None:
        self.console = console or Console(stderr=True)
        self.totals = totals
        self.label = label
        self.fancy = self.console.is_terminal
        self._progress: Progress | None = None
        self._task: Any = None
        self.done = self.failed = 0
        self.total = 0
        self._room: int | None = None

    def _stats(self, room: int | None = None) -> str:
        """The run's counters, most useful first, as many as fit in ``room`` characters."""
        t = self.totals
        cache = f" ({t.cache_read_tokens:,} prompt-cached)" if t.cache_read_tokens else ""
        parts = [
            f"failed {self.failed}",
            f"calls {t.calls}",
            f"cost {_cost(t.cost_usd)}",
            f"tokens {t.prompt_tokens + t.completion_tokens:,}{cache}",
            f"cached {t.cached_calls}",
        ]
        if room is None:
            return " · ".join(parts)
        out = ""
        for part in parts:
            longer = f"{out} · {part}" if out else part
            if len(longer) > room:
                break
            out = longer
        return out

    def _layout(self, total: int) -> tuple[list[ProgressColumn], int]:
        """The bar's columns for this console's width, and the room left for the counters.
        The label and the N/M counter always show; the bar, then the elapsed time narrow or go
        first, then the counters drop from the least useful (cached, tokens, cost)."""
        width = self.console.width
        counter = 2 * len(str(total)) + 1
        fixed = [
            TextColumn(f"[bold]{self.label}", table_column=Column(no_wrap=True)),
            MofNCompleteColumn(table_column=Column(no_wrap=True, min_width=counter)),
        ]
        used = len(self.label) + 1 + counter + 1
        cols: list[ProgressColumn] = [fixed[0]]
        bar = 40 if width >= 140 else 20 if width >= 110 else 10 if width >= 80 else 0
        if bar:
            cols.append(BarColumn(bar_width=bar))
            used += bar + 1
        cols.append(fixed[1])
        if width - used >= 40:
            cols.append(TimeElapsedColumn(table_column=Column(no_wrap=True)))
            used += 8
        cols.append(TextColumn("{task.fields[stats]}", table_column=Column(no_wrap=True, overflow="ellipsis")))
        return cols, max(0, width - used - 1)

    def note(self, text: str) -> None:
        """A line about the run outside the units (before the bar starts)."""
        self.console.print(text, highlight=False)

    def start(self, total: int, already: int) -> None:
        self.total, self.done = total, already
        if already:
            self.console.print(f"resuming: {already} of {total} {self.label} already done")
        if self.fancy:
            columns, self._room = self._layout(total)
            self._progress = Progress(*columns, console=self.console, transient=False)
            self._progress.start()
            self._task = self._progress.add_task(
                self.label, total=total, completed=already, stats=self._stats(self._room)
            )

    def advance(self, ok: bool, ident: str = "", detail: str = "") -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, stats=self._stats(self._room))
        else:
            # Plain output for logs and pipes: one line per sample, no control characters.
            status = "ok" if ok else "FAILED"
            print(f"[{self.done}/{self.total}] {ident} {status} {detail}".rstrip(), file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def summary_table(summary: dict[str, Any], console: Console) -> None:
    table = Table(title="chateval summary", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value")
    rows = [
        ("model", summary.get("model")),
        (
            "samples",
            f"{summary.get('n_ok')} ok, {summary.get('n_failed')} failed of {summary.get('n_samples')}"
            + (
                f"; {summary['n_missing']} of {summary.get('n_expected')} inputs have no result"
                if summary.get("n_missing")
                else ""
            ),
        ),
        (
            "parse errors",
            f"{summary.get('parse_errors')} of {summary.get('agent_verdicts')} agent verdicts"
            f" ({summary.get('reasked')} re-asked)",
        ),
    ]
    if "verdicts" in summary:
        rows.append(("verdicts", ", ".join(f"{k}: {v}" for k, v in sorted(summary["verdicts"].items(), key=str))))
    if summary.get("mean_score") is not None:
        rows.append(("mean score", f"{summary['mean_score']:.2f}"))
    if "order_disagreement_rate" in summary:
        rows.append(("order disagreement (swap)", f"{summary['order_disagreement_rate']:.1%}"))
    if summary.get("escalation"):
        e = summary["escalation"]
        rows.append(
            (
                "escalated (--escalate)",
                f"{e['n_escalated']} of {e['n_items']} to the panel; {calls_saved_text(e)}",
            )
        )
    if summary.get("stop_early"):
        st = summary["stop_early"]
        rows.append(
            (
                "stopped early",
                f"{st['n_debates_stopped']} of {st['n_debates']} debates; {st['calls_skipped']} calls skipped",
            )
        )
    if "label_accuracy" in summary:
        la = summary["label_accuracy"]
        base = baseline_text(summary.get("agreement") or {})
        rows.append(("agreement with labels", f"{la['accuracy']:.1%} of {la['n']}" + (f" ({base})" if base else "")))
    if spread := consistency_text(summary):
        rows.append(("self-consistency", spread))
    u = summary.get("usage", {})
    rows += [
        (
            "model calls",
            f"{u.get('calls', 0)} answered, {u.get('cached_calls', 0)} from cache, "
            f"{u.get('failed_calls', 0)} failed; {u.get('retries', 0)} retries",
        ),
        (
            "tokens",
            f"{u.get('prompt_tokens', 0):,} prompt + {u.get('completion_tokens', 0):,} completion"
            + (" (approx: counted locally)" if u.get("tokens_approx") else ""),
        ),
        (
            "tokens from cache",
            f"{u.get('cached_prompt_tokens', 0):,} prompt + {u.get('cached_completion_tokens', 0):,} completion",
        ),
        ("provider prompt cache", prompt_cache_text(u) or "no cached input tokens reported"),
        ("cost", cost_text(u)),
        *endpoint_usage_rows(summary.get("usage_by_endpoint")),
        (
            "wall time",
            f"{summary.get('wall_time_s', 0):.1f} s"
            + (f" over {len(a)} attempts" if len(a := summary.get("wall_time_attempts_s") or []) > 1 else ""),
        ),
    ]
    for k, v in rows:
        table.add_row(k, str(v))
    print_table(console, table)
    if summary.get("note"):
        console.print(f"[yellow]note:[/yellow] {summary['note']}")
