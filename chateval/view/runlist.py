"""Every run under a folder, at any depth, as one row of the run list: kind, data, systems or panel,
headline, status and date. Only config.json, summary.json and the samples files' sizes are read,
so listing a folder of large runs stays quick."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..records.run import KINDS, is_run, read_run, run_kind
from ..runs.folder import LOCK, PID
from ..util.errors import InputError
from ..util.paths import inside
from .format import money, num, pct
from .load import RUN_FILES, check_inside

STATUSES = ("running", "incomplete", "failed", "complete", "unreadable")


class RunEntry(BaseModel):
    rel: str  # the run's path under the listed folder ("." for the folder itself), with "/"
    path: str
    kind: str  # evaluate, bench NAME, calibrate, audit, or "run" when no file says
    data: str = "–"
    model: str = "–"
    who: str = "–"  # systems (memory benchmarks), the panel (evaluate, audit) or the settings compared
    headline: str = "–"
    cost: str = "–"
    status: str  # one of STATUSES
    detail: str = ""  # why that status (what is missing, how many failed, the unreadable file)
    mtime: float = 0.0  # newest run file, for the date shown and for live refresh
    date: str = "–"
    n_records: int = 0  # lines in samples.jsonl (the run and its sub-runs): grows while a run writes


def is_run_dir(path: Path) -> bool:
    """A run's folder: a run file, or the lock a running command holds before it writes one."""
    return any((path / f).is_file() for f in (*RUN_FILES, LOCK))


def find_runs(root: Path) -> list[Path]:
    """Run folders under ``root`` (``root`` itself if it is one), in path order. A run's own
    sub-folders are its sub-runs (a benchmark's settings), shown on its page, not listed apart.
    A link to a folder outside ``root`` is not followed: only what is under the folder is listed."""
    root = Path(root)
    if is_run_dir(root):
        return [root]
    found = []
    for here, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for d in list(dirs):
            if is_run_dir(Path(here) / d) and inside(Path(here) / d, root):
                found.append(Path(here) / d)
                dirs.remove(d)  # not descended into: its sub-folders are its sub-runs
    return sorted(found)


