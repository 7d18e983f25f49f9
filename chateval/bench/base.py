"""Benchmarks: a registry, shared command-line options, and a crash-safe unit runner.

A benchmark is a set of independent *units* (a question answered by one system, a judged
pair, ...). Each finished unit is one line of samples.jsonl keyed by ``key``; --resume skips
finished units and redoes failed ones; a unit that raises is recorded with its error and the
rest go on.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, ClassVar

from ..models.budget import set_unit, unit_budget
from ..models.reach import endpoint_down
from ..runs.directory import RunDir
from ..runs.envelope import SampleRecord, SummaryRecord
from ..runs.files import write_json
from ..runs.progress import RunProgress
from ..util.errors import RunWriteError
from ..util.interrupts import interrupted
from .config import BenchConfig
from .executor import RayPool, UnitFn, current, error_text, run_guarded
from .registry import BENCHMARKS
from .summaries import whole


class Benchmark(ABC):
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    config_model: ClassVar[type[BenchConfig]] = BenchConfig  # its settings (and, generated, its CLI)
    # Its units may run on Ray workers (--executor ray): they are independent given the config,
    # or those that share state name their group to ``run_units``. Off unless a benchmark says
    # so: one whose units share state without naming it would give wrong results on Ray.
    distributable: ClassVar[bool] = False
    # What its runs write (and chateval.read_run reads them as): a unit's samples.jsonl line, the
    # run's summary.json and, for a benchmark with one sub-run per setting, each setting's summary.
    record_type: ClassVar[type[SampleRecord]] = SampleRecord
    summary_type: ClassVar[type[SummaryRecord]] = SummaryRecord
    setting_summary_type: ClassVar[type[SummaryRecord]] = SummaryRecord
    # What --fail-under can name; the first is the headline's main number (its rows' ``value``).
    gate_metrics: ClassVar[list[str]] = ["value"]

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows a run is read by (printed at the end, kept under ``headline`` in summary.json,
        shown by the viewer's run list): one per system or setting, with ``system``, ``n``,
        ``metric``, ``value``, ``recall_all@5``, ``failed`` and ``cost_usd``. By default one row
        of the run's unit counts; a benchmark names its main number by overriding this."""
        return [
            {
                "system": cls.name,
                "n": summary.get("n_units"),
                "metric": None,
                "value": None,
                "recall_all@5": None,
                "failed": summary.get("n_failed"),
                "cost_usd": None,
            }
        ]

    @classmethod
    def gate_measures(cls, summary: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, dict[Any, Any]]:
        """{metric: {system: value}} for --fail-under, from the headline ``rows`` (the systems under
        test): the main number; a benchmark with further gate metrics adds them."""
        return {cls.gate_metrics[0]: {r["system"]: r.get("value") for r in rows}}

    @abstractmethod
    async def run(self, config: Any, progress: RunProgress | None) -> dict[str, Any]:
        """Run with a validated ``config_model`` instance, write the run directory (config,
        samples, summary, report) and return the summary."""


def benchmark_of(config: BenchConfig) -> type[Benchmark] | None:
    """The benchmark whose settings model ``config`` is (None if several share it)."""
    owners = [cls for cls in BENCHMARKS.snapshot().values() if cls.config_model is type(config)]
    return owners[0] if len(owners) == 1 else None


def open_run(config: BenchConfig, run_config: dict[str, Any]) -> RunDir:
    """The run directory, locked; --overwrite replaces an earlier run only now that this one
    has been fully validated and can start. What it writes is checked against the record types
    of the benchmark the settings belong to."""
    cls = benchmark_of(config) or Benchmark
    return RunDir(
        config.out,
        run_config,
        resume=config.resume,
        overwrite=config.overwrite,
        key="key",
        record_type=cls.record_type,
        summary_type=cls.summary_type,
    )


# Set by bench.api.arun: a Ctrl-C / SIGTERM / SIGHUP ends run_units with the records on disk, so
# the benchmark writes its summary before arun stops as cancelled. Other callers (audit,
# calibrate) write theirs in a finally and get the cancellation as it comes.
SUMMARIZE_ON_STOP: ContextVar[bool] = ContextVar("chateval_summarize_on_stop", default=False)


