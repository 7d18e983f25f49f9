"""--executor ray: a benchmark's units run on the actors of a local Ray instance
(ray.init(num_cpus=2)); the driver alone writes the run, so the summary equals a local run's,
--resume continues a run whichever executor started it, and a plugin system runs on the workers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chateval[ray]')")

from chateval.bench import run  # noqa: E402
from chateval.cli import main  # noqa: E402

pytestmark = pytest.mark.slow  # a local Ray instance: seconds per test


FIXTURES = Path(__file__).parent / "fixtures"
# No completion cache: which calls hit a cache depends on which run came first, not on the executor.
LME = {"data": str(FIXTURES / "lme_tiny.json"), "embedder": "hash", "answer_model": "offline", "cache": False}
PID_PLUGIN = '''
import os
from chateval.memory import Response, memory_system
from chateval.memory.systems.full_context import FullContext


@memory_system("pid_echo")
class PidEcho(FullContext):
    """Answers with the id of the process it runs in."""
    async def respond(self, query, now):
        return Response(answer=f"pid {os.getpid()}", context="", context_tokens=0)
'''


STATE_PLUGIN = '''
import os
from chateval.memory import Response, memory_system
from chateval.memory.systems.full_context import FullContext


@memory_system("pid_state")
class PidState(FullContext):
    """Answers with its process and its own identity: which worker, which ingested copy."""
    async def respond(self, query, now):
        return Response(answer=f"{os.getpid()}:{id(self)}", context="", context_tokens=0)
'''


def without_timing(x):
    """Records and summaries without wall-clock fields (``*_s``, ``latency``): they differ between any two runs;
    nor ``embeddings``, whose ``pre_embed`` says which executor ran (its counts are compared below)."""
    if isinstance(x, dict):
        return {k: without_timing(v) for k, v in x.items() if not (k.endswith("_s") or k in ("latency", "embeddings"))}
    if isinstance(x, list):
        return [without_timing(v) for v in x]
    return x


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # PYTHONPATH reaches the workers (this checkout's chateval, and the plugin's folder).
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=150 * 1024**2, log_to_driver=False)
    yield
    ray.shutdown()


def records(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return {r["key"]: without_timing(r) for r in rows}


def summary(out: Path) -> dict:
    return without_timing(json.loads((out / "summary.json").read_text()))


def test_longmemeval_summary_equals_a_local_run(tmp_path):
    cfg = LME | {"systems": ["full_context", "retrieval"], "judge": "both"}  # answers, both judges
    run("longmemeval", cfg | {"out": str(tmp_path / "local")})
    run("longmemeval", cfg | {"out": str(tmp_path / "ray"), "executor": "ray", "ray_workers": 2, "workers": 2})
    assert summary(tmp_path / "ray") == summary(tmp_path / "local")
    assert records(tmp_path / "ray") == records(tmp_path / "local")
    assert summary(tmp_path / "ray")["n_failed"] == 0 and summary(tmp_path / "ray")["n_units"] == 10


def test_the_workers_embeddings_are_counted_in_the_summary(tmp_path):
    """The workers embed, the driver writes the summary: it counts the texts they embedded."""
    cfg = LME | {"systems": ["retrieval"], "retrieval_only": True, "workers": 1}  # one at a time: no shared batches
    run("longmemeval", cfg | {"out": str(tmp_path / "local")})
    run("longmemeval", cfg | {"out": str(tmp_path / "ray"), "executor": "ray", "ray_workers": 2})
    local = json.loads((tmp_path / "local" / "summary.json").read_text())["embeddings"]
    remote = json.loads((tmp_path / "ray" / "summary.json").read_text())["embeddings"]
    assert remote["computed"] == local["computed"] > 0 and remote["embed_s"] > 0


def test_locomo_retrieval_only_and_resume_across_executors(tmp_path):
    lo = {"data": str(FIXTURES / "locomo_tiny.json"), "systems": ["retrieval"], "embedder": "hash", "cache": False}
    run("locomo", lo | {"out": str(tmp_path / "local")})
    run("locomo", lo | {"out": str(tmp_path / "ray"), "executor": "ray", "ray_workers": 2})
    assert summary(tmp_path / "ray") == summary(tmp_path / "local")
    # A run started locally and finished on Ray: the driver skips what is done, as locally.
    lme = LME | {"retrieval_only": True, "systems": ["retrieval"], "rankers": ["bm25", "dense"]}
    run("longmemeval", lme | {"out": str(tmp_path / "full")})
    run("longmemeval", lme | {"out": str(tmp_path / "split"), "question_ids": ["t_job", "t_cat"]})
    done = set(records(tmp_path / "split"))
    run("longmemeval", lme | {"out": str(tmp_path / "split"), "resume": True, "executor": "ray", "ray_workers": 2})
    assert records(tmp_path / "split") == records(tmp_path / "full") and len(done) == 6
    assert summary(tmp_path / "split") == summary(tmp_path / "full")


def test_units_run_in_the_workers_with_plugins(tmp_path):
    plugin = tmp_path / "pid_plugin.py"
    plugin.write_text(PID_PLUGIN)
    out = tmp_path / "pids"
    run("longmemeval", LME | {"systems": ["pid_echo"], "plugins": [str(plugin)], "out": str(out),
                              "executor": "ray", "ray_workers": 2, "workers": 1})
    pids = {int(r["answer"].split()[1]) for r in records(out).values()}
    assert os.getpid() not in pids and len(pids) == 2  # two worker processes, not this one


def test_ray_cache_dir_holds_the_workers_caches(tmp_path):
    cache = tmp_path / "shared-cache"
    out = tmp_path / "cached"
    run("longmemeval", LME | {"systems": ["retrieval"], "cache": True, "out": str(out), "question_ids": ["t_job"],
                              "executor": "ray", "ray_workers": 1, "ray_cache_dir": str(cache)})
    assert summary(out)["n_failed"] == 0
    assert any((cache / "completions").iterdir())  # the worker's offline completions were cached there


def plugin(tmp_path: Path, text: str) -> str:
    path = tmp_path / f"plugin_{abs(hash(text))}.py"
    path.write_text(text)
    return str(path)


def test_grouped_units_share_one_system_on_one_worker(tmp_path):
    """msc-response asks each episode's system for several turns: on Ray every turn of an episode
    runs on the worker that ingested it, into the same system; the two episodes go to two workers."""
    out = tmp_path / "msc"
    run("msc-response", {"data": str(FIXTURES / "msc_release_tiny.jsonl"), "systems": ["pid_state"],
                         "plugins": [plugin(tmp_path, STATE_PLUGIN)], "embedder": "hash", "bertscore": False,
                         "helpfulness": False, "out": str(out), "executor": "ray", "ray_workers": 2, "workers": 2})
    by_episode: dict[str, set[str]] = {}
    for r in records(out).values():
        by_episode.setdefault(r["episode"], set()).add(r["response"])
    assert len(by_episode) == 2 and all(len(v) == 1 for v in by_episode.values())  # one system per episode
    pids = {next(iter(v)).split(":")[0] for v in by_episode.values()}
    assert len(pids) == 2 and str(os.getpid()) not in pids
    assert all(r["turn"] > 0 for r in records(out).values()) and summary(out)["n_failed"] == 0


MSC = {"data": str(FIXTURES / "msc_release_tiny.jsonl"), "systems": ["theanine", "retrieval"],
       "embedder": "hash", "bertscore": False, "cache": False}


@pytest.mark.parametrize("name, cfg", [
    ("head2head", {"data": str(FIXTURES / "locomo_tiny.json"), "systems": ["full_context", "retrieval"],
                   "embedder": "hash", "cache": False, "limit": 3}),
    ("teafarm", {"data": str(FIXTURES / "locomo_tiny.json"), "systems": ["retrieval", "full_context"],
                 "embedder": "hash", "cache": False}),
    # With the helpfulness panel, which travels to the workers as its config; theanine's graphs
    # come back in the records and the driver writes them.
    ("msc-response", MSC),
    ("faireval", {"data": str(FIXTURES / "faireval_tiny.jsonl"), "model": "offline", "cache": False}),
    ("topical-chat", {"data": str(FIXTURES / "topical_chat_tiny.json"), "model": "offline", "cache": False,
                      "limit": 3}),
])
def test_every_benchmark_on_ray_equals_its_local_run(tmp_path, name, cfg):
    run(name, cfg | {"out": str(tmp_path / "local")})
    run(name, cfg | {"out": str(tmp_path / "ray"), "executor": "ray", "ray_workers": 2, "workers": 2})
    local, remote = summary(tmp_path / "local"), summary(tmp_path / "ray")
    assert remote == local and local["n_failed"] == 0
    if name not in ("faireval", "topical-chat"):  # those keep their records in one folder per setting
        assert records(tmp_path / "ray") == records(tmp_path / "local")
    if name == "msc-response":
        graphs = sorted(p.name for p in (tmp_path / "ray" / "memories").iterdir())
        assert graphs == ["tiny_0__theanine.json", "tiny_1__theanine.json"]
        assert all((tmp_path / "ray" / "memories" / g).read_text() == (tmp_path / "local" / "memories" / g).read_text()
                   for g in graphs)


def test_a_benchmark_that_does_not_declare_itself_distributable_is_refused():
    from chateval.bench.api import execution_of
    from chateval.bench.base import Benchmark
    from chateval.bench.config import BenchConfig
    from chateval.util.errors import ConfigError

    class Shared(Benchmark):
        name = "shared_state"

        async def run(self, config, progress):
            return {}

    with pytest.raises(ConfigError, match="does not declare its units safe to spread"):
        execution_of(BenchConfig(out="o", executor="ray"), Shared())


@pytest.mark.parametrize("argv, needle", [
    (["bench", "longmemeval", "--systems", "retrieval", "--ray-workers", "2"], "need --executor ray"),
    (["bench", "longmemeval", "--systems", "retrieval", "--executor", "ray", "--ray-workers", "3"],
     "the Ray cluster has 2 CPU(s)"),
])
def test_refused_before_any_work(tmp_path, capsys, argv, needle):
    out = tmp_path / "o"
    code = main([*argv, "--data", str(FIXTURES / "lme_tiny.json"), "--out", str(out), "--embedder", "hash"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and needle in err and len(err.splitlines()) == 1 and not out.exists()


def test_groups_are_spread_largest_first_to_the_least_loaded_worker():
    from chateval.bench.executor import spread

    assert spread({"a": 5, "b": 3, "c": 3, "d": 1}, 2) == {"a": 0, "b": 1, "c": 1, "d": 0}
    assert set(spread({g: 1 for g in range(5)}, 3).values()) == {0, 1, 2}


def test_workers_give_their_systems_blinded_sessions(tmp_path):
    """Issue 34 under --executor ray: the leak probe (tests/fixtures/leak_probe.py) runs on the
    workers, is given opaque ids and no gold, and its cheating gains nothing."""
    from chateval.datasets import load_longmemeval

    probe = str(FIXTURES / "leak_probe.py")
    originals = {x for q in load_longmemeval(LME["data"]) for s in q.sessions for x in [s.id] + [t.id for t in s.turns]}
    scores = {}
    for cheat in (True, False):
        out, log = tmp_path / f"ray-{cheat}", tmp_path / f"probe-{cheat}.jsonl"
        run("longmemeval", LME | {"systems": ["leak_probe"], "plugins": [probe], "retrieval_only": True,
                                  "rankers": [], "settings": {"leak_probe": {"cheat": cheat, "log": str(log)}},
                                  "out": str(out), "executor": "ray", "ray_workers": 2})
        scores[cheat] = summary(out)["methods"]["leak_probe"]["retrieval"]
        given = [json.loads(line) for line in log.read_text().splitlines()]
        sessions = [s for row in given if row["kind"] == "ingest_all" for s in row["data"]]
        assert sessions and all(s["id"] not in originals and s["meta"] == {} for s in sessions)
        assert all(t["id"] not in originals and t["meta"] == {} for s in sessions for t in s["turns"])
    assert scores[True] == scores[False] and scores[True]["session"]["recall_any@1"] == 0.25


def test_units_go_to_the_actors_in_a_bounded_window(tmp_path, monkeypatch):
    """Issue 38 item 3 on a real Ray instance: 40 units (half in 4 groups) on 2 actors x 2 slots
    never have more than the lanes' slots in flight, and each runs once (tests/test_ray_window.py
    checks the window in detail without Ray)."""
    import asyncio

    from chateval.bench import base
    from chateval.bench.executor import Execution, RayPool, reset, use
    from chateval.runs.directory import RunDir

    seen = {"now": 0, "peak": 0}

    class Counting(RayPool):
        async def run(self, unit, group=None):
            seen["now"] += 1
            seen["peak"] = max(seen["peak"], seen["now"])
            try:
                return await super().run(unit, group)
            finally:
                seen["now"] -= 1

    async def fn(unit):
        await asyncio.sleep(0.01)
        return {"id": unit["id"]}

    monkeypatch.setattr(base, "RayPool", Counting)
    units = [(f"k{i}", {"id": i, "group": f"g{i % 4}" if i < 20 else None}) for i in range(40)]
    token = use(Execution(executor="ray", ray_workers=2))
    try:
        with RunDir(tmp_path / "run", {"config_hash": "h"}, key="key") as run:
            got = asyncio.run(base.run_units(units, fn, run, workers=2, group=lambda u: u["group"], keep=lambda r: r))
    finally:
        reset(token)
    assert sorted(r["id"] for r in got) == list(range(40)) and all(r["status"] == "ok" for r in got)
    assert 2 <= seen["peak"] <= 2 * (2 * 2)  # grouped lanes' slots + the independent lane's
