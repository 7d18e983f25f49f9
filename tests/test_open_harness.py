"""Your own memory system in every benchmark: a plugin file, an import path, an entry point of
an installed package, a class or instance through the Python API; bad plugins are one-line
errors. Runs offline on our own small fixtures (tests/fixtures)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import chateval.bench as cb
from chateval.cli import main
from chateval.util.errors import ConfigError
from chateval.memory import MEMORY_SYSTEMS, MemorySystem, Response

from .conftest import EXAMPLES, REPO, SHARED, needs_shared, read_jsonl

FIX = Path(__file__).parent / "fixtures"
LME, LOCOMO = FIX / "lme_tiny.json", FIX / "locomo_tiny.json"
PLUGIN = EXAMPLES / "my_memory.py"
OFFLINE = ["--embedder", "hash", "--no-cache"]


def bench(name: str, data: Path, out: Path, systems: str, *extra: str) -> int:
    return main(["bench", name, "--data", str(data), "--systems", systems, "--out", str(out), *OFFLINE, *extra])


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def one_line(err: str, *needles: str) -> None:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], (n, lines[0])


# --- a plugin file, end to end on every memory benchmark ------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name,data,systems", [
    ("longmemeval", LME, "my_memory"),
    ("locomo", LOCOMO, "my_memory"),
    ("head2head", LME, "my_memory,full_context"),
    ("teafarm", LOCOMO, "my_memory"),
])
def test_plugin_system_runs_in_every_memory_benchmark(name, data, systems, tmp_path):
    out = tmp_path / name
    assert bench(name, data, out, systems, "--plugin", str(PLUGIN), "--set", "my_memory.k=2") == 0
    s = summary(out)
    assert s["n_failed"] == 0 and s["n_units"] > 0 and s["headline"]
    assert (out / "report.md").is_file()
    cfg = json.loads((out / "config.json").read_text())["judging"]
    assert cfg["settings"]["my_memory"] == {"k": 2}  # resolved settings, not {}
    assert cfg["system_classes"]["my_memory"].endswith(":MyMemory")
    if name == "longmemeval":  # my_memory recalls user turns: its retrieval is scored
        assert s["methods"]["my_memory"]["retrieval"]["n_evaluable"] == 4
        assert {r["system"] for r in s["headline"]} == {"my_memory"}


def test_chateval_plugins_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv("CHATEVAL_PLUGINS", str(PLUGIN))
    assert bench("longmemeval", LME, tmp_path / "o", "my_memory", "--limit", "1") == 0


# --- an import path and the Python API -------------------------------------------------------
PLAIN = '''
from chateval.memory import MemorySystem
from chateval.memory.systems.full_context import FullContext


class PlainMemory(FullContext):  # not registered anywhere
    description = "full context, unregistered"


class OwnAnswer(MemorySystem):  # answers with its own logic: respond() replaced entirely
    supports_recall = False
    async def _ingest(self, session): pass
    async def context(self, question, now, items): return ""
    def item_count(self): return 0
    def _reset(self): pass
    async def respond(self, query, now):
        from chateval.memory import Response
        return Response(answer="Fernbrook", context="my own context", context_tokens=3)
'''


@pytest.fixture()
def agents_pkg(tmp_path, monkeypatch):
    pkg = tmp_path / "pkgs" / "my_agents"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(PLAIN)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    yield "my_agents"
    for mod in [m for m in sys.modules if m.startswith("my_agents")]:
        del sys.modules[mod]


def test_import_path_needs_no_registration(agents_pkg, tmp_path):
    out = tmp_path / "o"
    assert bench("longmemeval", LME, out, f"{agents_pkg}:PlainMemory", "--limit", "2") == 0
    assert set(summary(out)["methods"]) == {"PlainMemory"}
    assert "PlainMemory" not in MEMORY_SYSTEMS


def test_a_system_may_replace_respond_entirely(agents_pkg, tmp_path):
    out = tmp_path / "o"
    assert bench("longmemeval", LME, out, f"{agents_pkg}:OwnAnswer", "--question-ids", "t_job") == 0
    (rec,) = read_jsonl(out / "samples.jsonl")
    assert rec["answer"] == "Fernbrook" and rec["context"] == "my own context" and rec["correct"] is True


def test_python_api_with_a_class_and_an_instance(agents_pkg, tmp_path):
    from my_agents import PlainMemory
    from chateval.models import ModelLayer, ModelSpec

    s1 = cb.run("longmemeval", {"data": str(LME), "out": str(tmp_path / "a"), "systems": [PlainMemory],
                                "embedder": "hash", "cache": False, "limit": 2})
    assert s1["n_units"] == 2 and s1["n_failed"] == 0 and s1["headline"][0]["system"] == "PlainMemory"
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["headline"] == s1["headline"]
    # An instance is refused before any work, with the form to use instead: the run builds one
    # system per unit, bound to its own model layer (one shared object cannot serve them).
    instance = PlainMemory(ModelLayer(ModelSpec.parse("offline")))
    with pytest.raises(ConfigError) as e:
        cb.run("longmemeval", {"data": str(LME), "out": str(tmp_path / "b"), "systems": [instance],
                               "embedder": "hash", "cache": False, "limit": 3})
    msg = str(e.value)
    assert "instance of PlainMemory" in msg and "give the class (PlainMemory)" in msg and "\n" not in msg
    assert "settings={'PlainMemory': {...}}" in msg
    assert not (tmp_path / "b").exists() and instance.stats().sessions == 0


def test_run_inside_a_running_event_loop(tmp_path):
    cfg = cb.config_model("longmemeval")(data=str(LME), out=str(tmp_path / "o"), systems=["full_context"],
                                         embedder="hash", cache=False, limit=1)

    async def notebook_cell():
        sync = cb.run("longmemeval", cfg)  # a notebook's loop is already running here
        again = await cb.arun("longmemeval", cfg.model_copy(update={"out": str(tmp_path / "p")}))
        return sync, again

    sync, again = asyncio.run(notebook_cell())
    assert sync["n_units"] == again["n_units"] == 1


def test_config_model_and_bad_api_settings(tmp_path):
    model = cb.config_model("locomo")
    assert model.model_fields["categories"].default == [1, 2, 3, 4, 5]
    with pytest.raises(ConfigError, match="setting 'nope'"):
        cb.run("longmemeval", {"data": str(LME), "out": str(tmp_path), "nope": 1})
    with pytest.raises(ConfigError, match="setting 'limit'"):
        cb.run("longmemeval", {"data": str(LME), "out": str(tmp_path), "limit": 0, "systems": ["full_context"]})
    with pytest.raises(ConfigError, match="not a memory system"):
        cb.run("longmemeval", {"data": str(LME), "out": str(tmp_path / "x"), "systems": [dict]})


def test_config_file_with_cli_override(tmp_path, capsys):
    conf = tmp_path / "run.yaml"
    conf.write_text(f"data: {LME}\nsystems: [full_context]\nembedder: hash\ncache: false\nlimit: 3\n"
                    f"out: {tmp_path / 'from_file'}\n")
    assert main(["bench", "longmemeval", "--config", str(conf), "--limit", "1", "--out", str(tmp_path / "o")]) == 0
    assert summary(tmp_path / "o")["n_units"] == 1 and not (tmp_path / "from_file").exists()
    capsys.readouterr()
    conf.write_text("systemz: [x]\n")
    assert main(["bench", "longmemeval", "--config", str(conf), "--out", str(tmp_path / "p")]) == 2
    one_line(capsys.readouterr().err, str(conf), "unknown setting 'systemz'")


# --- an entry point of an installed package --------------------------------------------------
@pytest.mark.slow
def test_entry_point_package_is_found_without_flags(tmp_path):
    site = tmp_path / "site"
    (site / "ep_agents").mkdir(parents=True)
    (site / "ep_agents" / "__init__.py").write_text(PLAIN)
    dist = site / "ep_agents-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-agents\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[chateval.memory_systems]\nep_memory = ep_agents:PlainMemory\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(REPO)]))
    listed = subprocess.run([sys.executable, "-m", "chateval.cli", "memory", "list"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "ep_memory" in listed.stdout, listed.stderr
    out = tmp_path / "o"
    ran = subprocess.run([sys.executable, "-m", "chateval.cli", "bench", "longmemeval", "--data", str(LME),
                          "--systems", "ep_memory", "--limit", "1", "--out", str(out), *OFFLINE], env=env,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert set(summary(out)["methods"]) == {"ep_memory"}


# --- bad plugins -------------------------------------------------------------------------------
BAD_PLUGINS = {
    "syntax": ("def broken(:\n", "syntax error on line 1"),
    "raises": ("raise RuntimeError('no GPU here')\n", "RuntimeError: no GPU here"),
    "nothing": ("X = 1\n", "registered nothing"),
    "exits": ("import sys\nsys.exit(3)\n", "sys.exit(3)"),
    "clash": ("from chateval.debate import strategy\nfrom chateval.debate.strategies.one_by_one import OneByOne\n"
              "@strategy('one_by_one')\nclass Mine(OneByOne):\n    pass\n", "already registered"),
}


@pytest.mark.parametrize("case", sorted(BAD_PLUGINS))
def test_bad_plugin_is_a_one_line_error(case, tmp_path, capsys):
    code, needle = BAD_PLUGINS[case]
    plugin = tmp_path / f"bad_{case}.py"
    plugin.write_text(code)
    assert main(["bench", "longmemeval", "--plugin", str(plugin), "--data", str(LME), "--systems", "full_context",
                 "--out", str(tmp_path / "o")]) == 2
    one_line(capsys.readouterr().err, str(plugin), needle)
    assert not (tmp_path / "o").exists()


def test_a_plugin_may_replace_a_builtin_when_it_says_so(tmp_path):
    plugin = tmp_path / "replacing.py"
    plugin.write_text(textwrap.dedent("""
        from chateval.memory import memory_system
        from chateval.memory.systems.full_context import FullContext
        @memory_system("full_context", replace=True)
        class Mine(FullContext):
            description = "mine"
    """))
    try:
        assert bench("longmemeval", LME, tmp_path / "o", "full_context", "--plugin", str(plugin), "--limit", "1") == 0
        assert MEMORY_SYSTEMS.get("full_context").description == "mine"
    finally:
        from chateval.memory.systems.full_context import FullContext

        MEMORY_SYSTEMS.register("full_context", replace=True)(FullContext)
        FullContext.name = "full_context"


def test_a_user_system_class_is_a_memory_system():
    assert issubclass(MEMORY_SYSTEMS.get("full_context"), MemorySystem)
    assert Response.model_fields["context"].is_required()


@pytest.mark.slow
def test_the_bench_api_example_runs(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "bench_api.py")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    assert "my_memory: accuracy" in proc.stdout and (tmp_path / "runs" / "bench-api" / "report.md").is_file()


# --- the same ways on the shared LongMemEval-S dev slice ----------------------------------------
@pytest.mark.slow
@needs_shared("longmemeval", "longmemeval_s_dev.json")
@pytest.mark.parametrize("way", ["plugin", "import path", "http", "hypotheses"])
def test_each_way_on_the_shared_dev_slice(way, tmp_path, agents_pkg):
    data = SHARED / "longmemeval" / "longmemeval_s_dev.json"
    out = tmp_path / "run"
    base = ["bench", "longmemeval", "--data", str(data), "--limit", "2", "--out", str(out), *OFFLINE]
    if way == "plugin":
        argv = base + ["--plugin", str(PLUGIN), "--systems", "my_memory"]
    elif way == "import path":
        argv = base + ["--systems", f"{agents_pkg}:PlainMemory"]
    elif way == "hypotheses":
        rows = json.loads(data.read_text())[:2]
        hyp = tmp_path / "h.jsonl"
        hyp.write_text("".join(json.dumps({"question_id": r["question_id"], "hypothesis": "I don't know."}) + "\n"
                               for r in rows))
        argv = base + ["--hypotheses", str(hyp), "--allow-missing"]
    else:
        from .test_http_agent import Recorder

        agent = Recorder()
        argv = base + ["--systems", "http", "--set", f"http.url={agent.url}"]
    assert main(argv) == 0
    s = summary(out)
    assert s["n_units"] == 2 and s["n_failed"] == 0 and (out / "report.md").is_file() and s["headline"]
