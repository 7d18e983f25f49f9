"""What a benchmark keeps of its records for its summary (issue 38 item 3).

A unit's record goes to disk as it finishes and is not kept (``run_units``); the summary is then
built in a second pass over samples.jsonl, a line at a time. A benchmark whose summary reads only
some fields passes ``keep=`` a *view*: a function from a record to the little it needs (no
answers, contexts, transcripts or per-call usage), so what stays in memory per unit is a few
hundred bytes, not the record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..models import UsageTotals
from ..runs.directory import RunDir

View = Callable[[dict[str, Any]], dict[str, Any]]


def whole(record: dict[str, Any]) -> dict[str, Any]:
    """The record itself (a benchmark whose summary has not been given a view)."""
    return record


def fields(*names: str) -> View:
    """A view keeping only the top-level ``names`` a record has."""

    def view(record: dict[str, Any]) -> dict[str, Any]:
        return {k: record[k] for k in names if k in record}

    return view


class UsageSum:
    """A running :class:`UsageTotals` of usage dicts, added as records stream by; ``dump()`` is
    what ``summaries.usage_sum`` gives for the same dicts in the same order."""

    def __init__(self) -> None:
        self.total = UsageTotals()

    def add(self, usage: dict[str, Any] | None) -> None:
        if usage:
            self.total.merge(UsageTotals.model_validate(usage))

    def dump(self) -> dict[str, Any]:
        return self.total.model_dump()


def records_of(run: RunDir, keys: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The run's records (old and new) whose keys are ``keys``, read from samples.jsonl one at a
    time: for a summary built as they stream by (``run_units(..., keep=None)`` first)."""
    wanted = set(keys)
    return (r for r in run.iter_records() if r.get("key") in wanted)
