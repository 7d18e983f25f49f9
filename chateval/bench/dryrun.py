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
    run = scratch / "run"
    update: dict[str, Any] = {"out": str(run)}
    notes: list[str] = []
    systems = cfg.systems if isinstance(cfg, MemoryBenchConfig) else []
    if isinstance(cfg, MemoryBenchConfig) and any(_is_http(s) for s in systems):
        # Its agent answers with models of its own that no dry run here can see or hold back: the
        # rest of the run is estimated without it, and the estimate says so.
        rest = [s for s in systems if not _is_http(s)]
        if not rest:
            raise ConfigError(
                "--dry-run cannot estimate the 'http' system: its agent would be called, and its own "
                "model calls are outside chateval's metering; add the other systems to estimate them"
            )
        update["systems"] = rest
        update["settings"] = {k: v for k, v in cfg.settings.items() if k != "http"}
        notes.append(
            "not estimated: the 'http' system (its agent would be called, and its own model calls are "
            "outside chateval's metering); the estimate covers the other systems only"
        )
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


def _is_http(system: Any) -> bool:
    return isinstance(system, str) and system.strip().lower() == "http"


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
