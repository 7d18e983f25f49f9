"""``read_run``: a run directory as typed records: config, samples, summary, files and sub-runs.

Every kind of run is read here, so the viewer, the calibrate/audit readers, the benchmark scripts
and a user's notebook read a run one way. The record types come from the run's kind: a judged
run's (:mod:`.judged`), or the benchmark's own (``Benchmark.record_type``, ``summary_type``),
so a plugin benchmark's runs read typed with no edit here. Runs written before run files
carried a ``format_version`` load the same way (version 0).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer

from ..runs.envelope import ConfigRecord, SampleRecord, SummaryRecord, check
from ..runs.folder import CONFIG, SAMPLES, SUMMARY
from ..util.errors import InputError
from .judged import EvaluateSummary, JudgedRecord
from .lazy import LazyRecords, check_envelope

RUN_FILES = (SUMMARY, SAMPLES, CONFIG)


class NotARunDir(InputError):
    """The path is missing or holds none of a run's files."""


class RunTypes(BaseModel):
    """The models a kind of run is read with."""

    model_config = ConfigDict(frozen=True)

    record: type[SampleRecord] = SampleRecord
    summary: type[SummaryRecord] = SummaryRecord
    setting_summary: type[SummaryRecord] = SummaryRecord  # its sub-runs' summary.json (one per setting)


# Kinds that are not benchmarks (a benchmark's types are on its class). A calibrate or audit
# run has its own strict reader too (chateval.read_calibration, chateval.read_audit).
KINDS: dict[str, RunTypes] = {
    "evaluate": RunTypes(record=JudgedRecord, summary=EvaluateSummary, setting_summary=EvaluateSummary),
    "audit": RunTypes(record=JudgedRecord),
    "calibrate": RunTypes(),  # its settings are evaluate runs (read_run reads them so)
}


class Run(BaseModel):
    """One run directory. ``runs`` are its sub-runs (a benchmark's or calibrate's settings, one
    folder each), read the same way."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    kind: str  # "evaluate", a benchmark's name, "calibrate", "audit"; "run" when it cannot tell
    config: ConfigRecord | None = None  # None: the run has no config.json (a benchmark's top folder)
    summary: SummaryRecord | None = None  # None: stopped before its first summary
    # samples.jsonl, in file order: a LazyRecords when read, each record typed on first access
    records: Sequence[SampleRecord] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # every file of the run, relative to ``path``
    runs: dict[str, Run] = Field(default_factory=dict)
    unreadable_lines: int = 0  # a torn last line (a run killed mid-write), skipped

    @field_serializer("records", mode="wrap")
    def _records_as_list(self, records: Sequence[SampleRecord], handler: SerializerFunctionWrapHandler) -> Any:
        return handler(list(records))  # dumped as the list it was before records were lazy

    @property
    def format_version(self) -> int:
        """The run's format: 0 for runs written before run files were versioned."""
        return max((r.format_version for r in (self.summary, self.config) if r is not None), default=0)

    @property
    def complete(self) -> bool:
        """The run wrote its summary and every expected unit has a result (as the summary counts)."""
        s = self.summary
        return s is not None and s.complete is not False and not s.n_missing

    @property
    def benchmark(self) -> str | None:
        return self.kind if self.kind not in (*KINDS, "run") else None

    def all_records(self) -> Iterator[tuple[str, SampleRecord]]:
        """(setting, record) of the run and then of each sub-run ("" for the run itself)."""
        yield from (("", r) for r in self.records)
        for name, sub in self.runs.items():
            yield from ((name, r) for r in sub.records)


def run_kind(config: dict[str, Any], summary: dict[str, Any]) -> str:
    """What wrote a run, from its files: calibrate and audit say so; a benchmark names itself
    (in the summary, or a setting's config); an evaluate run has the judge's ``config``."""
    kind = summary.get("kind") or config.get("kind")
    if kind:
        return "calibrate" if kind == "calibration" else str(kind)
    bench = summary.get("benchmark") or config.get("benchmark") or (config.get("judging") or {}).get("benchmark")
    if bench:
        return str(bench)
    if "config" in config or "task" in summary:
        return "evaluate"
    return "run"


def run_types(kind: str) -> RunTypes:
    """The record types of a kind of run: a benchmark's are declared on its class."""
    if kind in KINDS:
        return KINDS[kind]
    # Benchmarks sit above the records (they import them), so their registry is reached by name:
    # importing chateval.bench registers the built-in ones; plugins and entry points register theirs.
    benchmarks = importlib.import_module("chateval.bench").BENCHMARKS
    if kind not in benchmarks:
        return RunTypes()  # an unknown kind (a benchmark not installed here): the envelope only
    cls = benchmarks.get(kind)
    return RunTypes(record=cls.record_type, summary=cls.summary_type, setting_summary=cls.setting_summary_type)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a run file (not UTF-8 text, byte {e.start})") from None
    except (OSError, json.JSONDecodeError, RecursionError) as e:
        raise InputError(f"{path}: not readable JSON ({getattr(e, 'strerror', None) or e})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a run file (a JSON {type(data).__name__}, not an object)")
    return data


