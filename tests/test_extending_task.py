"""A task format added by a plugin file (examples/extending/yesno_task.py): validated against the
task registry, then run end to end by `evaluate`, `calibrate` and `view` with the offline model,
and by entry point."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys

import pytest

from chateval import Evaluator
from chateval.debate.aggregate import aggregate
from chateval.debate.samples import AgentVerdict
from chateval.debate.tasks import TASKS, get_task
from chateval.util.errors import ConfigError

from .conftest import EXAMPLES, REPO

PLUGIN = str(EXAMPLES / "extending" / "yesno_task.py")
ITEMS = [
    {"id": "paris", "question": "What is the capital of France?",
     "answer": "The capital of France is Paris, a city on the Seine.", "label": "yes"},
    {"id": "spider", "question": "How many legs does a spider have?", "answer": "I like turtles.", "label": "no"},
    {"id": "hamlet", "question": "Who wrote Hamlet?", "answer": "William Shakespeare wrote Hamlet around 1600.",
     "label": ["yes", "yes", "no"]},
    {"id": "water", "question": "What is the boiling point of water at sea level?",
     "answer": "Water boils at 100 degrees Celsius at sea level.", "label": "YES"},
]


def chateval(cwd, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chateval.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture
def items(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ITEMS))
    return path


def test_an_unregistered_task_is_one_line_listing_the_registered_ones():
    # A name no test registers: other tests in this process may have loaded the yesno plugin.
    with pytest.raises(ConfigError) as err:
        Evaluator(task="no_such_task")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("setting 'task' (--task): unknown task 'no_such_task' (known: pairwise, score, correctness")


def test_evaluate_then_view_a_plugin_task(tmp_path, items):
    out = tmp_path / "run"
    done = chateval(tmp_path, "evaluate", str(items), "--task", "yesno", "--plugin", PLUGIN, "--model", "offline",
                    "--agents", "2", "--turns", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "yesno" and summary["n_ok"] == 4 and summary["parse_errors"] == 0
    assert summary["verdicts"] == {"yes": 3, "no": 1}  # the offline heuristic answers it
    assert summary["label_accuracy"] == {"n": 4, "accuracy": 1.0}  # "YES" and a 2-1 majority read as "yes"
    assert summary["agreement"]["kappa"]["value"] == 1.0
    records = {r["id"]: r for r in map(json.loads, (out / "samples.jsonl").read_text().splitlines())}
    assert records["spider"]["verdict"]["choice"] == "no" and records["spider"]["verdict"]["votes"] == {"yes": 0, "no": 2}
    assert {a["choice"] for a in records["paris"]["agents"]} == {"yes"}
    # The task's own templates were rendered, and recorded in the config hash's template digest.
    first = records["paris"]["transcript"][0]
    assert "Verdict:" not in first["text"]  # a debate round; the verdict comes in the last
    report = (out / "report.md").read_text()
    assert "| verdicts | yes: 3, no: 1 |" in report and "Cohen's kappa: 1.000" in report

    for extra in ([], ["--plugin", PLUGIN]):  # the card renders with the plugin loaded or not
        page = tmp_path / f"view{len(extra)}.html"
        shown = chateval(tmp_path, "view", str(out), "--out", str(page), *extra)
        assert shown.returncode == 0, shown.stderr
        html = page.read_text()
        assert "verdict: yes" in html and "verdict: no" in html
        assert "aggregated (vote): <b>no</b>" in html and "<td>no</td>" in html


def test_calibrate_a_plugin_task(tmp_path, items):
    out = tmp_path / "cal"
    done = chateval(tmp_path, "calibrate", str(items), "--task", "yesno", "--plugin", PLUGIN, "--model", "offline",
                    "--resamples", "100", "--out", str(out))
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["task"] == "yesno" and summary["primary_metric"] == "kappa" and summary["n_reference"] == 4
    single = summary["settings"]["single"]
    assert single["agreement"]["accuracy"]["value"] == 1.0 and single["n_ok"] == 4
    # The human ceiling: "hamlet" has three annotators; only the "no" has a resolved other side.
    assert summary["ceiling"]["n_pairs"] == 1
    assert "reference: their majority" in (out / "report.md").read_text()


def test_bad_labels_of_a_plugin_task_are_input_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "question": "q?", "answer": "a", "label": "maybe"}) + "\n")
    done = chateval(tmp_path, "evaluate", str(bad), "--task", "yesno", "--plugin", PLUGIN, "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().endswith("""bad.jsonl:1: field 'label': "maybe" is not a yesno label (expected "yes" """
                                        """or "no" or a list of them, one per annotator)""")


@pytest.fixture
def fresh_tasks(monkeypatch):
    monkeypatch.setattr(TASKS, "_items", dict(TASKS._items))
    monkeypatch.setattr(TASKS, "_eps_loaded", False)
    return TASKS


def test_a_task_from_an_entry_point_votes_over_its_classes(fresh_tasks, tmp_path, monkeypatch):
    (tmp_path / "ep_task_pack.py").write_text(
        "from chateval.debate.tasks import TaskFormat\n\n"
        "class Traffic(TaskFormat):\n"
        "    description = 'a traffic light'\n    required = ('question', 'answer')\n"
        "    classes = ('red', 'amber', 'green')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ep_task_pack", raising=False)
    eps = [md.EntryPoint("traffic", "ep_task_pack:Traffic", "chateval.tasks")]
    monkeypatch.setattr(md, "entry_points", lambda group=None, **kw: eps if group == "chateval.tasks" else [])
    task = get_task("traffic")
    assert task.name == "traffic" and task.reference(["Red", "green", "red"]) == "red"
    votes = [AgentVerdict(agent=a, persona=a, choice=c) for a, c in zip("abc", ["green", "red", "green"])]
    v = aggregate("traffic", "vote", votes)
    assert v is not None and (v.choice, v.votes) == ("green", {"red": 1, "amber": 0, "green": 2})
    split = aggregate(task, "vote", votes[:2])
    assert split is not None and split.choice is None and split.tie and split.note == "split vote: green=1, red=1"
    with pytest.raises(ConfigError, match="offline model cannot judge the traffic task"):
        task.offline_verdict(None, None, "")  # type: ignore[arg-type]
