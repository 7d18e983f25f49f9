"""Run directories: config.json, samples.jsonl (append-only), summary.json (atomic).

Crash safety: every finished sample is one line, flushed and fsynced as it finishes. On
--resume a torn last line is dropped, failed samples are removed (they run again), and the
file is rewritten atomically so each sample appears exactly once.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

from .errors import ConfigError, InputError

CONFIG = "config.json"
SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"


def atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
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
    """Records of a JSONL file and the number of unreadable lines (a torn last line counts)."""
    records, bad = [], 0
    if not path.exists():
        return records, bad
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(rec, dict):
            records.append(rec)
        else:
            bad += 1
    return records, bad


def clear_run(path: str | Path) -> None:
    """Remove an earlier run's files (only the files a run writes; anything else is left)."""
    for name in (CONFIG, SAMPLES, SUMMARY):
        (Path(path) / name).unlink(missing_ok=True)


class RunDir:
    """One run's output folder. Keyed by sample id; ``status == 'ok'`` lines are kept on resume."""

    def __init__(self, path: str | Path, config: dict[str, Any], *, resume: bool = False, key: str = "id") -> None:
        self.path = Path(path)
        self.key = key
        self.samples_path = self.path / SAMPLES
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"{self.path}: --out must be a directory")
        existing = (self.path / CONFIG).exists() or self.samples_path.exists()
        if existing and not resume:
            raise ConfigError(f"{self.path}: already holds a run; use --resume to continue it or choose another --out")
        self.path.mkdir(parents=True, exist_ok=True)
        self.done: dict[str, dict[str, Any]] = {}
        self.dropped_failed = 0
        self.dropped_torn = 0
        if resume and existing:
            self._check_config(config)
            records, self.dropped_torn = read_jsonl(self.samples_path)
            for rec in records:
                if rec.get("status") == "ok":
                    self.done[str(rec.get(self.key))] = rec
                else:
                    self.dropped_failed += 1
            atomic_write(self.samples_path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.done.values()))
        write_json(self.path / CONFIG, config)
        self._fh = open(self.samples_path, "a", encoding="utf-8")

    def _check_config(self, config: dict[str, Any]) -> None:
        try:
            old = json.loads((self.path / CONFIG).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            raise ConfigError(f"{self.path / CONFIG}: unreadable; cannot check that --resume uses the same settings") from None
        if old.get("config_hash") != config.get("config_hash"):
            diff = [k for k in config.get("judging", {}) if old.get("judging", {}).get(k) != config["judging"][k]]
            what = f" (changed: {', '.join(diff)})" if diff else " (personas or prompt templates changed)"
            raise ConfigError(f"{self.path}: --resume with different settings than the original run{what}")

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def records(self) -> list[dict[str, Any]]:
        return read_jsonl(self.samples_path)[0]

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.path / SUMMARY, summary)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, *exc: Iterable[Any]) -> None:
        self.close()


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
