"""Every extension point of docs/extending.md, through the real command line with the offline
model (issue 29): each example file as a plugin file (or, for personas and presets, a data file),
then the same object found through an installed package's entry point, with no flag at all.

The package is a dist-info folder on PYTHONPATH of the command's interpreter (as in
tests/test_entry_points.py): its entry_points.txt names the example modules themselves.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import FIXTURES, REPO

EXAMPLES = REPO / "examples"
EXT = EXAMPLES / "extending"
PAIRS = EXAMPLES / "faireval_pairwise.jsonl"
MEMORY_PAIRS = EXAMPLES / "memory_consistency.jsonl"
TIMEOUT = 180


def chateval(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = dict(env or os.environ, PYTHONPATH=(env or {}).get("PYTHONPATH", str(REPO)))
    run_env.pop("OPENAI_API_KEY", None)
    run_env.pop("CHATEVAL_PLUGINS", None)
    return subprocess.run([sys.executable, "-P", "-m", "chateval.cli", *map(str, args)], cwd=cwd, env=run_env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


# --- what each kind's run must show, whichever way the object was found ------------------------
def check_persona(out: Path) -> None:
    config = json.loads((out / "config.json").read_text())
    historian = next(p for p in config["judging"]["personas"] if p["name"] == "Historian")
    assert historian["role"].startswith("You are a historian of this conversation")
    [sample] = records(out)
    assert [a["persona"] for a in sample["agents"]] == ["Historian", "Critic"] and sample["status"] == "ok"


def check_preset(out: Path) -> None:
    judging = json.loads((out / "config.json").read_text())["judging"]
    assert (judging["strategy"], judging["turns"], judging["aggregate"]) == ("simultaneous", 1, "vote")
    [sample] = records(out)
    assert [a["persona"] for a in sample["agents"]] == ["Timekeeper", "Memory Keeper", "Critic"]
    assert sample["verdict"]["method"] == "vote" and {t["round"] for t in sample["transcript"]} == {1}


def check_strategy(out: Path) -> None:
    assert json.loads((out / "config.json").read_text())["judging"]["strategy"] == "alternating_order"
    [sample] = records(out)
    order = {r: [t["speaker"] for t in sample["transcript"] if t["round"] == r and t["kind"] == "debate"]
             for r in (1, 2)}
    assert len(order[1]) == 2 and order[2] == order[1][::-1], order  # the speaking order reversed in round 2


def check_memory(out: Path) -> None:
    methods = summary(out)["methods"]
    assert methods["my_memory"]["n"] == 2 and not methods["my_memory"].get("n_failed")
    for unit in records(out):
        assert unit["status"] == "ok" and unit["method"] == "my_memory" and unit["context"], unit.get("error")


def check_benchmark(out: Path) -> None:
    s = summary(out)
    # examples/correctness.jsonl: one answer right, one wrong; the offline single judge gets both.
    assert (s["benchmark"], s["n_units"], s["n_failed"], s["correct_rate"], s["agreement"]) == \
        ("answer_check", 2, 0, 0.5, 1.0)
    assert s["complete"] and {r["key"] for r in records(out)} == {"c-1", "c-2"}
    assert "judged correct: 50.0%" in (out / "report.md").read_text()


def check_perturbation(out: Path) -> None:
    [bias] = summary(out)["biases"]
    assert (bias["perturbation"], bias["bias"], bias["n"], bias["n_items"]) == ("shouting", "formatting", 4, 2)
    variants = [r for r in records(out) if r["perturbation"] == "shouting"]
    assert sorted(r["variant"] for r in variants) == ["caps-1", "caps-1", "caps-2", "caps-2"]
    for r in variants:  # the judged answer is the one in capitals
        judged = r["inputs"]["answer_" + r["variant"][-1]]
        assert judged == judged.upper() and judged.strip()


# --- each kind as a file -------------------------------------------------------------------------
def test_persona_file(tmp_path):
    ok(chateval("evaluate", MEMORY_PAIRS, "--persona-dir", EXT / "personas", "--personas", "historian,critic",
                "--limit", "1", "--out", "run", cwd=tmp_path))
    check_persona(tmp_path / "run")


def test_preset_file(tmp_path):
    ok(chateval("evaluate", MEMORY_PAIRS, "--preset", EXT / "history_panel.yaml", "--limit", "1", "--out", "run",
                cwd=tmp_path))
    check_preset(tmp_path / "run")


def test_strategy_plugin(tmp_path):
    ok(chateval("evaluate", PAIRS, "--plugin", EXAMPLES / "custom_strategy.py", "--strategy", "alternating_order",
                "--limit", "1", "--out", "run", cwd=tmp_path))
    check_strategy(tmp_path / "run")


def test_memory_system_plugin(tmp_path):
    listed = ok(chateval("memory", "list", "--plugin", EXAMPLES / "my_memory.py", cwd=tmp_path))
    assert "my_memory" in listed.stdout
    ok(chateval("bench", "longmemeval", "--plugin", EXAMPLES / "my_memory.py", "--systems", "my_memory",
                "--data", FIXTURES / "lme_tiny.json", "--embedder", "hash", "--limit", "2", "--out", "run",
                cwd=tmp_path))
    check_memory(tmp_path / "run")


def test_benchmark_plugin(tmp_path):
    ok(chateval("bench", "answer_check", "--plugin", EXT / "answer_check", "--data", EXAMPLES / "correctness.jsonl",
                "--out", "run", cwd=tmp_path))
    check_benchmark(tmp_path / "run")
    again = ok(chateval("bench", "answer_check", "--plugin", EXT / "answer_check", "--data",
                        EXAMPLES / "correctness.jsonl", "--out", "run", "--resume", cwd=tmp_path))
    assert "2 units, 0 failed" in " ".join((again.stdout + again.stderr).split()) and len(records(tmp_path / "run")) == 2


def test_perturbation_plugin(tmp_path):
    listed = ok(chateval("perturbations", "--plugin", EXT / "my_perturbation.py", cwd=tmp_path))
    assert "shouting" in listed.stdout
    ok(chateval("audit", PAIRS, "--plugin", EXT / "my_perturbation.py", "--perturbation", "shouting",
                "--limit", "2", "--out", "run", cwd=tmp_path))
    check_perturbation(tmp_path / "run")


# The task and the provider examples come with the registries of issue 29 (another change);
# these run once their files are in examples/extending/.
TASK_FILE, PROVIDER_FILE = EXT / "yesno_task.py", EXT / "my_provider.py"
needs_task = pytest.mark.skipif(not TASK_FILE.exists(), reason=f"{TASK_FILE.name} is not in this checkout yet")
needs_provider = pytest.mark.skipif(not PROVIDER_FILE.exists(), reason=f"{PROVIDER_FILE.name} is not in this checkout yet")


def yesno_input(tmp_path: Path) -> Path:
    """Two items in the fields the task declares (id, question, answer, label yes/no)."""
    path = tmp_path / "yesno.jsonl"
    path.write_text(json.dumps({"id": "y1", "question": "Where is the Eiffel Tower?",
                                "answer": "The Eiffel Tower is in Paris.", "label": "yes"}) + "\n"
                    + json.dumps({"id": "y2", "question": "What is the capital of Peru?",
                                  "answer": "I like trains.", "label": "no"}) + "\n")
    return path


def check_task(out: Path) -> None:
    assert json.loads((out / "config.json").read_text())["judging"]["task"] == "yesno"
    assert all(r["status"] == "ok" and r["task"] == "yesno" for r in records(out))


@needs_task
def test_task_plugin(tmp_path):
    ok(chateval("evaluate", yesno_input(tmp_path), "--plugin", TASK_FILE, "--task", "yesno", "--out", "run",
                cwd=tmp_path))
    check_task(tmp_path / "run")


def provider_run(tmp_path: Path, env: dict[str, str] | None, *plugin: str | Path) -> None:
    with FakeOpenAIServer() as server:
        env = dict(env or os.environ, GATEWAY_API_KEY="sk-gateway-test", GATEWAY_TEAM="docs")
        ok(chateval("evaluate", PAIRS, *plugin, "--model", "gateway/gpt-4o-mini", "--base-url", server.base_url,
                    "--limit", "1", "--out", "run", cwd=tmp_path, env=env))
        assert server.requests and all(r["model"] == "gpt-4o-mini" for r in server.requests)
        assert all(h.get("x-team") == "docs" and h.get("authorization") == "Bearer sk-gateway-test"
                   for h in server.request_headers)
    assert records(tmp_path / "run")[0]["status"] == "ok"


@needs_provider
def test_provider_plugin(tmp_path):
    provider_run(tmp_path, None, "--plugin", PROVIDER_FILE)


# --- each kind by entry point: an installed package, no flag ---------------------------------------
PACKAGE = '''
from pathlib import Path

PERSONAS = Path({personas!r})


def presets() -> Path:
    return Path({presets!r})
'''


def registered_attr(path: Path, registry: object, name: str) -> str:
    """The module-level name under which ``path`` defines what it registers as ``name``."""
    before = registry.snapshot()  # type: ignore[attr-defined]
    space = runpy.run_path(str(path))
    obj = registry.snapshot().get(name, before.get(name))  # type: ignore[attr-defined]
    for attr, value in space.items():
        # the object itself, or the function a registry entry wraps (a perturbation's, a provider's)
        if any(value is x for x in (obj, getattr(obj, "fn", None), getattr(obj, "__wrapped__", None))):
            return attr
    raise AssertionError(f"{path.name}: nothing named for '{name}'")


def install(tmp_path: Path, group: str, entry: str) -> dict[str, str]:
    """A package declaring one entry point; the example modules are importable by name."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "ext_pack.py").write_text(PACKAGE.format(personas=str(EXT / "personas"), presets=str(EXT)))
    dist = site / "ext_pack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ext-pack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    path = os.pathsep.join([str(site), str(EXAMPLES), str(EXT), str(REPO)])
    return dict(os.environ, PYTHONPATH=path)