async def run_units(
    units: Iterable[tuple[str, Any]],
    fn: UnitFn,
    run: RunDir,
    *,
    workers: int = 4,
    progress: RunProgress | None = None,
    group: Callable[[Any], Hashable] | None = None,
    keep: Callable[[dict[str, Any]], Any] | None = whole,
) -> list[Any]:
    """Run ``fn`` on each (key, unit) not already done; append each result as it finishes (a
    record's ``files``, {run-relative path: JSON}, are written into the run directory here, so
    units never write there themselves). A result goes to disk and is not kept: units start as
    workers free up, so a run's memory does not grow with its length.
    Returns ``keep(record)`` of each record of the run (old and new) whose key was asked for,
    read back from samples.jsonl a line at a time: the whole record by default; a benchmark whose
    summary reads a few fields keeps only those (:mod:`chateval.bench.summaries`); ``keep=None``
    returns nothing (the caller reads the run itself). Units run here or on Ray workers
    (``executor.current()``); either way only this process writes the run.
    ``group(unit)`` names the state a unit shares with others (its conversation and system):
    on Ray, a group's units all run on one worker."""
    units = list(units)
    run.expect(k for k, _ in units)  # the run's summary accounts for each of them
    todo = [(k, u) for k, u in units if k not in run.done]
    execution = current()
    pool = None
    if execution.executor == "ray" and todo:
        pool = RayPool(fn, execution, per_actor=max(1, workers), groups=[group(u) for _, u in todo] if group else None)
        await pool.start()
    if progress:
        progress.start(len(units), len(units) - len(todo))

    async def call(unit: Any) -> dict[str, Any]:
        if pool is None:
            return await run_guarded(fn, unit)
        return await pool.run(unit, group(unit) if group else None)

    async def one(key: str, unit: Any) -> None:
        if endpoint_down():  # a model endpoint cannot be reached: the run is stopping
            return
        # --max-cost: the unit's estimated cost is reserved first; none starts that would
        # pass the cap (running ones finish)
        async with unit_budget() as started:
            if not started:
                return
            set_unit(key)  # this task's model calls belong to this unit (dry-run prefix sharing)
            t0 = time.perf_counter()
            try:
                record = await call(unit)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a lost Ray worker: recorded, redone by --resume
                record = {"status": "failed", "error": error_text(exc)}
        if record.get("status") != "ok" and endpoint_down():
            return  # failed because the run is stopping: not recorded, so --resume redoes it
        record["key"] = key
        record.setdefault("wall_s", time.perf_counter() - t0)
        for rel, data in (record.pop("files", None) or {}).items():  # first: a record on disk has its files
            (run.path / rel).parent.mkdir(parents=True, exist_ok=True)
            write_json(run.path / rel, data)
        run.append(record)  # on disk as it finishes; not kept here
        if progress:
            progress.advance(record["status"] == "ok", key, record.get("error") or "")

    async def worker(queue: Iterator[tuple[str, Any]]) -> None:
        """Takes the units of ``queue`` in order as it frees up (its fellow workers share it)."""
        me = asyncio.current_task()
        for key, unit in queue:
            # A task of its own per unit, as each had before: what a unit sets in its context
            # (its unit name, its cost account) never reaches the next one.
            await asyncio.ensure_future(one(key, unit))
            if me is not None and me.cancelling():
                # Stopped while the unit ran, and its task finished all the same (a unit whose
                # last step was blocking code): start no other.
                raise asyncio.CancelledError

    if pool is None:
        queue = iter(todo)
        tasks = [asyncio.ensure_future(worker(queue)) for _ in range(max(1, min(workers, len(todo))))]
    else:
        # On Ray too a unit starts (and goes to the object store) only as a worker here frees
        # up: each actor's groups form a lane of their own, with as many workers as the actor
        # has slots (a busy actor's lane never holds up another's), and the independent units
        # one lane worked by as many workers as all actors' slots. So the driver and the object
        # store hold O(actors x workers) units at a time, not O(run).
        lanes = pool.lanes(todo, group)
        tasks = [asyncio.ensure_future(worker(lane)) for lane, n in lanes for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
        if pool is not None:
            await pool.collect(execution.meters)
    except RunWriteError:
        # The run cannot be written: stop the other units (their results could not be kept) and
        # return what is on disk, so the benchmark writes a summary that counts what is missing;
        # closing the run then raises the error (RunDir.__exit__).
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    except asyncio.CancelledError:
        # A real Ctrl-C, SIGTERM or SIGHUP: stop the units and return what is on disk, so the
        # benchmark writes its summary (complete: false); bench.api.arun then stops as cancelled.
        if not (interrupted() and SUMMARIZE_ON_STOP.get()):
            raise
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        if progress:
            progress.stop()
        if pool is not None:
            pool.close()
    if keep is None:
        return []
    wanted = {k for k, _ in units}
    return [keep(r) for r in run.iter_records() if r.get("key") in wanted]
