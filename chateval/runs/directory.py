"""Run directories: config.json, samples.jsonl (append-only), summary.json (atomic).

Crash safety: every finished sample is one line, flushed and fsynced as it finishes. On
--resume a torn last line is dropped, failed samples are removed (they run again), and the
file is rewritten atomically so each sample appears exactly once.

Accounting: a run is told the keys it must account for (``expect``), and every summary it
writes says how many of them have no record (``n_missing``, ``complete``), counted from the
file itself, so a record that was lost (a failed write, a line a reader could not split) is
never summarised away. A failed write stops the run with one line (:class:`RunWriteError`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from filelock import FileLock, Timeout

from ..util.errors import ConfigError, InputError, RunWriteError
from ..util.jsonl import dumps_line, read_records
from ..util.secrets import scrub, scrub_obj

CONFIG = "config.json"
SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
LOCK, PID = ".chateval.lock", ".chateval.pid"
# What --overwrite replaces: the files runs write, and the plots the run's report.md shows
# (anything else in the folder is left alone).
RUN_FILES = (CONFIG, SAMPLES, SUMMARY, "report.md", "teabag.json")
_PLOT_LINK = re.compile(r"\]\(([^)/\\]+\.png)\)")
MISSING_SHOWN = 20  # missing keys listed in a summary (the count is always whole)
# Errors that mean "this disk cannot take more" rather than a bad path given by the user.
WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO}


def run_path(path: str | Path) -> Path:
    """A run directory's path; an empty one is refused (Path("") is ".", the current directory,
    where a run would land among whatever is there)."""
    if not str(path).strip():
        raise InputError("--out is empty: give the run directory (a new or empty folder, or an earlier run)")
    return Path(path)


def ensure_dir(path: str | Path) -> Path:
    """Create a run directory, or say in one line why it cannot be one."""
    path = run_path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: --out must be a directory (a file is in the way)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{path}: cannot create the run directory ({e.strerror or e})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{path}: the run directory is not writable")
    return path


class RunLock:
    """An exclusive lock on a run directory for as long as a process writes it. The OS drops
    the lock when its holder dies (``kill -9`` included), so a stale lock is simply taken over;
    the holder's pid is kept beside it to name it in the error."""

    def __init__(self, path: str | Path) -> None:
        self.path = ensure_dir(path)
        self._lock = FileLock(str(self.path / LOCK))

    def acquire(self) -> "RunLock":
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            try:
                holder = (self.path / PID).read_text(encoding="utf-8").strip() or "?"
            except OSError:
                holder = "?"
            raise ConfigError(f"{self.path}: another chateval process (pid {holder}) is writing this run; wait for it "
                              "to finish or choose another --out") from None
        except OSError as e:
            raise InputError(f"{self.path}: cannot lock the run directory ({e.strerror or e})") from None
        try:
            (self.path / PID).write_text(str(os.getpid()), encoding="utf-8")
        except OSError as e:
            self._lock.release()
            raise RunWriteError(self.path / PID, e) from None
        return self

    def release(self) -> None:
        if self._lock.is_locked:
            (self.path / PID).unlink(missing_ok=True)
            self._lock.release()

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def check_not_foreign(path: Path) -> None:
    """Refuse a folder that is not a run (no config.json) but holds files a run writes: the run
    would overwrite them (or --overwrite would move them away)."""
    if (path / CONFIG).is_file():
        return
    clash = [name for name in RUN_FILES if (path / name).exists()]
    if clash:
        raise ConfigError(f"{path}: holds {', '.join(clash)} but is not a chateval run (no {CONFIG}); a run there "
                          "would replace them: choose another --out")


