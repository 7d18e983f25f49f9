"""LoCoMo's batched full-context protocol (``chateval bench locomo --full-context-batch N``).

LoCoMo's released full-context runs (the repository's ``code`` branch, ``scripts/evaluate_gpts.sh``
and ``task_eval/evaluate_gpts.py``, read, not copied) put the whole conversation in the prompt
once and ask 10 (gpt-3.5-turbo) or 20 (gpt-4-turbo) consecutive questions in one call, with the
answers as JSON keyed by question number; the one-question prompt is their RAG path. Here the
selected questions of a conversation go in consecutive batches of N (in the selection's order),
the context is ``full_context``'s, and the reply is our JSON schema (a list of numbered short
answers). Other systems in the same run keep the one-question answer step.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from ...memory.answer import AnswerInputs, AnswerStyle, offline_answer
from ...memory.systems.full_context import FullContext
from ...memory.types import MemoryStats, Response
from ...models import UsageTotals, approx_tokens
from ...models.steps import TypedStep
from ...util.errors import ModelCallError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # the offline stand-in reads no date


class BatchInputs(BaseModel):
    context: str
    questions: list[str]
    style: AnswerStyle = "locomo"


class NumberedAnswer(BaseModel):
    number: int
    answer: str


class BatchAnswers(BaseModel):
    answers: list[NumberedAnswer] = Field(default_factory=list)


def offline_batch(inp: BatchInputs) -> BatchAnswers:
    """The offline model answers each question as the one-question step's offline stand-in does."""
    lines = inp.context.splitlines()
    return BatchAnswers(
        answers=[
            NumberedAnswer(
                number=i,
                answer=offline_answer(
                    AnswerInputs(question=q, context=inp.context, now=datetime.now(), memories=lines)
                ),
            )
            for i, q in enumerate(inp.questions, 1)
        ]
    )


BATCH_ANSWER: TypedStep[BatchInputs, BatchAnswers] = TypedStep(
    "locomo_batch_answer",
    template="bench/locomo_batch.j2",
    inputs=BatchInputs,
    output=BatchAnswers,
    offline=offline_batch,
)


class BatchedReader:
    """Stands in for a ``full_context`` system in LoCoMo's QA loop: ``prepare`` answers every
    question in batches, ``respond`` then hands out each question's answer (or its batch's
    error) as the one-question path would return it."""

    def __init__(self, system: Any, size: int) -> None:
        self.system, self.size = system, size
        self._replies: dict[str, list[Response | Exception]] = defaultdict(list)
        self.batches = 0

    def stats(self) -> MemoryStats:
        return self.system.stats()

    async def prepare(self, questions: list[str], now: datetime) -> None:
        try:
            context = await self.system.context("", now, [])
        except Exception as exc:  # e.g. a history that cannot fit: every question fails with it
            for q in questions:
                self._replies[q].append(exc)
            return
        for start in range(0, len(questions), self.size):
            chunk = questions[start : start + self.size]
            self.batches += 1
            t0 = time.perf_counter()
            before = len(self.system.log.records)
            try:
                reply = await BATCH_ANSWER.run(
                    self.system.answer_layer(),
                    BatchInputs(context=context, questions=chunk, style=self.system.answer_style),
                    log=self.system.log,
                    prompts=self.system.prompts,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # this batch's questions fail; the others go on
                for q in chunk:
                    self._replies[q].append(exc)
                continue
            each_s = (time.perf_counter() - t0) / len(chunk)
            usage = UsageTotals.of(self.system.log.records[before:])
            by_number = {a.number: a.answer for a in reply.answers}
            for i, q in enumerate(chunk, 1):
                if i not in by_number:
                    self._replies[q].append(
                        ModelCallError(f"batch {self.batches}: the reply has no answer numbered {i} ({q[:80]!r})")
                    )
                    continue
                self._replies[q].append(
                    Response(
                        answer=by_number[i],
                        context=context,
                        context_tokens=approx_tokens(context),
                        usage=usage if i == 1 else UsageTotals(),  # the batch's call, counted once
                        latency_s=each_s,
                        prompt=BATCH_ANSWER.name,
                        trace={"batch": self.batches, "batch_size": len(chunk), "number": i},
                    )
                )

    async def respond(self, question: str, now: datetime) -> Response:
        got = self._replies[question].pop(0)
        if isinstance(got, Exception):
            raise got
        return got


async def answerer_for(system: Any, size: int, questions: list[str], now: datetime) -> Any:
    """What answers LoCoMo's questions: for ``full_context`` with ``size`` > 1 a BatchedReader that
    has answered them all (recorded runs say so: ``full_context_batch``); otherwise the system."""
    if system is None or size <= 1 or not isinstance(system, FullContext):
        return system
    reader = BatchedReader(system, size)
    await reader.prepare(questions, now)
    return reader
