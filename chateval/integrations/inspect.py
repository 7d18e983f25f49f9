"""The debate panel as an Inspect AI scorer::

    from inspect_ai import Task, task
    from chateval.integrations.inspect import debate_scorer

    @task
    def my_eval():
        return Task(dataset=..., solver=generate(),
                    scorer=debate_scorer(task="correctness", preset="chateval_default", model="openai/gpt-4o-mini"))

``task="correctness"`` judges the output against the sample's target (CORRECT / INCORRECT, a
split panel PARTIAL); ``task="score"`` gives the panel's mean 1..10 score (the target, if any,
is shown as a reference). The Score's explanation is the debate transcript; its metadata holds
each debater's verdict, the votes and the usage. ``model`` is a chateval model spec (the panel
runs through chateval's model layer, not Inspect's). Needs ``pip install 'chateval[inspect]'``.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import CORRECT, INCORRECT, PARTIAL, Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from .panel import DebateJudge, JudgeTask, agent_verdicts, transcript_text

__all__ = ["debate_scorer"]


@scorer(metrics=[mean(), stderr()])
def debate_scorer(
    task: JudgeTask = "correctness", preset: str = "chateval_default", model: str = "offline", **settings: Any
) -> Scorer:
    """Judge ``state.output.completion`` with chateval's debate panel. ``settings``: any
    ``EvalConfig`` field (``agents``, ``turns``, ``strategy``, ``personas``, ``base_url``, ...)."""
    judge = DebateJudge(task, preset, model, **settings)  # fails here on a bad task or preset

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion
        j = await judge.judge(state.input_text, answer, target.text, id=str(state.sample_id))
        v = j.result.verdict
        if task == "correctness":
            value: Any = PARTIAL if j.correct is None else CORRECT if j.correct else INCORRECT
        else:
            value = j.score
        return Score(
            value=value,
            answer=answer,
            explanation=transcript_text(j.result),
            metadata={
                "agents": agent_verdicts(j.result),
                "votes": v.votes if v else {},
                "normalized": j.value,
                "panel_model": j.result.model,
                "usage": j.result.usage.model_dump(),
            },
        )

    return score
