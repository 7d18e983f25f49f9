"""Where a benchmark's units run: in this process (asyncio, ``--executor local``) or as tasks of
Ray actors (``--executor ray``), possibly spread over a cluster.

One place for every benchmark: ``run_units`` (base.py) asks ``current()`` which executor the
run uses; ``api.arun`` sets it from the config. With Ray, the unit function — a closure over the
benchmark's settings and its ``MemoryBench`` — is pickled once and sent to each actor; the
MemoryBench, model layers and judges pickle as their configs and are built again on the
worker (its own model layers, embedder, caches and Qdrant clients). Each actor runs up to
``--workers`` units at once and returns each unit's record; only the driver writes
samples.jsonl and summary.json, so ``--resume``, the run lock and the reports are those of a
local run.

Units that share state — the questions of one ingested conversation (head-to-head, TeaFarm,
msc-response) — name a *group*: every unit of a group runs on the same actor, whose copy of
the unit function holds the group's memory system from its first unit to its last. Groups are
spread over the actors before the run starts (largest first, each to the least loaded actor);
independent units take whichever actor is free. The driver starts a unit only as one of its
workers frees up (``RayPool.lanes``: a lane per actor for its groups, one for the independent
units), so it holds O(actors x workers) units at a time, not the run.

Ray is optional (``pip install 'chateval[ray]'``) and imported only when a Ray run starts."""

from __future__ import annotations

import asyncio
import os
import re
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..memory.embeddings import process_work
from ..models import UsageTotals
from ..util.errors import ChatevalError, ConfigError
from ..util.interrupts import contain_exits
from ..util.plugins import load_plugins

UnitFn = Callable[[Any], Awaitable[dict[str, Any]]]


@dataclass
class WorkerMeters:
    """What a run's Ray workers did that only they can count (their embedders' work), summed
    over the actors as each pool closes; the driver adds it to its own in the summary."""

    embedded: int = 0
    embed_s: float = 0.0
    embedding_usage: UsageTotals | None = None

    def add(self, work: dict[str, Any]) -> None:
        self.embedded += int(work["computed"])
        self.embed_s += float(work["embed_s"])
        if work.get("usage") is not None:
            self.embedding_usage = self.embedding_usage or UsageTotals()
            self.embedding_usage.merge(UsageTotals.model_validate(work["usage"]))


@dataclass(frozen=True)
class Execution:
    executor: str = "local"  # local | ray
    ray_address: str | None = None
    ray_workers: int | None = None  # actors; default: the cluster's CPUs
    ray_cache_dir: str | None = None
    plugins: tuple[str, ...] = ()
    # filled by the run's Ray pools (a local run's stays empty)
    meters: WorkerMeters = field(default_factory=WorkerMeters, compare=False)


_CURRENT: ContextVar[Execution] = ContextVar("chateval_execution", default=Execution())  # noqa: B039  (frozen: never mutated)


def current() -> Execution:
    return _CURRENT.get()


def use(execution: Execution) -> Any:
    """Make ``execution`` the executor of the runs started in this context; returns the token
    for ``reset``."""
    return _CURRENT.set(execution)


def reset(token: Any) -> None:
    _CURRENT.reset(token)


def error_text(exc: BaseException) -> str:
    if isinstance(exc, ChatevalError):
        return str(exc)
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return last[:500]


async def run_guarded(fn: UnitFn, unit: Any) -> dict[str, Any]:
    """One unit's record; an exception becomes a failed record (the run goes on), and so does
    user code's sys.exit() or KeyboardInterrupt (a real Ctrl-C still stops the run)."""
    try:
        with contain_exits():
            record = await fn(unit)
        record.setdefault("status", "ok")
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        record = {"status": "failed", "error": error_text(exc)}
    return record


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray: Ray is not installed (pip install 'chateval[ray]')") from None
    return ray


def cluster_cpus() -> int:
    return max(1, int(import_ray().cluster_resources().get("CPU", 1)))


_ADDRESS = re.compile(r"(ray://)?[^\s:/]+:\d{1,5}")


def check(execution: Execution, *, local: bool) -> None:
    """What can be checked before Ray starts (starting a local instance takes many seconds):
    the address's form, --ray-cache-dir, and, for a local instance (``local``), --ray-workers
    against this machine's CPUs (Ray never counts more; a cgroup limit it sees is checked after
    it starts)."""
    address = execution.ray_address
    if address and address not in ("auto", "local") and not _ADDRESS.fullmatch(address):
        raise ConfigError(f"--ray-address '{address}': expected auto, local, HOST:PORT or ray://HOST:PORT")
    cache = execution.ray_cache_dir
    if cache and os.path.exists(cache) and not os.path.isdir(cache):
        raise ConfigError(f"--ray-cache-dir {cache}: not a directory")
    cpus = os.cpu_count() or 1
    if local and execution.ray_workers and execution.ray_workers > cpus:
        raise ConfigError(f"--ray-workers {execution.ray_workers}: a local Ray instance here has {cpus} CPU(s)")


def connect(execution: Execution) -> bool:
    """Join the cluster at ``ray_address`` (or start a local instance) unless this process is
    connected already, and check --ray-workers against it; True when this call started Ray
    (the caller shuts it down). The options are checked first (``check``), before Ray starts."""
    ray = import_ray()
    started = not ray.is_initialized()
    check(execution, local=started and execution.ray_address in (None, "local"))
    if started:
        ray.init(address=execution.ray_address, include_dashboard=False, log_to_driver=False)
    cpus = cluster_cpus()
    if execution.ray_workers and execution.ray_workers > cpus:  # each actor takes a CPU: more never start
        if started:
            ray.shutdown()
        raise ConfigError(f"--ray-workers {execution.ray_workers}: the Ray cluster has {cpus} CPU(s)")
    return started


