"""The benchmarks' Python API: ``config_model``, ``run`` and ``arun``. The CLI calls the same
functions, so a run started from Python writes exactly the run directory the CLI writes."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..evaluation.config import LayerSettings
from ..memory.vector import settle
from ..models import UsageTotals
from ..models.reach import watch_endpoints
from ..runs.directory import write_summary_file
from ..runs.progress import RunProgress
from ..util.errors import ConfigError
from ..util.interrupts import interrupted, watch_sigint
from ..util.plugins import load_plugins
from .base import SUMMARIZE_ON_STOP, Benchmark
from .config import BenchConfig, JudgeMetaConfig
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
    if cfg.executor == "ray" and summary.get("embedding_usage") is not None:
        # Remote embedding calls happen on the workers, whose logs stay there: not a number to report.
        summary["embedding_usage"] = None
        summary.setdefault("notes", []).append("embedding_usage is not collected from Ray workers")
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
