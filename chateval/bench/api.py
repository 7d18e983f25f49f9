"""The benchmarks' Python API: ``config_model``, ``run`` and ``arun``. The CLI calls the same
functions, so a run started from Python writes exactly the run directory the CLI writes. Also
``--dry-run`` (``estimate_bench``, ``simulate``): the same run, simulated (see below)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from pydantic import BaseModel

from ..datasets.locate import find_data
from ..evaluation.config import LayerSettings
from ..memory.vector import settle
from ..models import UsageTotals
from ..models.dryrun import DryRunEstimate, adaptive_notes, dry_run
from ..models.reach import watch_endpoints
from ..runs.directory import write_summary_file
from ..runs.folder import LOCK, PID
from ..runs.progress import RunProgress
from ..util.errors import ConfigError
from ..util.interrupts import interrupted, watch_sigint
from ..util.plugins import load_plugins
from .base import SUMMARIZE_ON_STOP, Benchmark
from .config import BenchConfig, JudgeMetaConfig, MemoryBenchConfig
from .executor import Execution, connect, import_ray, reset, use
from .registry import BENCHMARKS


def config_model(name: str) -> type[BenchConfig]:
    """The pydantic settings model of a registered benchmark (fields, defaults, help)."""
    return BENCHMARKS.get(name).config_model


def make_config(name: str, config: BaseModel | dict[str, Any]) -> BenchConfig:
    """Validate settings for benchmark ``name`` (a dict, or a model instance of its config)."""
    model = config_model(name)
    if isinstance(config, model):
        return config
    if isinstance(config, BaseModel):
        config = config.model_dump(exclude_unset=True)
    if not isinstance(config, dict):
        raise ConfigError(f"config for '{name}': expected a dict or a {model.__name__}, got {type(config).__name__}")
    return model.merged(config)


def execution_of(cfg: BenchConfig, bench: Benchmark) -> Execution:
    """The run's executor, checked before any work: Ray only for benchmarks that declare their
    units safe to spread, and only when Ray is installed."""
    if cfg.executor == "local":
        if cfg.ray_address or cfg.ray_workers or cfg.ray_cache_dir:
            raise ConfigError("--ray-address, --ray-workers and --ray-cache-dir need --executor ray")
        return Execution()
    if not bench.distributable:
        able = ", ".join(n for n in BENCHMARKS.names() if BENCHMARKS.get(n).distributable)
        raise ConfigError(
            f"--executor ray: benchmark '{bench.name}' does not declare its units safe to spread "
            f"(distributable = True) and runs locally only; Ray runs: {able}"
        )
    if cfg.ray_cache_dir and isinstance(cfg, (LayerSettings, JudgeMetaConfig)) and cfg.cache_dir:
        raise ConfigError(
            "--ray-cache-dir and --cache-dir: give one (with --executor ray, --cache-dir is read on each worker's node)"
        )
    import_ray()
    return Execution("ray", cfg.ray_address, cfg.ray_workers, cfg.ray_cache_dir, tuple(cfg.plugins))


async def arun(
    name: str, config: BaseModel | dict[str, Any], *, progress: bool | RunProgress = False
) -> dict[str, Any]:
    """Run benchmark ``name``: writes config.json, samples.jsonl, summary.json (with a ``headline``)
    and report.md to ``config.out`` and returns the summary."""
    if isinstance(config, dict):
        load_plugins(config.get("plugins") or [])  # before any system name is looked up
    cfg = make_config(name, config)
    load_plugins(cfg.plugins)
    data, field = getattr(cfg, "data", None), type(cfg).model_fields.get("data")
    if data and field is not None and field.is_required():  # one data file: a path, a catalog name or file name
        cfg = cfg.model_copy(update={"data": str(find_data(data, name))})
    bench = BENCHMARKS.get(name)()
    if progress is True:
        from rich.console import Console

        progress = RunProgress(UsageTotals(), Console(stderr=True), label="units")
    execution = execution_of(cfg, bench)
    started = execution.executor == "ray" and connect(execution)
    token = use(execution)
    stop_token = SUMMARIZE_ON_STOP.set(True)
    try:
        # an unreachable endpoint stops the run (see run_units); a real Ctrl-C stops it too, while user
        # code's own KeyboardInterrupt fails only its unit
        with watch_endpoints() as down, watch_sigint():
            summary = await bench.run(cfg, progress or None)
    finally:
        reset(token)
        SUMMARIZE_ON_STOP.reset(stop_token)
        if started:
            import_ray().shutdown()
        await settle()  # Qdrant collections whose deletion a synchronous close() started
    summary["headline"] = bench.headline(summary)
    if down:  # finished units are in the run and its summary; the rest were never started
        summary |= {"complete": False, "stopped": str(down[0])}
    out = Path(cfg.out)
    if (out / "summary.json").is_file():
        write_summary_file(out / "summary.json", summary, bench.summary_type)
    if down:
        raise down[0]
    if interrupted():  # the units stopped for a Ctrl-C / SIGTERM / SIGHUP (run_units): the summary is written
        raise asyncio.CancelledError
    return summary


def run(name: str, config: BaseModel | dict[str, Any], *, progress: bool = False) -> dict[str, Any]:
    """``arun`` for synchronous code. Inside a running event loop (a notebook) the run happens on
    a worker thread with its own loop, so it works there too (``await arun(...)`` avoids the thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun(name, config, progress=progress))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chateval-bench") as pool:
        return pool.submit(asyncio.run, arun(name, config, progress=progress)).result()


# --- --dry-run ------------------------------------------------------------------------------------
#
# ``--dry-run`` of a benchmark (and of anything run through the unit runner): the run is
# simulated in a scratch directory with every model call answered locally and metered
# (``chateval.models.dryrun``), so the estimate comes from the prompts the real pipeline would
# build — the systems' contexts, the judges' templates, the panel's turns — and the user's run
# directory, caches and stores are never touched.

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

    def units(summary: dict[str, Any]) -> tuple[int, int]:
        return int(summary.get("n_expected") or summary.get("n_units") or 0), int(summary.get("n_failed") or 0)

    return await simulate(cfg, lambda sim: arun(name, sim), units)


__all__ = ["estimate_bench", "sandboxed", "simulate"]