def test_persona_entry_point(tmp_path):
    env = install(tmp_path, "chateval.personas", "ext_pack = ext_pack:PERSONAS")
    ok(chateval("evaluate", MEMORY_PAIRS, "--personas", "historian,critic", "--limit", "1", "--out", "run",
                cwd=tmp_path, env=env))
    check_persona(tmp_path / "run")


def test_preset_entry_point(tmp_path):
    env = install(tmp_path, "chateval.presets", "ext_pack = ext_pack:presets")
    listed = ok(chateval("strategies", cwd=tmp_path, env=env))
    assert "history_panel" in listed.stdout
    ok(chateval("evaluate", MEMORY_PAIRS, "--preset", "history_panel", "--limit", "1", "--out", "run",
                cwd=tmp_path, env=env))
    check_preset(tmp_path / "run")


def test_strategy_entry_point(tmp_path):
    env = install(tmp_path, "chateval.strategies", "alternating_order = custom_strategy:AlternatingOrder")
    ok(chateval("evaluate", PAIRS, "--strategy", "alternating_order", "--limit", "1", "--out", "run",
                cwd=tmp_path, env=env))
    check_strategy(tmp_path / "run")


def test_memory_system_entry_point(tmp_path):
    env = install(tmp_path, "chateval.memory_systems", "my_memory = my_memory:MyMemory")
    ok(chateval("bench", "longmemeval", "--systems", "my_memory", "--data", FIXTURES / "lme_tiny.json",
                "--embedder", "hash", "--limit", "2", "--out", "run", cwd=tmp_path, env=env))
    check_memory(tmp_path / "run")