def read_samples(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """(line number, record) of a samples.jsonl split at "\\n" only (as the run writer reads it),
    and 1 if a torn last line of a killed run was skipped; any other bad line is an error naming it."""
    try:
        raw = path.read_bytes()  # read once: parsed here, its last line checked for a torn write
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None
    records: list[tuple[int, dict[str, Any]]] = []
    bad: list[int] = []
    lines = raw.split(b"\n")  # at "\n" only (see chateval.util.jsonl), once for both uses
    del raw  # the lines hold the bytes now: not the file twice while it is parsed
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            rec = None
        if isinstance(rec, dict):
            records.append((no, rec))
        else:
            bad.append(no)
    # Torn: the last line, not ended by a newline, and the start of a record (not binary junk).
    torn = len(lines) if lines[-1].strip() and lines[-1].lstrip().startswith(b"{") else None
    rest = [no for no in bad if no != torn]
    if rest:
        more = f", nor are {len(rest) - 1} more line(s)" if len(rest) > 1 else ""
        raise InputError(
            f"{path}:{rest[0]}: not valid JSON (or not UTF-8 text){more}; a run's samples.jsonl holds "
            "one JSON record per line"
        )
    return records, int(torn in bad)


def is_run(path: Path) -> bool:
    return any((path / f).is_file() for f in RUN_FILES)


def _files(path: Path) -> list[str]:
    """The run's files (sub-runs' too), hidden ones (the lock, a replaced run) left out."""
    out = []
    for f in sorted(path.rglob("*")):
        rel = f.relative_to(path)
        if f.is_file() and not any(part.startswith(".") for part in rel.parts):
            out.append(rel.as_posix())
    return out


def _read(
    path: Path, *, setting_of: str | None = None, with_files: bool = True, samples: bool = True, lazy: bool = True
) -> Run:
    config = _json(path / CONFIG) if (path / CONFIG).is_file() else None
    summary = _json(path / SUMMARY) if (path / SUMMARY).is_file() else None
    for data, model, name in ((config, ConfigRecord, CONFIG), (summary, SummaryRecord, SUMMARY)):
        if data is not None:  # the envelope (format version, field types) before its kind is read from it
            check(model, data, str(path / name))
    kind = setting_of or run_kind(config or {}, summary or {})
    types = run_types(kind)
    # A benchmark's setting (a sub-run, or one read on its own) has the per-setting summary.
    setting = setting_of is not None or (config is not None and "setting" in config and kind not in KINDS)
    summary_type = types.setting_summary if setting else types.summary
    run = Run(
        path=path,
        kind=kind,
        files=_files(path) if with_files else [],
        config=check(ConfigRecord, config, str(path / CONFIG)) if config is not None else None,
        summary=check(summary_type, summary, str(path / SUMMARY)) if summary is not None else None,
    )
    if samples and (path / SAMPLES).is_file():
        records, run.unreadable_lines = read_samples(path / SAMPLES)
        where = str(path / SAMPLES)
        for no, rec in records:  # the envelope now (resume, gates and counts rely on it); the payload when read
            check_envelope(rec, f"{where}:{no}")
        run.records = lazy_records = LazyRecords(types.record, where, records)
        if not lazy:
            lazy_records.check_all()
    return run


def read_run(path: str | Path, *, samples: bool = True, subruns: bool = True, lazy: bool = True) -> Run:
    """A run directory (``--out`` of evaluate, bench, calibrate or audit) and its sub-runs, typed.
    ``samples=False`` reads config and summary only (a run list). A bad run directory is an
    InputError of one line naming the file (and line): config, summary, a samples.jsonl line
    that is not JSON and a record's envelope are checked here; a record's own fields when it is
    first read (``run.records[i]``, iterating), or here too with ``lazy=False`` (see .lazy)."""
    path = Path(path)
    if not path.is_dir():
        raise NotARunDir(f"{path}: no such run directory")
    if not is_run(path):
        raise NotARunDir(f"{path}: not a run directory (none of {', '.join(RUN_FILES)})")
    run = _read(path, with_files=samples, samples=samples, lazy=lazy)
    if not subruns:
        return run
    subs = [p for p in sorted(path.iterdir()) if p.is_dir() and not p.name.startswith(".") and is_run(p)]
    for sub in subs:
        # A sub-run is a setting of the run above: read with its kind's types (calibrate's
        # settings are evaluate runs, a benchmark's are its own).
        of = "evaluate" if run.kind == "calibrate" else run.kind if run.kind != "run" else None
        run.runs[sub.name] = _read(sub, setting_of=of, with_files=False, samples=samples, lazy=lazy)
    return run
