"""Run folders: the path, the lock, and what --overwrite may replace (only a run's own files).

A folder is a run when it holds config.json; one that holds a run's file names without it is
refused, so a run never writes over files that are not its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..util.errors import ConfigError, InputError, RunWriteError

CONFIG = "config.json"
SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
LOCK, PID = ".chateval.lock", ".chateval.pid"
# What --overwrite replaces: the files runs write, and the plots the run's report.md shows
# (anything else in the folder is left alone).
RUN_FILES = (CONFIG, SAMPLES, SUMMARY, "report.md", "teabag.json")
_PLOT_LINK = re.compile(r"\]\(([^)/\\]+\.png)\)")


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

    def acquire(self) -> RunLock:
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            try:
                holder = (self.path / PID).read_text(encoding="utf-8").strip() or "?"
            except OSError:
                holder = "?"
            raise ConfigError(
                f"{self.path}: another chateval process (pid {holder}) is writing this run; wait for it "
                "to finish or choose another --out"
            ) from None
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

    def __enter__(self) -> RunLock:
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
        raise ConfigError(
            f"{path}: holds {', '.join(clash)} but is not a chateval run (no {CONFIG}); a run there "
            "would replace them: choose another --out"
        )


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
        raise ConfigError(
            f"{path}: holds report.md or summary.json that are not a chateval benchmark run's; a run "
            "there would replace them: choose another --out"
        )


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