def report_plots(path: Path) -> list[Path]:
    """The plots (in ``path`` itself) that ``path/report.md`` links to: the ones its run drew."""
    try:
        report = (path / "report.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [path / name for name in sorted(set(_PLOT_LINK.findall(report))) if (path / name).is_file()]


def run_files(path: Path) -> list[Path]:
    """An earlier run's own files: RUN_FILES and the plots its report.md links to."""
    return [path / name for name in RUN_FILES if (path / name).is_file()] + report_plots(path)


def check_top_folder(path: Path) -> None:
    """The top folder of a benchmark with sub-runs (one per setting) holds such a run's own
    summary and report, or neither: otherwise the run (or --overwrite) would replace files that
    are not its own."""
    if not path.is_dir() or not any((path / n).exists() for n in ("report.md", "summary.json")):
        return
    try:
        old = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        ours = isinstance(old, dict) and bool(old.get("benchmark")) and "settings" in old
    except (OSError, ValueError):
        ours = False
    if not ours:
        raise ConfigError(f"{path}: holds report.md or summary.json that are not a chateval benchmark run's; a run "
                          "there would replace them: choose another --out")


def clear_top_report(path: Path) -> None:
    """--overwrite of a benchmark's top folder: only the earlier run's own files go (its report's
    plots and the figures it draws under settings*/sweep_* names), not every PNG there."""
    for png in {*report_plots(path), *path.glob("settings*.png"), *path.glob("sweep_*.png")}:
        png.unlink()
    for name in ("report.md", "summary.json"):
        (path / name).unlink(missing_ok=True)


def move_aside(path: Path) -> Path | None:
    """Move an earlier run's files into a hidden folder (deleted once the new run has started),
    so a replacement that fails before it starts loses nothing. Only a run's own files move."""
    files = run_files(path) if (path / CONFIG).is_file() else []
    if not files:
        return None
    aside = Path(tempfile.mkdtemp(dir=path, prefix=".replaced-"))
    for f in files:
        os.replace(f, aside / f.name)
    return aside


def restore(path: Path, aside: Path | None) -> None:
    if aside is None:
        return
    for f in aside.iterdir():
        if not (path / f.name).exists():
            os.replace(f, path / f.name)
    shutil.rmtree(aside, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write a whole file or leave the old one: a disk that cannot take it raises RunWriteError
    (one line naming the file) and no partial file is left."""
    text = scrub(text)  # no configured secret reaches a run's files (config, summary, reports)
    try:
        _atomic_write(path, text)
    except OSError as e:
        if e.errno in WRITE_ERRNOS:
            raise RunWriteError(path, e) from None
        raise


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes 0600 files; a run's files all get the mode open() gives (0666 less umask).
        os.fchmod(fd, 0o666 & ~_umask())
        # backslashreplace: a lone surrogate (from a model's reply, say) is written as the escape
        # "\\ud800", which JSON reads back as the same string, instead of failing the write.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


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
    return {"n_expected": sum(p.get("n_expected", 0) for p in parts),
            "n_missing": sum(p.get("n_missing", 0) for p in parts), "missing_keys": missing[:MISSING_SHOWN]}


class RunDir:
    """One run's output folder, locked while open. Keyed by sample id; ``status == 'ok'`` lines
    are kept on resume. ``overwrite`` replaces an earlier run only once this one can start."""

    def __init__(self, path: str | Path, config: dict[str, Any], *, resume: bool = False, overwrite: bool = False,
                 key: str = "id") -> None:
        self.path = run_path(path)
        self.key = key
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
        check_not_foreign(self.path)
        existing = (self.path / CONFIG).exists() or self.samples_path.exists()
        if existing and not resume and not overwrite:
            raise ConfigError(f"{self.path}: already holds a run; use --resume to continue it, --overwrite to "
                              "replace it, or choose another --out")
        self.done: dict[str, dict[str, Any]] = {}
        self.started = time.perf_counter()
        self.earlier_wall_times: list[float] = self._earlier_wall_times() if resume and existing else []
        self.dropped_failed = 0
        self.dropped_torn = 0
        aside = move_aside(self.path) if overwrite else None
        try:
            if resume and existing:
                self._check_config(config)
                records, self.dropped_torn = read_jsonl(self.samples_path)
                for rec in records:
                    if rec.get("status") == "ok":
                        self.done[str(rec.get(self.key))] = rec
                    else:
                        self.dropped_failed += 1
                atomic_write(self.samples_path, "".join(dumps_line(r) for r in self.done.values()))
            write_json(self.path / CONFIG, config)
            # Unbuffered bytes: a line is written whole or cut back (see append), never left in a buffer.
            self._fh = open(self.samples_path, "ab", buffering=0)
        except BaseException:
            restore(self.path, aside)
            raise
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)  # the new run has started: the old one goes

    def _check_config(self, config: dict[str, Any]) -> None:
        try:
            old = json.loads((self.path / CONFIG).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            raise ConfigError(f"{self.path / CONFIG}: unreadable; cannot check that --resume uses the same settings") from None
        if old.get("config_hash") != config.get("config_hash"):
            diff = [k for k in config.get("judging", {}) if old.get("judging", {}).get(k) != config["judging"][k]]
            what = f" (changed: {', '.join(diff)})" if diff else " (personas or prompt templates changed)"
            raise ConfigError(f"{self.path}: --resume with different settings than the original run{what}")

    def expect(self, keys: Iterable[str]) -> None:
        """Keys (sample ids, unit keys) every summary of this run must account for."""
        self.expected.update((str(k), None) for k in keys)

    def append(self, record: dict[str, Any]) -> None:
        """Append one record, fsynced. A failed write is cut back to the last whole line and
        stops the run: this and every later append raise the same RunWriteError."""
        if self.write_error is not None:
            raise self.write_error
        record = scrub_obj(record)  # an answer or error quoting a configured secret (records from Ray workers too)
        data = dumps_line(record).encode("ascii")
        fd = self._fh.fileno()
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as e:
            try:
                os.ftruncate(fd, start)  # no half line left behind for readers or a resume
            except OSError:
                pass  # a resume drops the torn line and says so
            self.write_error = RunWriteError(self.samples_path, e)
            raise self.write_error from None

    def records(self) -> list[dict[str, Any]]:
        return read_jsonl(self.samples_path)[0]

    def _earlier_wall_times(self) -> list[float]:
        """Wall times of the attempts before this --resume, from the last summary written."""
        try:
            old = json.loads((self.path / SUMMARY).read_text(encoding="utf-8"))
            times = old.get("wall_time_attempts_s") or [old["wall_time_s"]]
            return [float(t) for t in times]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return []  # no summary (killed before one was written): that attempt's time is unknown

    def accounting(self) -> dict[str, Any]:
        """The run's accounting, counted from samples.jsonl as it is on disk now."""
        records, torn = read_jsonl(self.samples_path)
        out = account(self.expected, records, self.key)
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
            summary["complete"] = bool(summary.get("complete", True)) and summary["n_missing"] == 0 \
                and self.write_error is None
            # Imported here: the models package loads openai and autogen, and config modules that
            # write run files import this one (`--help` builds options from them).
            from ..models.budget import active_cap

            cap = active_cap()
            if cap is not None and cap.stopped and summary["n_missing"]:
                # Why the run is incomplete: --max-cost left its missing units unstarted.
                summary["stopped"] = cap.record() | {"n_not_run": summary["n_missing"]}
        try:
            write_json(self.path / SUMMARY, summary)
        except RunWriteError:
            (self.path / SUMMARY).unlink(missing_ok=True)  # an older summary must not speak for this run
            if self.write_error is None:
                raise
            # The samples write already failed: that error (with its counts) is the one to report.

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            self.lock.release()

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close()
        if self.write_error is not None and (exc is None or isinstance(exc, OSError)):
            # The run stopped because a write failed (its summary says what is missing); a later
            # write failing for the same reason (a report, a plot) is not the news.
            raise self.write_error
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
            raise RunWriteError(exc.filename or self.path, exc) from None


def file_sha256(path: str | Path) -> str | None:
    """The content hash of an input file (part of a run's identity); None if it cannot be read."""
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()