def _alive(path: Path) -> bool:
    """A process still holds the run: the pid file exists only while the lock is held (a killed
    holder leaves it behind, so the pid must also be alive)."""
    try:
        pid = int((path / PID).read_text(encoding="utf-8").strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


# Lines counted per samples file: (inode, size, mtime, lines). The server polls every few seconds and
# runs only append, so a file that grew is counted from where the last count stopped, not re-read.
_COUNTED: dict[str, tuple[int, int, float, int]] = {}


def _lines(path: Path) -> int:
    st = path.stat()
    ino, size, mtime, n = _COUNTED.get(str(path), (st.st_ino, 0, 0.0, 0))
    if (ino, size, mtime) == (st.st_ino, st.st_size, st.st_mtime):
        return n
    if ino != st.st_ino or st.st_size < size:  # replaced or cut (--resume, --overwrite): count again
        size, n = 0, 0
    with open(path, "rb") as f:
        f.seek(size)
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
            size += len(block)
    _COUNTED[str(path)] = (st.st_ino, size, st.st_mtime, n)
    return n


def _sample_files(path: Path) -> list[Path]:
    subs = [path] + [p for p in sorted(path.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    return [d / "samples.jsonl" for d in subs if (d / "samples.jsonl").is_file()]


def _kind(cfg: dict[str, Any], summary: dict[str, Any]) -> str:
    kind = run_kind(cfg, summary)
    return kind if kind in (*KINDS, "run") else f"bench {kind}"


def _panel(c: dict[str, Any]) -> str:
    personas = c.get("personas") or []
    names = [p.get("name", "?") if isinstance(p, dict) else str(p) for p in personas]
    agents = c.get("agents") or len(names) or None
    parts = [
        str(c.get("strategy") or "?"),
        f"{agents} agent{'s' if agents != 1 else ''}" if agents else None,
        f"{c['turns']} turn{'s' if c['turns'] != 1 else ''}" if c.get("turns") else None,
        ", ".join(names) if names else None,
    ]
    return " · ".join(p for p in parts if p)


def _who(kind: str, cfg: dict[str, Any], summary: dict[str, Any]) -> str:
    judging = cfg.get("judging") or {}
    if kind == "evaluate":
        return "panel: " + _panel(cfg.get("config") or judging)
    if kind == "audit":
        return "panel: " + _panel(summary.get("judge") or cfg.get("config") or {})
    if kind == "calibrate":
        return "settings: " + ", ".join(summary.get("settings") or {})
    systems = judging.get("systems") or summary.get("systems") or list(summary.get("methods") or {})
    if isinstance(systems, dict):  # head-to-head: {"A": ..., "B": ...}
        systems = list(systems.values())
    if systems:
        return "systems: " + ", ".join(map(str, systems))
    if summary.get("settings"):
        return "panels: " + ", ".join(summary["settings"])
    return "–"


def _headline(kind: str, summary: dict[str, Any], rate: bool = True) -> str:
    hl = summary.get("headline")
    if isinstance(hl, str):  # calibrate: its conclusion
        return hl
    if isinstance(hl, list) and hl and isinstance(hl[0], dict):
        if "system" in hl[0]:
            metric = next((r["metric"] for r in hl if r.get("metric")), None)
            cells = [f"{r['system']} {num(r.get('value'), rate)}" for r in hl if r.get("value") is not None]
            return f"{metric}: {', '.join(cells)}" if metric and cells else "–"
        if "flip rate" in hl[0]:  # audit
            return "flip rate: " + ", ".join(f"{r.get('bias')} {r.get('flip rate')}" for r in hl)
    agreement = summary.get("agreement") or {}
    parts = []
    if isinstance((agreement.get("accuracy") or {}).get("value"), (int, float)):
        parts.append(f"accuracy {pct(agreement['accuracy']['value'])}")
    if isinstance((agreement.get("kappa") or {}).get("value"), (int, float)):
        parts.append(f"kappa {agreement['kappa']['value']:.3f}")
    if not parts and isinstance(summary.get("label_accuracy"), dict):
        parts.append(f"accuracy {pct(summary['label_accuracy'].get('accuracy'))}")
    if summary.get("mean_score") is not None:
        parts.append(f"mean score {num(summary['mean_score'])}")
    if not parts and summary.get("verdicts"):
        parts.append("verdicts " + num(summary["verdicts"]))
    return ", ".join(parts) or "–"


def _cost(summary: dict[str, Any]) -> str:
    hl = summary.get("headline")
    if isinstance(hl, list) and hl and all(isinstance(r, dict) and "cost_usd" in r for r in hl):
        costs = [r["cost_usd"] for r in hl]
        return money(None if any(c is None for c in costs) else sum(costs))
    usage = summary.get("usage")
    if isinstance(usage, dict) and "cost_usd" in usage:
        return money(usage["cost_usd"])
    return "–"


def _status(path: Path, summary: dict[str, Any] | None) -> tuple[str, str]:
    if _alive(path):
        return "running", "a chateval process is writing it"
    if not summary:
        return "incomplete", "no summary.json: the run stopped before its end (--resume continues it)"
    missing, expected = summary.get("n_missing") or 0, summary.get("n_expected")
    if summary.get("complete") is False or missing:
        of = f" of {expected}" if expected is not None else ""
        return "incomplete", f"{missing}{of} without a result (--resume continues it)"
    failed = summary.get("n_failed") or 0
    if failed:
        total = summary.get("n_units") or summary.get("n_samples")
        return "failed", f"{failed}{f' of {total}' if total else ''} failed"
    return "complete", ""


def run_entry(path: Path, root: Path) -> RunEntry:
    path, root = Path(path), Path(root)
    rel = path.relative_to(root).as_posix() if path != root else "."
    try:
        check_inside(path)  # a run file linked from elsewhere: not read, not counted
    except InputError as e:
        return RunEntry(rel=rel, path=str(path), kind="run", status="unreadable", detail=str(e))
    files = [path / f for f in ("config.json", "summary.json") if (path / f).is_file()]
    try:
        samples = _sample_files(path)
        mtime = max((f.stat().st_mtime for f in files + samples), default=path.stat().st_mtime)
        n_records = sum(_lines(f) for f in samples)
    except OSError as e:
        return RunEntry(rel=rel, path=str(path), kind="run", status="unreadable", detail=str(e.strerror or e))
    base = {
        "rel": rel,
        "path": str(path),
        "mtime": mtime,
        "n_records": n_records,
        "date": datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M"),
    }
    try:  # config and summary only: a run list of large runs stays quick
        run = read_run(path, samples=False, subruns=False) if is_run(path) else None
    except InputError as e:  # one bad run must not hide the others; the message names the file
        return RunEntry(**base, kind="run", status="unreadable", detail=str(e))
    cfg = run.config.data() if run and run.config else {}
    summary = run.summary.data() if run and run.summary else {}
    kind = _kind(cfg, summary)
    judging = cfg.get("judging") or {}
    data = summary.get("data") or judging.get("data") or summary.get("input") or cfg.get("input")
    model = summary.get("model") or cfg.get("model") or judging.get("answer_model") or judging.get("model")
    status, detail = _status(path, summary)
    return RunEntry(
        **base,
        kind=kind,
        data=str(data) if data else "–",
        model=str(model) if model else "–",
        who=_who(kind, cfg, summary),
        headline=_headline(kind, summary, type(run.summary).headline_rates if run and run.summary else True),
        cost=_cost(summary),
        status=status,
        detail=detail,
    )


def list_runs(root: Path) -> list[RunEntry]:
    """The run list of a folder, newest first."""
    return sorted((run_entry(p, root) for p in find_runs(root)), key=lambda e: -e.mtime)
