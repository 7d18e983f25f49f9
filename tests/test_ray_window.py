"""--executor ray submits units in a bounded window (issue 38 item 3): the driver starts a unit,
and puts it in Ray's object store, only as one of its workers frees up, so it holds
O(actors x workers) units at a time however long the run. Here the Ray pool is a spy with the
real pool's lanes (no Ray needed): it counts the units in flight and the driver's live tasks."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

from chateval.bench import base
from chateval.bench.executor import Execution, RayPool, reset, run_guarded, spread, use
from chateval.runs.directory import RunDir

ACTORS, PER_ACTOR = 3, 2
SLOTS = ACTORS * PER_ACTOR


class SpyPool:
    """RayPool's lanes over fake actors; ``run`` counts what is in flight, per actor too."""

    lanes = RayPool.lanes
    made: list[SpyPool] = []

    def __init__(self, fn: Any, execution: Execution, per_actor: int, groups: list[Any] | None = None) -> None:
        self.fn, self.per_actor, self.actors = fn, per_actor, list(range(ACTORS))
        self.actor_of = spread(Counter(groups), ACTORS) if groups else {}
        self.in_flight, self.peak, self.peak_tasks = 0, 0, 0
        self.on = Counter[int]()  # grouped units in flight per actor
        self.busy_actors_peak = 0
        self.ran = Counter[str]()
        SpyPool.made.append(self)

    async def start(self) -> None:
        pass

    async def run(self, unit: dict[str, Any], group: Any = None) -> dict[str, Any]:
        actor = self.actor_of[group] if group is not None else None
        self.in_flight += 1
        if actor is not None:
            self.on[actor] += 1
            assert self.on[actor] <= PER_ACTOR  # an actor's lane never has more than its slots
        self.peak = max(self.peak, self.in_flight)
        self.peak_tasks = max(self.peak_tasks, len(asyncio.all_tasks()))
        self.busy_actors_peak = max(self.busy_actors_peak, sum(1 for n in self.on.values() if n))
        try:
            await asyncio.sleep(random.random() / 500)
            return await run_guarded(self.fn, unit)
        finally:
            self.in_flight -= 1
            if actor is not None:
                self.on[actor] -= 1

    async def collect(self, meters: Any) -> None:
        pass

    def close(self) -> None:
        pass


async def unit_fn(unit: dict[str, Any]) -> dict[str, Any]:
    SpyPool.made[-1].ran[unit["id"]] += 1
    if unit["id"].endswith("7"):
        raise ValueError("boom")  # a failing unit is recorded and the run goes on
    return {"id": unit["id"]}


def test_ray_units_run_in_a_bounded_window_with_their_groups_on_their_actors(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "RayPool", SpyPool)
    # 300 units, in order: 6 conversations of 25 grouped questions each, then 150 independent ones.
    units = [(f"g{c}-{q}", {"id": f"g{c}-{q}", "group": f"conv{c}"}) for c in range(6) for q in range(25)]
    units += [(f"u{i}", {"id": f"u{i}", "group": None}) for i in range(150)]
    token = use(Execution(executor="ray"))
    try:
        with RunDir(tmp_path / "run", {"config_hash": "h"}, key="key") as run:
            got = asyncio.run(
                base.run_units(units, unit_fn, run, workers=PER_ACTOR, group=lambda u: u["group"], keep=lambda r: r)
            )
    finally:
        reset(token)
    pool = SpyPool.made[-1]
    assert sorted(pool.ran.values()) == [1] * len(units)  # every unit ran exactly once
    assert sorted(r["key"] for r in got) == sorted(k for k, _ in units)
    assert sum(r["status"] == "failed" for r in got) == sum(k.endswith("7") for k, _ in units)
    # The window: each actor's lane plus the independent lane, never the run.
    assert pool.peak <= 2 * SLOTS
    # The driver's tasks: a worker per slot of each lane and the unit task each runs, plus the run.
    assert pool.peak_tasks <= 2 * (2 * SLOTS) + 1
    # Group-contiguous input does not serialise on one actor: several actors' lanes run at once.
    assert pool.busy_actors_peak >= 2
