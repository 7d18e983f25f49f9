"""A run's page built from byte offsets (issue 38 item 3): a first pass keeps, for each sample, a
small index entry (what the question list, its filters and the colours need, and where its record
is in samples.jsonl); a chunk's rows then read their records back, render and let them go. So a
page of a big run never holds every record, nor every sample's debate.

The pass reads samples.jsonl line by line and says what ``read_run`` says of a bad file, in the
same order: a line that is not JSON (a torn last line of a killed run is skipped), then a
record's envelope, then its payload, each one line naming the file and line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..models.usage import UsageTotals
from ..records.lazy import check_envelope
from ..records.run import SAMPLES, run_types
from ..runs.envelope import SampleRecord, check
from ..util.errors import InputError
from .paging import inputs_text
from .samples import SampleView, sample_views

# Fields of an entry the question list reads (view.html.j2) besides where its record is.
SHARED = {"qid", "setting", "system", "category", "status"}
LISTED = ("key", "anchor", "qid", "setting", "system", "category", "status", "failed", "split", "disagrees")


class Source:
    """One samples.jsonl (a run's or a sub-run's) and how its records are typed."""

    __slots__ = ("path", "setting", "model")

    def __init__(self, path: Path, setting: str, model: type[SampleRecord]) -> None:
        self.path, self.setting, self.model = path, setting, model


class Entry:
    """One sample on the page without its record: the list's fields, the speakers of its debates
    (for the colours), whether it was judged in both orders, and where to read it back (its
    source, the line's byte offset and number, and which of the record's samples it is)."""

    __slots__ = (*LISTED, "order_disagreement", "speakers", "swap", "inputs_text", "src", "offset", "line", "i")
    key: str
    anchor: str
    qid: str
    setting: str
    system: str
    category: str
    status: str
    failed: bool
    split: bool
    disagrees: bool | None

    def __init__(self, view: SampleView, src: Source, offset: int, line: int, i: int, inputs_text: str | None) -> None:
        for k in LISTED:
            v = getattr(view, k)
            # Names an item's samples (or every item) share: one string each, not one per sample.
            setattr(self, k, sys.intern(v) if k in SHARED and type(v) is str else v)
        self.order_disagreement = view.order_disagreement
        self.speakers = _speakers(view)
        self.swap = any(len(d.order_turns) > 1 or d.orders for d in view.debates)
        self.inputs_text = inputs_text
        self.src, self.offset, self.line, self.i = src, offset, line, i


_SPEAKERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _speakers(view: SampleView) -> tuple[str, ...]:
    names = tuple(
        dict.fromkeys(
            t.get("speaker", "")
            for d in view.debates
            for turns in d.order_turns.values()
            for t in turns
            if t.get("kind") != "summary"
        )
    )
    return _SPEAKERS.setdefault(names, names)  # one tuple per panel, shared by every sample


def _lines(path: Path) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, byte offset, line, ends in a newline) of each line, split at "\\n" only."""
    try:
        f = path.open("rb")
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None
    with f:
        offset = 0
        for no, line in enumerate(f, 1):
            yield no, offset, line, line.endswith(b"\n")
            offset += len(line)


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return rec if isinstance(rec, dict) else None