def test_benchmark_entry_point(tmp_path):
    env = install(tmp_path, "chateval.benchmarks", "answer_check = answer_check:AnswerCheck")
    listed = ok(chateval("bench", "--list", cwd=tmp_path, env=env))
    assert "answer_check" in listed.stdout
    ok(chateval("bench", "answer_check", "--data", EXAMPLES / "correctness.jsonl", "--out", "run",
                cwd=tmp_path, env=env))
    check_benchmark(tmp_path / "run")


def test_perturbation_entry_point(tmp_path):
    env = install(tmp_path, "chateval.perturbations", "shouting = my_perturbation:shouting")
    ok(chateval("audit", PAIRS, "--perturbation", "shouting", "--limit", "2", "--out", "run", cwd=tmp_path, env=env))
    check_perturbation(tmp_path / "run")


@needs_task
def test_task_entry_point(tmp_path):
    from chateval.debate.tasks import TASKS

    env = install(tmp_path, "chateval.tasks", f"yesno = yesno_task:{registered_attr(TASK_FILE, TASKS, 'yesno')}")
    ok(chateval("evaluate", yesno_input(tmp_path), "--task", "yesno", "--out", "run", cwd=tmp_path, env=env))
    check_task(tmp_path / "run")


@needs_provider
def test_provider_entry_point(tmp_path):
    from chateval.models import providers

    attr = registered_attr(PROVIDER_FILE, providers.PROVIDERS, "gateway")
    provider_run(tmp_path, install(tmp_path, "chateval.providers", f"gateway = my_provider:{attr}"))


def test_an_entry_point_is_what_finds_it(tmp_path):
    """Without the package (and without --plugin) the same command is refused: the entry point,
    not something else on the path, found the benchmark."""
    proc = chateval("bench", "answer_check", "--data", EXAMPLES / "correctness.jsonl", "--out", "run", cwd=tmp_path)
    assert proc.returncode == 2 and "answer_check" in proc.stderr
