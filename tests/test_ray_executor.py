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


def without_timing(x):
    """Records and summaries without wall-clock fields (``*_s``, ``latency``): they differ between any two runs;
    nor the driver process's own embedding work (``embeddings``: with Ray the workers embed)."""
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


@pytest.mark.parametrize("argv, needle", [
    (["bench", "head2head", "--systems", "full_context,retrieval", "--executor", "ray"], "share state"),
    (["bench", "longmemeval", "--systems", "retrieval", "--ray-workers", "2"], "need --executor ray"),
    (["bench", "longmemeval", "--systems", "retrieval", "--executor", "ray", "--ray-workers", "3"],
     "the Ray cluster has 2 CPU(s)"),
])
def test_refused_before_any_work(tmp_path, capsys, argv, needle):
    out = tmp_path / "o"
    code = main([*argv, "--data", str(FIXTURES / "lme_tiny.json"), "--out", str(out), "--embedder", "hash"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and needle in err and len(err.splitlines()) == 1 and not out.exists()
