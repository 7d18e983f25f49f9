"""Every registered memory system end to end with the offline model: ingest a LongMemEval
question's sessions, answer it at its date, and check context, tokens, usage, stats and reset."""

from __future__ import annotations

import pytest

import chateval.memory.systems  # noqa: F401  (registers the built-in systems)
from chateval.datasets import load_longmemeval, load_msc
from chateval.memory import MEMORY_SYSTEMS, MemorySystem
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec, approx_tokens
from chateval.util.prompts import fence

from .conftest import SHARED, local_systems

LME_ORACLE = SHARED / "longmemeval" / "longmemeval_oracle.json"
MSC_SAMPLE = SHARED / "theanine" / "sample_dialogue.json"
QID = "6613b389"  # three sessions, listed out of date order, all before the question date

pytestmark = pytest.mark.skipif(not LME_ORACLE.exists(), reason=f"shared data not found at {SHARED}")


@pytest.fixture(scope="module")
def question():
    return next(q for q in load_longmemeval(LME_ORACLE) if q.question_id == QID)


class Recorder:
    """Keeps the messages of every model call, to check what the answering model was given."""

    def __init__(self, layer: ModelLayer) -> None:
        self.calls: list[tuple[str | None, list[str]]] = []
        layer.observers.append(lambda rec, msgs, comp: self.calls.append(
            (rec.step, [m.content for m in msgs if isinstance(m.content, str)])))

    def prompts(self, step: str) -> list[str]:
        return ["\n".join(texts) for s, texts in self.calls if s == step]


def make(name: str) -> tuple[MemorySystem, Recorder]:
    layer = ModelLayer(ModelSpec.parse("offline"))
    return MEMORY_SYSTEMS.get(name)(layer, embedder=make_embedder("hash", cache=False)), Recorder(layer)


@pytest.mark.slow
@pytest.mark.parametrize("name", local_systems())
async def test_longmemeval_question_end_to_end(name, question):
    system, recorder = make(name)
    assert max(s.date for s in question.sessions) < question.question_date
    await system.ingest_all(question.sessions)
    assert [s.id for s in system.sessions] == [s.id for s in sorted(question.sessions, key=lambda s: s.date)]

    ingest_calls = system.stats().llm_calls
    r = await system.respond(question.question, question.question_date)
    assert isinstance(r.answer, str) and r.answer.strip()

    # The context is returned verbatim: exactly what the answering model was given.
    (answer_prompt,) = recorder.prompts("memory_answer")
    assert fence(r.context, "MEMORY") in answer_prompt
    assert question.question in answer_prompt and "2023-07-07" in answer_prompt  # asked at the question date
    assert r.context_tokens == approx_tokens(r.context) and r.tokens_approx
    if r.recalled or not system.supports_recall:
        # There is memory for this question: it is in the context and counted.
        # (A system may recall nothing by design, e.g. human_like below its probability threshold.)
        assert r.context.strip() and r.context_tokens > 0

    # Usage of this answer: the calls respond() made (answer step included), metered.
    assert r.usage.calls >= 1 and r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.tokens_approx and r.usage.cost_usd == 0.0 and r.latency_s > 0

    # Recalled items carry provenance back to the ingested sessions and turns.
    sessions = {s.id: s for s in system.sessions}
    for item in r.recalled:
        assert item.session_id in sessions, item
        assert item.turn_ids and set(item.turn_ids) <= {t.id for t in sessions[item.session_id].turns}, item
        assert item.time.tzinfo is not None and item.text.strip()

    stats = system.stats()
    assert stats.sessions == 3 and stats.empty_sessions == 0
    assert stats.items == system.item_count() > 0
    assert stats.llm_calls == ingest_calls + r.usage.calls == len(recorder.calls)
    assert stats.recalls == (1 if system.supports_recall else 0)

    system.reset()
    assert system.item_count() == 0 and system.sessions == []
    assert await system.recall(question.question, question.question_date) == []
    stats = system.stats()
    assert stats.sessions == 0 and stats.items == 0 and stats.llm_calls == 0
    r = await system.respond(question.question, question.question_date)
    assert r.answer.strip() and r.context == "" and r.context_tokens == 0

    await system.ingest_all(question.sessions)  # usable again after reset
    assert system.item_count() > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", local_systems())
async def test_msc_dialogue_continuation(name):
    """Continue the fifth session of an MSC episode from memory of the first four."""
    (episode,) = load_msc(MSC_SAMPLE)
    system, recorder = make(name)
    await system.ingest_all(episode.sessions[:4])
    current = episode.sessions[4]
    r = await system.respond(current.turns[:3], current.date)
    assert r.answer.strip() and r.context_tokens == approx_tokens(r.context)
    # THEANINE (and its ablations) continue a dialogue with their own step, as the speaker.
    (prompt,) = recorder.prompts("theanine_response" if name.startswith("theanine") else "memory_answer")
    assert current.turns[2].content in prompt and fence(r.context, "MEMORY") in prompt
    assert system.stats().sessions == 4
