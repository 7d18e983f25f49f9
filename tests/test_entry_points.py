"""Entry-point discovery: an installed package extends chateval without any flag — memory
systems (tests/test_open_harness.py), strategies, benchmarks, personas folders and preset
folders (here). The package is a dist-info folder on PYTHONPATH of a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import REPO

PKG = textwrap.dedent('''
    from pathlib import Path
    from typing import Any

    from chateval.bench import Benchmark, BenchConfig
    from chateval.debate.strategies.one_by_one import OneByOne

    HERE = Path(__file__).parent
    PERSONAS = HERE / "personas"


    def presets() -> Path:
        return HERE / "presets"


    class LastWord(OneByOne):
        description = "one-by-one, from an installed package"


    class Tiny(Benchmark):
        description = "a benchmark from an installed package"
        config_model = BenchConfig

        async def run(self, config: Any, progress: Any) -> dict[str, Any]:
            return {"benchmark": "ep_tiny"}
''')

ENTRY_POINTS = """
[chateval.strategies]
ep_last_word = ep_pack:LastWord

[chateval.benchmarks]
ep_tiny = ep_pack:Tiny

[chateval.personas]
ep_pack = ep_pack:PERSONAS

[chateval.presets]
ep_pack = ep_pack:presets
"""

CHECK = textwrap.dedent('''
    import asyncio
    from chateval import Evaluator
    from chateval.bench import BENCHMARKS
    from chateval.debate import STRATEGIES, PersonaLibrary

    assert "ep_last_word" in STRATEGIES.names() and "ep_tiny" in BENCHMARKS.names()
    assert PersonaLibrary().get("Historian").role.startswith("You are a historian")
    assert PersonaLibrary().get("critic").name == "Critic"  # a package adds names; it cannot shadow a built-in
    ev = Evaluator.from_preset("ep_panel", model="offline")  # the package's preset, persona and strategy
    assert [p.name for p in ev.personas] == ["Historian", "Critic"] and ev.config.strategy == "ep_last_word"
    result = ev.check_sync("Who wrote Hamlet?", "Shakespeare wrote Hamlet.", "William Shakespeare")
    assert result.status == "ok" and result.verdict is not None, result.error
    assert {t.speaker for t in result.transcript} == {a.agent for a in result.agents} and len(result.agents) == 2
    assert "Historian" in {a.persona for a in result.agents}
    print("ok")
''')


def install(site: Path, entry_points: str = ENTRY_POINTS) -> dict[str, str]:
    pkg = site / "ep_pack"
    (pkg / "personas").mkdir(parents=True)
    (pkg / "presets").mkdir()
    (pkg / "__init__.py").write_text(PKG)
    (pkg / "personas" / "historian.yaml").write_text(
        "name: Historian\ndescription: reads answers against the record\nrole: You are a historian who checks facts.\n")
    (pkg / "personas" / "critic.yaml").write_text("name: Not The Critic\ndescription: x\nrole: You are someone else.\n")
    (pkg / "presets" / "ep_panel.yaml").write_text("strategy: ep_last_word\nturns: 1\npersonas: [historian, critic]\n")
    dist = site / "ep_pack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-pack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(REPO)]))


def chateval(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chateval.cli", *args], env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.slow
def test_installed_package_adds_strategy_benchmark_personas_and_presets(tmp_path):
    env = install(tmp_path / "site")
    checked = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=180)
    assert checked.returncode == 0 and checked.stdout.strip() == "ok", checked.stderr
    listed = chateval(env, "strategies")
    assert listed.returncode == 0 and "ep_last_word" in listed.stdout and "ep_panel" in listed.stdout, listed.stderr
    personas = chateval(env, "personas")
    assert personas.returncode == 0 and "Historian" in personas.stdout, personas.stderr


def test_a_broken_folder_entry_point_is_one_line(tmp_path):
    env = install(tmp_path / "site", "[chateval.personas]\nep_pack = ep_pack:MISSING\n")
    out = chateval(env, "personas")
    err = out.stderr.strip()
    assert out.returncode == 2 and "entry point 'ep_pack' (chateval.personas) of ep-pack" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


CLASHING = """
[chateval.tasks]
pairwise = ep_pack:LastWord

