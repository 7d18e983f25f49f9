"""chateval's debate panel as a DeepEval metric (offline model for the panel)."""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")  # no network here
deepeval = pytest.importorskip("deepeval", reason="DeepEval is not installed (pip install 'chateval[deepeval]')")

from deepeval.metrics import BaseMetric  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402

from chateval.integrations.deepeval import DebateMetric  # noqa: E402

@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # DeepEval writes a .deepeval folder into the working directory


RIGHT = LLMTestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.",
                    expected_output="Paris")
WRONG = LLMTestCase(input="What is the capital of France?", actual_output="The capital is Berlin.",
                    expected_output="Paris")


def test_measure_scores_reason_and_threshold():
    metric = DebateMetric(threshold=0.5, turns=2)
    assert isinstance(metric, BaseMetric)
    assert metric.measure(RIGHT) == 1.0 and metric.is_successful()
    assert metric.reason.startswith("Panel verdict: correct")
    assert len(metric.agents) == 2 and "[offline heuristic]" in metric.transcript
    assert asyncio.run(metric.a_measure(WRONG)) == 0.0 and not metric.is_successful()
    assert metric.reason.startswith("Panel verdict: incorrect")
    assert all(a["correct"] is False for a in metric.agents)
    # The reason is condensed: the verdict and each debater's last word, not both rounds.
    assert "round 2" in metric.transcript and "round 1" in metric.transcript
    assert len(metric.reason.splitlines()) == 1 + len(metric.agents) and len(metric.reason) < len(metric.transcript)


async def test_a_measure_inside_a_running_loop_and_measure_from_it():
    metric = DebateMetric(task="score", agents=3)
    score = await metric.a_measure(RIGHT)
    assert 0.0 <= score <= 1.0 and metric.reason.startswith("Panel score:")
    assert metric.measure(RIGHT) == score  # sync measure from inside a loop runs on a thread


def test_correctness_needs_expected_output():
    metric = DebateMetric()
    with pytest.raises(Exception, match="reference answer"):
        metric.measure(LLMTestCase(input="Q?", actual_output="A."))
    assert metric.error and not metric.is_successful()


def test_deepeval_evaluate_runs_the_metric():
    from deepeval import evaluate

    result = evaluate([RIGHT, WRONG], [DebateMetric(threshold=0.5)])
    got = sorted((t.success, t.metrics_data[0].score) for t in result.test_results)
    assert got == [(False, 0.0), (True, 1.0)]
