"""The debate panel as a DeepEval metric::

    from deepeval import evaluate
    from deepeval.test_case import LLMTestCase
    from chateval.integrations.deepeval import DebateMetric

    metric = DebateMetric(task="correctness", model="openai/gpt-4o-mini", threshold=0.5)
    evaluate([LLMTestCase(input="...", actual_output="...", expected_output="...")], [metric])

``score`` is 0..1: for correctness 1 (correct), 0 (incorrect) or 0.5 (a split panel); for
``task="score"`` the panel's mean 1..10 score mapped to 0..1. ``reason`` is the condensed debate
(verdict, votes, each debater's last word). ``context``/``retrieval_context`` are shown to the
panel. ``model`` is a chateval model spec. Needs ``pip install 'chateval[deepeval]'``.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase

from .panel import DebateJudge, JudgeTask, agent_verdicts, condensed, transcript_text

__all__ = ["DebateMetric"]


class DebateMetric(BaseMetric):
    def __init__(
        self,
        task: JudgeTask = "correctness",
        preset: str = "chateval_default",
        model: str = "offline",
        threshold: float = 0.5,
        *,
        strict_mode: bool = False,
        async_mode: bool = True,
        **settings: Any,
    ) -> None:
        self.judge = DebateJudge(task, preset, model, **settings)
        self.threshold = 1.0 if strict_mode else threshold
        self.strict_mode, self.async_mode = strict_mode, async_mode
        self.include_reason, self.verbose_mode = True, False
        self.evaluation_model = f"chateval debate panel ({preset}, {model})"
        self.transcript: str | None = None  # the full debate of the last measurement
        self.agents: list[dict[str, Any]] = []  # each debater's verdict in the last measurement

    @property
    def __name__(self) -> str:  # DeepEval names metrics by this property
        return f"Debate ({self.judge.task})"

    async def a_measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        self.error = None
        context = "\n".join([*(test_case.context or []), *map(str, test_case.retrieval_context or [])]) or None
        try:
            j = await self.judge.judge(
                test_case.input,
                test_case.actual_output or "",
                test_case.expected_output,
                context=context,
                id=test_case.name or "test_case",
            )
        except Exception as e:
            self.error, self.score, self.success = str(e), None, False
            raise
        self.score = 0.0 if self.strict_mode and j.value < self.threshold else j.value
        self.reason = condensed(j)
        self.transcript, self.agents = transcript_text(j.result), agent_verdicts(j.result)
        self.evaluation_cost = j.result.usage.cost_usd
        self.input_tokens, self.output_tokens = j.result.usage.prompt_tokens, j.result.usage.completion_tokens
        self.success = self.score >= self.threshold
        return self.score

    def measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        """``a_measure`` from synchronous code; inside a running loop on a worker thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.a_measure(test_case))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chateval-deepeval") as pool:
            return pool.submit(asyncio.run, self.a_measure(test_case)).result()

    def is_successful(self) -> bool:
        return bool(self.error is None and self.score is not None and self.score >= self.threshold)