[chateval.strategies]
one_by_one = ep_pack:LastWord
ep_last_word = ep_pack:LastWord

[chateval.benchmarks]
ep_tiny = ep_pack:Tiny
"""


def test_an_entry_point_named_like_a_built_in_is_refused_and_the_rest_works(tmp_path):
    """Built-ins win: a package's entry point that takes a built-in's name (a task registered lazily,
    a strategy registered at import) is one warning naming the package; evaluate still runs with the
    built-in, and the package's other entry points still load."""
    env = install(tmp_path / "site", CLASHING)
    data = REPO / "examples" / "faireval_pairwise.jsonl"
    out = chateval(env, "evaluate", str(data), "--model", "offline", "--agents", "2", "--turns", "1",
                   "--strategy", "one_by_one", "--limit", "1", "--no-cache", "--out", str(tmp_path / "run"))
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stderr.splitlines() if "ignoring entry point" in line]
    assert len(warned) == 2 and all("of ep-pack" in w for w in warned), out.stderr
    assert any("'pairwise' (chateval.tasks)" in w for w in warned)
    assert any("'one_by_one' (chateval.strategies)" in w for w in warned)
    assert "Traceback" not in out.stderr
    listed = chateval(env, "strategies")
    assert listed.returncode == 0 and "ep_last_word" in listed.stdout, listed.stderr
    check = ("from chateval.debate import STRATEGIES; from chateval.debate.tasks import TASKS;"
             "print(STRATEGIES.get('one_by_one').__module__, TASKS.get('pairwise').__module__)")
    got = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=180)
    assert got.stdout.split() == ["chateval.debate.strategies.one_by_one", "chateval.debate.task_formats"], got.stderr


def test_a_package_that_takes_a_built_in_name_by_decorator_is_refused(tmp_path):
    env = install(tmp_path / "site", "[chateval.strategies]\nep_taker = ep_pack.taker:Taker\n"
                                     "ep_last_word = ep_pack:LastWord\n")
    (tmp_path / "site" / "ep_pack" / "taker.py").write_text(
        "from chateval.debate import STRATEGIES\nfrom ep_pack import LastWord\n\n"
        "@STRATEGIES.register('simultaneous')\nclass Taker(LastWord):\n    pass\n")
    listed = chateval(env, "strategies")
    assert listed.returncode == 0 and "simultaneous" in listed.stdout and "ep_last_word" in listed.stdout, listed.stderr
    assert "ep_taker" not in listed.stdout and len(listed.stderr.strip().splitlines()) == 1
    assert "ignoring entry point 'ep_taker' (chateval.strategies) of ep-pack: strategy 'simultaneous'" in listed.stderr


def test_a_built_in_registered_after_the_entry_points_wins(monkeypatch, caplog):
    """The order that cannot be checked up front: a package's entry point took a name first, and
    chateval's own module registering it is imported later. The built-in replaces it, with the
    same one warning; a plugin of the user's (--plugin) is still refused the name."""
    import logging
    from types import SimpleNamespace

    from chateval.util import registry as reg
    from chateval.util.errors import ConfigError

    theirs = type("Theirs", (), {"__module__": "ep_pack.things"})
    ours = type("Ours", (), {"__module__": "chateval.things"})
    mine = type("Mine", (), {"__module__": "chateval_plugin_mine"})
    ep = SimpleNamespace(name="alpha", dist=SimpleNamespace(name="ep-pack"), load=lambda: theirs)
    monkeypatch.setattr(reg.md, "entry_points", lambda group: [ep] if group == "chateval.things" else [])
    things = reg.Registry("thing", entry_points="chateval.things")
    monkeypatch.setattr(reg.Registry, "ALL", [r for r in reg.Registry.ALL if r is not things])
    with caplog.at_level(logging.WARNING, logger="chateval.util.registry"):
        assert things.get("alpha") is theirs
        things.register("alpha")(ours)
    assert things.get("alpha") is ours
    assert [r.getMessage() for r in caplog.records] == [
        "chateval: ignoring entry point 'alpha' (chateval.things) of ep-pack: chateval's own thing of that name "
        "is used (the package should choose another name)"]
    with pytest.raises(ConfigError, match="already registered"):
        things.register("alpha")(mine)
