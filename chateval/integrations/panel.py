"""What both integrations share: a lazily built debate panel, a judgement turned into numbers a
harness can use, the transcript as text, and a condensed debate for a short reason."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from ..debate import JudgeResult, Sample
from ..evaluation.evaluator import Evaluator
from ..util.errors import ChatevalError

JudgeTask = Literal["correctness", "score"]
SCORE_MIN, SCORE_MAX = 1.0, 10.0  # the panel scores on 1..10 (prompts/score_verdict.j2)


class JudgeFailed(ChatevalError):
    """The panel could not reach a verdict (after retries): never reported as a score."""


@dataclass
class Judgement:
    result: JudgeResult
    value: float  # 0..1: correct = 1, incorrect = 0, a split panel 0.5; a score mapped from 1..10
    correct: bool | None  # correctness; None for a split panel or the score task
    score: float | None  # the panel's mean score on 1..10 (score task)


def transcript_text(result: JudgeResult) -> str:
    """The debate as readable text: one paragraph per turn, speaker and round first."""
    return "\n\n".join(
        f"[{t.speaker}, round {t.round}{'' if t.kind == 'debate' else ', ' + t.kind}]\n{t.text.strip()}"
        for t in result.transcript
    )


def agent_verdicts(result: JudgeResult) -> list[dict[str, Any]]:
    return [a.model_dump(exclude_none=True) for a in result.agents]


def condensed(j: Judgement, *, per_turn: int = 300) -> str:
    """The verdict, then each debater's last word, cut to ``per_turn`` characters."""
    v = j.result.verdict
    head = (
        f"Panel verdict: {'split' if j.correct is None else 'correct' if j.correct else 'incorrect'}"
        if j.score is None
        else f"Panel score: {j.score:.1f}/10"
    )
    if v is not None and v.votes:
        head += " (votes: " + ", ".join(f"{k} {n}" for k, n in v.votes.items()) + ")"
    last: dict[str, str] = {}
    for t in j.result.transcript:
        last[t.speaker] = " ".join(t.text.split())  # one line per debater
    lines = [head] + [f"{who}: {text[:per_turn] + ('…' if len(text) > per_turn else '')}" for who, text in last.items()]
    return "\n".join(lines)


class DebateJudge:
    """A debate panel from a preset (``strategies/<name>.yaml`` or a YAML path) with ``model``
    and any EvalConfig setting on top. Built on first use, inside the harness's event loop."""

    def __init__(
        self, task: JudgeTask = "correctness", preset: str = "chateval_default", model: str = "offline", **settings: Any
    ) -> None:
        if task not in ("correctness", "score"):
            raise ChatevalError(f"task '{task}': the debate scorer judges 'correctness' or 'score'")
        self.task, self.preset, self.model, self.settings = task, preset, model, settings
        self._evaluator: Evaluator | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def evaluator(self) -> Evaluator:
        # Model clients hold connections of the loop they were made in: a harness that runs
        # each measurement in a loop of its own gets a panel built in that loop.
        loop = asyncio.get_running_loop()
        if self._evaluator is None or self._loop is not loop:
            self._loop = loop
            self._evaluator = Evaluator.from_preset(
                self.preset, **(self.settings | {"task": self.task, "model": self.model})
            )
        return self._evaluator

    async def judge(
        self,
        question: str,
        answer: str,
        reference: str | None = None,
        *,
        context: str | None = None,
        id: str = "sample",
    ) -> Judgement:
        if self.task == "correctness" and not (reference or "").strip():
            raise ChatevalError("the correctness panel needs a reference answer (the sample's target)")
        sample = Sample(id=id, question=question, answer=answer, reference=reference or None, context=context)
        result = await self.evaluator.judge(sample, self.task)
        v = result.verdict
        if result.status != "ok" or v is None:
            raise JudgeFailed(f"debate panel failed on {id}: {result.error or 'no verdict'}")
        if self.task == "correctness":
            value = 0.5 if v.correct is None else float(v.correct)
            return Judgement(result, value, v.correct, None)
        score = float(v.score if v.score is not None else sum(v.scores.values()) / max(1, len(v.scores)))
        return Judgement(result, (score - SCORE_MIN) / (SCORE_MAX - SCORE_MIN), None, score)