class _UnitWorker:
    """A Ray actor: rebuilds the unit function once (plugins first, so their classes resolve),
    then runs units as they come, up to its max_concurrency at once."""

    def __init__(self, fn_bytes: bytes, plugins: tuple[str, ...], cache_dir: str | None) -> None:
        from ray import cloudpickle  # Ray's own copy: no extra dependency

        if cache_dir:  # completions in DIR/completions, embeddings in DIR/embeddings
            os.environ["CHATEVAL_CACHE_DIR"] = os.path.join(cache_dir, "completions")
        load_plugins(plugins)
        # Never data from disk or a download: the bytes are the unit function this run's driver
        # pickled a moment ago and handed to Ray (which pickles every task's arguments itself).
        self.fn: UnitFn = cloudpickle.loads(fn_bytes)

    async def run(self, unit: Any) -> dict[str, Any]:
        return await run_guarded(self.fn, unit)

    def pid(self) -> int:
        return os.getpid()

    def work(self) -> dict[str, Any]:
        """This worker's embedding work so far (see ``WorkerMeters``)."""
        return process_work()


def spread(sizes: dict[Hashable, int], bins: int) -> dict[Hashable, int]:
    """Each group's bin: largest group first, each to the bin with the fewest units so far
    (ties to the lowest bin), so the bins' unit counts differ by at most the largest group."""
    load = [0] * bins
    out: dict[Hashable, int] = {}
    for g, n in sorted(sizes.items(), key=lambda kv: -kv[1]):
        b = min(range(bins), key=load.__getitem__)
        out[g] = b
        load[b] += n
    return out


class RayPool:
    """Actors on the connected Ray cluster (see ``connect``), ``per_actor`` unit slots each.
    With ``groups`` (each pending unit's group, see the module's docstring) the units of a
    group all run on one actor."""

    def __init__(self, fn: UnitFn, execution: Execution, per_actor: int, groups: list[Hashable] | None = None) -> None:
        from ray import cloudpickle  # Ray's own copy: no extra dependency

        ray = self.ray = import_ray()
        self.per_actor = per_actor
        n = execution.ray_workers or cluster_cpus()
        try:
            fn_bytes = cloudpickle.dumps(fn)
        except Exception as e:
            raise ConfigError(
                f"--executor ray: this run's units cannot be sent to Ray workers ({error_text(e)})"
            ) from None
        actor = ray.remote(num_cpus=1, max_concurrency=per_actor)(_UnitWorker)
        blob = ray.put(fn_bytes)
        self.actors = [actor.remote(blob, execution.plugins, execution.ray_cache_dir) for _ in range(n)]
        self.slots: asyncio.Queue[Any] = asyncio.Queue()
        for _ in range(per_actor):
            for a in self.actors:
                self.slots.put_nowait(a)
        self.actor_of: dict[Hashable, int] = spread(Counter(groups), n) if groups else {}
        # Grouped units wait for a slot of their own actor, not for any free one.
        self.own_slots = [asyncio.Semaphore(per_actor) for _ in self.actors]

    async def start(self) -> None:
        """Wait until every actor has rebuilt the unit function: a worker that cannot (a plugin
        missing on its node, say) stops the run before any unit, in one line."""
        try:
            await asyncio.gather(*(a.pid.remote() for a in self.actors))
        except Exception as e:
            self.close()
            first = next((ln for ln in str(e).splitlines() if "Error" in ln), str(e).splitlines()[0] if str(e) else "")
            raise ChatevalError(f"--executor ray: a worker failed to start: {first.strip()[:300]}") from None

    def lanes(
        self, todo: list[tuple[str, Any]], group: Callable[[Any], Hashable] | None
    ) -> list[tuple[Iterator[tuple[str, Any]], int]]:
        """The (key, unit)s of ``todo`` split into lanes, each with how many workers take from
        it (in order): one per actor for its groups' units (its slots), and one for the
        independent units (every actor's slots: each takes whichever actor is free)."""
        per_actor = self.per_actor
        own: list[list[tuple[str, Any]]] = [[] for _ in self.actors]
        free: list[tuple[str, Any]] = []
        for key, unit in todo:
            g = group(unit) if group else None
            (free if g is None else own[self.actor_of[g]]).append((key, unit))
        out = [(iter(units), min(per_actor, len(units))) for units in own if units]
        if free:
            out.append((iter(free), min(per_actor * len(self.actors), len(free))))
        return out

    async def run(self, unit: Any, group: Hashable | None = None) -> dict[str, Any]:
        if group is not None:
            i = self.actor_of[group]
            async with self.own_slots[i]:
                return await self.actors[i].run.remote(unit)
        actor = await self.slots.get()
        try:
            return await actor.run.remote(unit)
        finally:
            self.slots.put_nowait(actor)

    async def collect(self, meters: WorkerMeters) -> None:
        """Add the actors' work to ``meters`` (before ``close``); a lost worker's share is lost."""
        for work in await asyncio.gather(*(a.work.remote() for a in self.actors), return_exceptions=True):
            if isinstance(work, dict):
                meters.add(work)

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