class Scan:
    """What the pass over one samples.jsonl found: its entries, records and summed usage, and the
    first error of each kind (raised by priority once every file is read, as ``read_run`` would)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.n_records = 0
        self.bad: list[int] = []
        self.envelope_error: InputError | None = None
        self.payload_error: InputError | None = None

    def json_error(self, path: Path) -> InputError | None:
        if not self.bad:
            return None
        more = f", nor are {len(self.bad) - 1} more line(s)" if len(self.bad) > 1 else ""
        return InputError(
            f"{path}:{self.bad[0]}: not valid JSON (or not UTF-8 text){more}; a run's samples.jsonl holds "
            "one JSON record per line"
        )


def scan(d: Path, kind: str, setting: str, total: UsageTotals, first_of: set[tuple[str, str]]) -> Scan:
    """Index the samples of the run directory ``d`` (records typed as ``kind``'s), summing their
    usage into ``total``; an entry whose (setting, question) was not in ``first_of`` yet keeps the
    start of its inputs for the list's search (a row's first sample, usually)."""
    out = Scan()
    path = d / SAMPLES
    if not path.is_file():
        return out
    src = Source(path, setting, run_types(kind).record)
    for no, offset, line, ended in _lines(path):
        if not line.strip():
            continue
        data = _parse(line)
        if data is None:
            if not (not ended and line.lstrip().startswith(b"{")):  # a torn last line is skipped
                out.bad.append(no)
            continue
        out.n_records += 1
        if out.bad or out.envelope_error:
            continue  # the file is refused: only its other bad lines are counted now
        where = f"{path}:{no}"
        try:
            check_envelope(data, where)
        except InputError as e:
            out.envelope_error = e
            continue
        if out.payload_error:
            continue  # refused unless an envelope error comes first (read_run checks those first)
        try:
            rec = check(src.model, data, where)
        except InputError as e:
            out.payload_error = e
            continue
        for i, view in enumerate(sample_views(rec, setting)):
            fresh = (view.setting, view.qid or view.key) not in first_of
            first_of.add((view.setting, view.qid or view.key))
            out.entries.append(Entry(view, src, offset, no, i, inputs_text(view.inputs) if fresh else None))
        for u in usages(rec.data()):
            total.merge(UsageTotals.model_validate(u))
    return out


def judged_inside(x: Any) -> bool:
    """x is a judged item (it has a transcript), or a map of them without a usage of its own."""
    if not isinstance(x, dict):
        return False
    return "transcript" in x or (
        "usage" not in x and any(isinstance(y, dict) and "transcript" in y for y in x.values())
    )


def usages(v: Any) -> Iterator[dict[str, Any]]:
    """Every usage block inside a record (answer, judge, each system of a head-to-head case)."""
    if isinstance(v, dict):
        if "calls" in v and "prompt_tokens" in v:
            yield v
            return
        counted = isinstance(v.get("usage"), dict) and "calls" in v["usage"]
        for x in v.values():
            # Judged items nested in a record that has its own usage (Topical-Chat's per-aspect
            # debates) are already counted in that usage.
            if not (counted and judged_inside(x)):
                yield from usages(x)
    elif isinstance(v, list):
        for x in v:
            yield from usages(x)


def cap_context(s: SampleView, limit: int) -> None:
    """Keep the first ``limit`` characters of a sample's context on the page; count the rest."""
    kept, used = [], 0
    for line, gold in s.context_gold:
        if used + len(line) > limit:
            s.context_cut = sum(len(x) + 1 for x, _ in s.context_gold) - 1 - used
            break
        kept.append((line, gold))
        used += len(line) + 1
    s.context_gold = kept
    contexts = s.memory.get("contexts")
    if isinstance(contexts, dict):  # head-to-head: each system's context, cut the same way
        s.memory["contexts"] = {
            name: c
            if not isinstance(c, str) or len(c) <= limit
            else f"{c[:limit]}\n… {len(c) - limit} more characters not shown (--context-chars)"
            for name, c in contexts.items()
        }


class Reader:
    """Reads entries' samples back (a chunk's rows), each record once, its files kept open."""

    def __init__(self, context_chars: int | None = None) -> None:
        self.context_chars = context_chars
        self.files: dict[Path, Any] = {}
        self.cache: dict[tuple[Path, int], list[SampleView]] = {}

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self.files.values():
            f.close()

    def view(self, e: Entry) -> SampleView:
        src = e.src
        got = self.cache.get((src.path, e.offset))
        if got is None:
            f = self.files.get(src.path) or self.files.setdefault(src.path, src.path.open("rb"))
            f.seek(e.offset)
            data = _parse(f.readline())
            if data is None:
                raise InputError(f"{src.path}:{e.line}: changed while its page was built; build the page again")
            got = sample_views(check(src.model, data, f"{src.path}:{e.line}"), src.setting)
            if self.context_chars is not None:
                for s in got:
                    cap_context(s, self.context_chars)
            self.cache[(src.path, e.offset)] = got
        return got[e.i]
