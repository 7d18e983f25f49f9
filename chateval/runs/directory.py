"""Run directories: config.json, samples.jsonl (append-only), summary.json (atomic).

Crash safety: every finished sample is one line, written and fsynced by a writer thread in
batches as samples finish (group commit, :mod:`chateval.runs.writer`): ``kill -9`` loses at
most the lines in flight, and the event loop never waits for the disk. On
--resume a torn last line is dropped, failed samples are removed (they run again), and the
file is rewritten atomically so each sample appears exactly once.

Accounting: a run is told the keys it must account for (``expect``), and every summary it
writes says how many of them have no record (``n_missing``, ``complete``), counted from the
file itself, so a record that was lost (a failed write, a line a reader could not split) is
never summarised away. A failed write stops the run with one line (:class:`RunWriteError`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..util.errors import ConfigError, InputError, RunWriteError
from ..util.jsonl import dumps_line, iter_offsets, iter_records, read_at, read_records
from ..util.secrets import scrub_obj
from ..util.streams import lost_output
from .envelope import ConfigRecord, Envelope, SampleRecord, SummaryRecord, check, stamp
from .files import WRITE_ERRNOS, atomic_write, atomic_write_lines, write_json
from .folder import (
    CONFIG,
    SAMPLES,
    SUMMARY,
    RunLock,
    check_not_foreign,
    move_aside,
    restore,
    run_path,
)
from .readable import read_json_object, regular_size
from .writer import GroupWriter

MISSING_SHOWN = 20  # missing keys listed in a summary (the count is always whole)


def write_summary_file(path: Path, summary: dict[str, Any], model: type[Envelope] = SummaryRecord) -> None:
    """summary.json of a run or a benchmark's top folder: checked and versioned (:func:`stamp`)."""
    note_lost_output(summary)
    write_json(path, stamp(summary, model))


def note_lost_output(summary: dict[str, Any]) -> None:
    """``output_lost`` in a summary when stdout or stderr was closed during the run (the run went
    on without printing: :mod:`chateval.util.streams`)."""
    lost = lost_output()
    if lost:
        summary["output_lost"] = lost


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Records of a JSONL file and the number of unreadable lines (a torn last line counts).
    Lines end at "\\n" only (:mod:`chateval.util.jsonl`)."""
    if not path.exists():
        return [], 0
    records, bad = read_records(path)
    return [r for _, r in records], len(bad)


def account(expected: Iterable[str], records: Iterable[dict[str, Any]], key: str = "id") -> dict[str, Any]:
    """How completely ``records`` cover the ``expected`` keys: the counts every summary carries.
    A failed unit has a record (it is counted in n_failed); a missing one has none at all."""
    have = {str(r.get(key)) for r in records}
    expected = list(dict.fromkeys(str(k) for k in expected))
    missing = [k for k in expected if k not in have]
    return {"n_expected": len(expected), "n_missing": len(missing), "missing_keys": missing[:MISSING_SHOWN]}


def merge_accounts(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The accounting of several sub-runs (settings of one benchmark) as one."""
    parts = list(parts)
    missing = [k for p in parts for k in p.get("missing_keys") or []]
    return {
        "n_expected": sum(p.get("n_expected", 0) for p in parts),
        "n_missing": sum(p.get("n_missing", 0) for p in parts),
        "missing_keys": missing[:MISSING_SHOWN],
    }


