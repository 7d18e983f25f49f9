"""``--dry-run`` of a benchmark (and of anything run through the unit runner): the run is
simulated in a scratch directory with every model call answered locally and metered
(``chateval.models.dryrun``), so the estimate comes from the prompts the real pipeline would
build — the systems' contexts, the judges' templates, the panel's turns — and the user's run
directory, caches and stores are never touched."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from pydantic import BaseModel

from ..models.dryrun import DryRunEstimate, adaptive_notes, dry_run
from ..runs.folder import LOCK, PID
from ..util.errors import ConfigError
from .config import JudgeMetaConfig, MemoryBenchConfig

C = TypeVar("C", bound=BaseModel)


class RunSettings(Protocol):
    """The fields a dry run reads of every command that has one (bench's and calibrate's configs)."""

    out: str
    resume: bool


EMBEDDER_NOTE = (
    "memory systems embed with the hash embedder in a dry run (no embedding model is loaded or "
    "called): their retrieved contexts, and so the answer prompts, differ somewhat from a real run's; "
    "embedding calls are not counted"
)


def sandboxed(cfg: C, scratch: Path) -> tuple[C, list[str]]:
    """A copy of ``cfg`` that writes only under ``scratch`` and calls nothing outside the process:
    a fresh run (or, with --resume, a copy of the run to resume), local units, no completion cache, no preset file,
    the hash embedder and embedded stores. Returns the copy and notes on what was changed."""
    fields = type(cfg).model_fields
    systems = cfg.systems if isinstance(cfg, MemoryBenchConfig) else []
    if any(isinstance(s, str) and s.strip().lower() == "http" for s in systems):
        # Its agent answers with models of its own that no dry run here can see or hold back.
        raise ConfigError(
            "--dry-run cannot simulate the 'http' system: its agent would be called, and its own "
            "model calls are outside chateval's metering; leave it out of --systems for the estimate"
        )
    run = scratch / "run"
    update: dict[str, Any] = {"out": str(run)}
    notes: list[str] = []
    settings = cast(RunSettings, cfg)  # every command with a dry run (bench, calibrate) has --out and --resume
    out = Path(settings.out)
    resume = settings.resume and out.is_dir()
    if resume:
        # What is left to do: a copy of the run (read, never locked or written) is resumed.
        shutil.copytree(out, run, ignore=shutil.ignore_patterns(LOCK, PID, "*.png", "*.html", "*.md"))
        notes.append(f"--resume: only what {out} still lacks is counted")
    for name, value in (
        ("resume", resume),
        ("overwrite", False),
        ("executor", "local"),
        ("ray_address", None),
        ("ray_workers", None),
        ("ray_cache_dir", None),
        ("cache", False),
        ("write_preset", None),
        ("qdrant_url", None),
    ):
        if name in fields:
            update[name] = value
    if "embedder" in fields:
        update["embedder"] = "hash"
        notes.append(EMBEDDER_NOTE)
    if isinstance(cfg, JudgeMetaConfig):  # the panel's --escalate / --stop-early (memory benchmarks have neither)
        notes += adaptive_notes(cfg.escalate, cfg.stop_early)
    return cfg.model_copy(update=update), notes


async def simulate(
    cfg: C, run: Callable[[C], Awaitable[Any]], units: Callable[[Any], tuple[int, int]] | None = None
) -> DryRunEstimate:
    """Run ``run(sandboxed cfg)`` as a dry run; ``units(result)`` gives (units, failed units)."""
    with tempfile.TemporaryDirectory(prefix="chateval-dry-run-") as tmp, dry_run() as meter:
        sim, notes = sandboxed(cfg, Path(tmp))
        result = await run(sim)
    n, failed = units(result) if units else (meter.units, 0)
    return meter.estimate(units=n, failed_units=failed, notes=notes)


async def estimate_bench(name: str, cfg: BaseModel) -> DryRunEstimate:
    """What ``chateval bench NAME --dry-run`` prints."""
    from .api import arun

    def units(summary: dict[str, Any]) -> tuple[int, int]:
        return int(summary.get("n_expected") or summary.get("n_units") or 0), int(summary.get("n_failed") or 0)

    return await simulate(cfg, lambda sim: arun(name, sim), units)


__all__ = ["estimate_bench", "sandboxed", "simulate"]
