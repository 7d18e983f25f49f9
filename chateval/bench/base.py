"""Benchmarks: a registry, shared command-line options, and a crash-safe unit runner.

A benchmark is a set of independent *units* (a question answered by one system, a judged
pair, ...). Each finished unit is one line of samples.jsonl keyed by ``key``; --resume skips
finished units and redoes failed ones; a unit that raises is recorded with its error and the
rest go on.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import traceback
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar, Iterable

from ..errors import ChatevalError
from ..progress import RunProgress
from ..registry import Registry
from ..runs import RunDir, clear_run

UnitFn = Callable[[Any], Awaitable[dict[str, Any]]]


class Benchmark(ABC):
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @classmethod
    @abstractmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None: ...

    @abstractmethod
    async def run(self, args: argparse.Namespace, progress: RunProgress | None) -> dict[str, Any]:
        """Run, write the run directory (config, samples, summary, report) and return the summary."""


BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark")


def benchmark(name: str) -> Callable[[type[Benchmark]], type[Benchmark]]:
    def deco(cls: type[Benchmark]) -> type[Benchmark]:
        cls.name = name
        return BENCHMARKS.register(name)(cls)

    return deco


def add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run")
    g.add_argument("--out", required=True, help="run directory (config.json, samples.jsonl, summary.json, report.md)")
    g.add_argument("--resume", action="store_true", help="skip finished units, redo failed ones")
    g.add_argument("--overwrite", action="store_true", help="replace an earlier run in --out")
    g.add_argument("--limit", type=int, help="only the first N items of the dataset")
    g.add_argument("--workers", type=int, default=4, help="units run concurrently (default 4)")


def open_run(args: argparse.Namespace, config: dict[str, Any]) -> RunDir:
    if getattr(args, "overwrite", False) and not args.resume:
        clear_run(args.out)
        for extra in ("report.md",):
            (Path(args.out) / extra).unlink(missing_ok=True)
    return RunDir(args.out, config, resume=args.resume, key="key")


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ChatevalError):
        return str(exc)
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return last[:500]


async def run_units(
    units: Iterable[tuple[str, Any]],
    fn: UnitFn,
    run: RunDir,
    *,
    workers: int = 4,
    progress: RunProgress | None = None,
) -> list[dict[str, Any]]:
    """Run ``fn`` on each (key, unit) not already done; append each result as it finishes.
    Returns all records of the run (old and new) whose keys were asked for."""
    units = list(units)
    todo = [(k, u) for k, u in units if k not in run.done]
    if progress:
        progress.start(len(units), len(units) - len(todo))
    limit = asyncio.Semaphore(max(1, workers))

    async def one(key: str, unit: Any) -> None:
        async with limit:
            t0 = time.perf_counter()
            try:
                record = await fn(unit)
                record.setdefault("status", "ok")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # recorded, and the run goes on
                record = {"status": "failed", "error": _error_text(exc)}
            record["key"] = key
            record.setdefault("wall_s", time.perf_counter() - t0)
            run.append(record)
            if progress:
                progress.advance(record["status"] == "ok", key, record.get("error") or "")

    try:
        await asyncio.gather(*(one(k, u) for k, u in todo))
    finally:
        if progress:
            progress.stop()
    wanted = {k for k, _ in units}
    return [r for r in run.records() if r.get("key") in wanted]
