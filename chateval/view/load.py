"""Read a run directory (and the sub-runs a benchmark writes) into what the viewer shows.

Only the run directory is read: config.json, samples.jsonl, summary.json, report.md and the PNG
plots (how one record becomes samples is :mod:`.samples`).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, Field

from ..records.audit import AuditSummary, is_audit, read_summary
from ..util.errors import InputError
from ..util.jsonl import read_records
from ..models.usage import UsageTotals
from .samples import SampleView, sample_views

RUN_FILES = ("summary.json", "samples.jsonl", "config.json")


class NotARunDir(InputError):
    """The path is missing or holds none of a run's files."""


class RunView(BaseModel):
    path: str
    name: str
    config: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(default_factory=dict)
    reports: dict[str, str] = Field(default_factory=dict)  # setting -> report.md text
    plots: list[tuple[str, str]] = Field(default_factory=list)  # (relative name, base64 PNG)
    samples: list[SampleView] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)  # summed over every record read
    n_records: int = 0
    audit: AuditSummary | None = None  # an audit run (chateval audit): its flip rates and compared verdicts


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a run file (not UTF-8 text, byte {e.start})") from None
    except (OSError, json.JSONDecodeError, RecursionError) as e:
        raise InputError(f"{path}: not readable JSON ({getattr(e, 'strerror', None) or e})") from None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """A samples.jsonl, split at "\\n" only (as the run writer reads it). A torn last line of a
    killed run is skipped, as the run writer does; any other bad line is an error naming it."""
    try:
        records, bad = read_records(path)
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None
    lines = raw.split(b"\n")
    # Torn: the last line, not ended by a newline, and the start of a record (not binary junk).
    torn = len(lines) if lines[-1].strip() and lines[-1].lstrip().startswith(b"{") else None
    bad = [no for no in bad if no != torn]
    if bad:
        more = f", nor are {len(bad) - 1} more line(s)" if len(bad) > 1 else ""
        raise InputError(f"{path}:{bad[0]}: not valid JSON (or not UTF-8 text){more}; a run's samples.jsonl holds "
                         "one JSON record per line")
    return [rec for _, rec in records]


def _is_run(path: Path) -> bool:
    return any((path / f).is_file() for f in RUN_FILES)


def _judged_inside(x: Any) -> bool:
    """x is a judged item (it has a transcript), or a map of them without a usage of its own."""
    if not isinstance(x, dict):
        return False
    return "transcript" in x or ("usage" not in x and any(isinstance(y, dict) and "transcript" in y
                                                          for y in x.values()))


def _usages(v: Any) -> Iterator[dict[str, Any]]:
    """Every usage block inside a record (answer, judge, each system of a head-to-head case)."""
    if isinstance(v, dict):
        if "calls" in v and "prompt_tokens" in v:
            yield v
            return
        counted = isinstance(v.get("usage"), dict) and "calls" in v["usage"]
        for x in v.values():
            # Judged items nested in a record that has its own usage (Topical-Chat's per-aspect
            # debates) are already counted in that usage.
            if not (counted and _judged_inside(x)):
                yield from _usages(x)
    elif isinstance(v, list):
        for x in v:
            yield from _usages(x)


def load_run(path: Path) -> RunView:
    """A run directory, its benchmark sub-runs (one level down) and their plots."""
    path = Path(path)
    if not path.is_dir():
        raise NotARunDir(f"{path}: no such run directory")
    if not _is_run(path):
        raise NotARunDir(f"{path}: not a run directory (none of {', '.join(RUN_FILES)})")
    view = RunView(path=str(path), name=path.name or str(path))
    if (path / "config.json").is_file():
        view.config = _json(path / "config.json")
    if (path / "summary.json").is_file():
        view.summary = _json(path / "summary.json")
    usages: list[dict[str, Any]] = []
    subs = [("", path)] + [(p.name, p) for p in sorted(path.iterdir()) if p.is_dir() and _is_run(p)]
    for setting, d in subs:
        if (d / "report.md").is_file():
            view.reports[setting] = (d / "report.md").read_text(encoding="utf-8", errors="replace")
        for png in sorted(d.glob("*.png")):
            name = f"{setting}/{png.name}" if setting else png.name
            view.plots.append((name, base64.b64encode(png.read_bytes()).decode("ascii")))
        if (d / "samples.jsonl").is_file():
            records = _jsonl(d / "samples.jsonl")
            view.samples += [v for r in records for v in sample_views(r, setting)]
            view.n_records += len(records)
            usages += list(_usages(records))
    total = UsageTotals()
    for u in usages:
        total.merge(UsageTotals.model_validate(u))
    view.usage = total.model_dump()
    if is_audit(view.summary):
        view.audit = read_summary(path)
        # Each item's original first: the row shows its inputs, the variants follow.
        view.samples.sort(key=lambda s: (s.qid, s.system != "original", s.key))
    return view