class RunDir:
    """One run's output folder, locked while open. Keyed by sample id; ``status == 'ok'`` lines
    are kept on resume. ``overwrite`` replaces an earlier run only once this one can start."""

    def __init__(
        self,
        path: str | Path,
        config: dict[str, Any],
        *,
        resume: bool = False,
        overwrite: bool = False,
        key: str = "id",
        record_type: type[Envelope] = SampleRecord,
        summary_type: type[Envelope] = SummaryRecord,
    ) -> None:
        self.path = run_path(path)
        self.key = key
        # What this run writes is checked against its kind's models (chateval.records) and versioned.
        self.record_type, self.summary_type = record_type, summary_type
        self.samples_path = self.path / SAMPLES
        self.expected: dict[str, None] = {}  # keys this run must account for (ordered set)
        self.write_error: RunWriteError | None = None
        self.lock = RunLock(self.path).acquire()
        try:
            self._open(config, resume=resume, overwrite=overwrite and not resume)
        except BaseException:
            self.lock.release()
            raise

    def _open(self, config: dict[str, Any], *, resume: bool, overwrite: bool) -> None:
        if (self.path / CONFIG).exists() or (self.path / CONFIG).is_symlink():
            regular_size(self.path / CONFIG)  # a folder or a device named config.json: not a run's
        check_not_foreign(self.path)
        existing = (self.path / CONFIG).exists() or self.samples_path.exists()
        if existing and not resume and not overwrite:
            raise ConfigError(
                f"{self.path}: already holds a run; use --resume to continue it, --overwrite to "
                "replace it, or choose another --out"
            )
        self.done: set[str] = set()  # keys of the finished units kept by --resume
        self.started = time.perf_counter()
        self.earlier_wall_times: list[float] = self._earlier_wall_times() if resume and existing else []
        self.dropped_failed = 0
        self.dropped_torn = 0
        aside = move_aside(self.path) if overwrite else None
        try:
            if resume and existing:
                for name in (CONFIG, SAMPLES, SUMMARY):  # a directory, or /dev/zero (read for ever)
                    if (self.path / name).exists() or (self.path / name).is_symlink():
                        regular_size(self.path / name)
                self._check_config(config)
                self._keep_finished()
            write_json(self.path / CONFIG, stamp(config, ConfigRecord))
            # Unbuffered bytes: a batch is written whole or cut back (the writer thread), never left in a buffer.
            self._fh = open(self.samples_path, "ab", buffering=0)
            self._writer = GroupWriter(self._fh.fileno())
        except BaseException:
            restore(self.path, aside)
            raise
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)  # the new run has started: the old one goes

    def _keep_finished(self) -> None:
        """--resume: keep samples.jsonl's finished records (a key's last one, where its first was)
        and drop failed and torn lines, rewriting the file atomically. Read a line at a time and
        written from each kept line's offset: a large run is never held whole, only its keys."""
        at: dict[str, int] = {}  # a finished key -> the offset of its last finished line
        if self.samples_path.exists():
            no = 0
            for offset, rec in iter_offsets(self.samples_path):
                if rec is None:
                    self.dropped_torn += 1
                    continue
                no += 1
                check(self.record_type, rec, f"{self.samples_path}: record {no}")  # a version we read
                if rec.get("status") == "ok":
                    at[str(rec.get(self.key))] = offset
                else:
                    self.dropped_failed += 1
        self.done = set(at)
        if not at:
            atomic_write(self.samples_path, "")
            return
        with open(self.samples_path, "rb") as f:
            atomic_write_lines(self.samples_path, (dumps_line(read_at(f, offset)) for offset in at.values()))

    def _check_config(self, config: dict[str, Any]) -> None:
        if not (self.path / CONFIG).exists():
            raise ConfigError(f"{self.path / CONFIG}: missing; cannot check that --resume uses the same settings")
        old = read_json_object(self.path / CONFIG)
        check(ConfigRecord, old, str(self.path / CONFIG))  # a format version this chateval reads
        if not isinstance(old.get("judging", {}), dict):
            raise ConfigError(f"{self.path / CONFIG}: field 'judging': not an object")
        if old.get("config_hash") != config.get("config_hash"):
            diff = [k for k in config.get("judging", {}) if old.get("judging", {}).get(k) != config["judging"][k]]
            what = f" (changed: {', '.join(diff)})" if diff else " (personas or prompt templates changed)"
            raise ConfigError(f"{self.path}: --resume with different settings than the original run{what}")

    def expect(self, keys: Iterable[str]) -> None:
        """Keys (sample ids, unit keys) every summary of this run must account for."""
        self.expected.update((str(k), None) for k in keys)

    def append(self, record: dict[str, Any]) -> None:
        """Queue one record for the writer thread, which writes and fsyncs it with the others
        queued meanwhile. A failed write is cut back to the last whole line and stops the run:
        the next append (or :meth:`flush`) sets ``write_error``, and every later append raises it."""
        if self.write_error is not None:
            raise self.write_error
        record = scrub_obj(record)  # an answer or error quoting a configured secret (records from Ray workers too)
        record = stamp(record, self.record_type)
        try:
            self._writer.put(dumps_line(record).encode("ascii"))
        except OSError as e:
            self.write_error = RunWriteError(self.samples_path, e)
            raise self.write_error from None

    def flush(self) -> None:
        """Wait until every appended record is on disk (fsynced) or its write failed."""
        self._writer.flush()
        self._note_error()

    def _note_error(self) -> None:
        if self.write_error is None and self._writer.error is not None:
            self.write_error = RunWriteError(self.samples_path, self._writer.error)

    def records(self) -> list[dict[str, Any]]:
        self.flush()
        return read_jsonl(self.samples_path)[0]

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """The readable records on disk, one at a time (for summaries of runs too big to hold)."""
        self.flush()
        if self.samples_path.exists():
            yield from (rec for _, rec in iter_records(self.samples_path) if rec is not None)

    def _earlier_wall_times(self) -> list[float]:
        """Wall times of the attempts before this --resume, from the last summary written."""
        try:
            old = read_json_object(self.path / SUMMARY)
            times = old.get("wall_time_attempts_s") or [old["wall_time_s"]]
            return [float(t) for t in times]
        except (InputError, OSError, ValueError, TypeError, KeyError, AttributeError):
            return []  # no summary (killed before one was written): that attempt's time is unknown

    def accounting(self) -> dict[str, Any]:
        """The run's accounting, counted from samples.jsonl as it is on disk now."""
        self.flush()
        torn = 0
        keys: list[dict[str, Any]] = []  # only each record's key: a large run is read a line at a time
        if self.samples_path.exists():
            for _, rec in iter_records(self.samples_path):
                if rec is None:
                    torn += 1
                else:
                    keys.append({self.key: rec.get(self.key)})
        out = account(self.expected, keys, self.key)
        out["unreadable_lines"] = torn + self.dropped_torn  # now, and dropped by this --resume
        if self.write_error is not None:
            out["write_error"] = str(self.write_error.error.strerror or self.write_error.error)
            self.write_error.missing = (out["n_missing"], out["n_expected"])
        return out

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Writes summary.json with the wall time of every attempt (a resumed run reports its total)
        and the run's accounting: ``n_missing`` expected records without any result, and
        ``complete`` false whenever one is missing (whatever the benchmark computed)."""
        attempts = self.earlier_wall_times + [time.perf_counter() - self.started]
        summary["wall_time_s"] = sum(attempts)
        summary["wall_time_attempts_s"] = attempts
        if self.expected:
            summary |= self.accounting()
            summary["complete"] = (
                bool(summary.get("complete", True)) and summary["n_missing"] == 0 and self.write_error is None
            )
            # Imported here: the models package loads openai and autogen, and config modules that
            # write run files import this one (`--help` builds options from them).
            from ..models.budget import active_cap

            cap = active_cap()
            if cap is not None and cap.stopped and summary["n_missing"]:
                # Why the run is incomplete: --max-cost left its missing units unstarted.
                summary["stopped"] = cap.record() | {"n_not_run": summary["n_missing"]}
        note_lost_output(summary)
        stamped = stamp(summary, self.summary_type)
        summary.clear()  # the caller's summary (returned by the run) is the one written, version and all
        summary.update(stamped)
        try:
            write_json(self.path / SUMMARY, summary)
        except RunWriteError:
            (self.path / SUMMARY).unlink(missing_ok=True)  # an older summary must not speak for this run
            if self.write_error is None:
                raise
            # The samples write already failed: that error (with its counts) is the one to report.

    def close(self) -> None:
        try:
            self._writer.close()  # drains the queue: every appended record is written or failed
            self._note_error()
            self._fh.close()
        finally:
            self.lock.release()

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()
        if self.write_error is not None and (exc is None or isinstance(exc, OSError)):
            # The run stopped because a write failed (its summary says what is missing); a later
            # write failing for the same reason (a report, a plot) is not the news.
            raise self.write_error
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
            raise RunWriteError(exc.filename or self.path, exc) from None
