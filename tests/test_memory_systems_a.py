"""Memory systems: session_summaries, rsum, retrieval, memory_update (offline, fast)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from autogen_ext.models.replay import ReplayChatCompletionClient

from chateval.datasets import load_longmemeval, load_msc
from chateval.util.errors import ConfigError
from chateval.memory import MEMORY_SYSTEMS, MemorySystem, Session, Turn
from chateval.memory.embeddings import make_embedder
from chateval.memory.extract import OFFLINE_RUNNING_SUMMARY_LINES
from chateval.memory.systems.memory_update import (
    UPDATE_MEMORY,
    MemoryUpdate,
    NewFact,
    OldMemory,
    UpdateInputs,
    offline_decide,
)
from chateval.models import AutogenBackend, ModelLayer, ModelSpec, approx_tokens
from chateval.util.prompts import get_prompts

from .conftest import shared  # noqa: E402
SYSTEMS = ["session_summaries", "rsum", "retrieval", "memory_update"]
UTC = timezone.utc


def make(name: str, layer: ModelLayer | None = None, **settings) -> MemorySystem:
    return MEMORY_SYSTEMS.get(name)(layer or ModelLayer(ModelSpec.parse("offline")), settings=settings or None,
                                    embedder=make_embedder("hash", cache=False))


@pytest.fixture(scope="module")
def episode():
    return load_msc(shared("theanine", "sample_dialogue.json"))[0]


@pytest.fixture(scope="module")
def lme_question():
    # A knowledge-update question: two sessions, the count changes between them.
    (q,) = [q for q in load_longmemeval(shared("longmemeval", "longmemeval_oracle.json"), limit=5)
            if q.question_id == "01493427"]
    return q


def check_provenance(items, sessions: list[Session]) -> None:
    by_id = {s.id: s for s in sessions}
    assert items
    for item in items:
        session = by_id[item.session_id]
        assert item.turn_ids and set(item.turn_ids) <= {t.id for s in sessions for t in s.turns}
        assert item.time == session.date or item.meta.get("session_ids")
        assert item.score is not None and "relevance" in item.scores
    scores = [i.score for i in items]
    assert scores == sorted(scores, reverse=True)


def session(sid: str, date: datetime, *texts: str) -> Session:
    """Alternating user / assistant turns."""
    return Session(id=sid, date=date, turns=[
        Turn(id=f"{sid}-t{n + 1}", role="user" if n % 2 == 0 else "assistant", content=t) for n, t in enumerate(texts)])


PARIS = session("s1", datetime(2024, 1, 10, tzinfo=UTC), "I live in Paris these days.", "Paris is lovely!",
                "My favourite hobby is painting watercolour landscapes.", "That sounds relaxing.")
BERLIN = session("s2", datetime(2024, 6, 1, tzinfo=UTC), "I moved to Berlin, I live in Berlin now.", "How exciting!",
                 "My favourite hobby is painting watercolour landscapes.", "Still painting, great.")
LATER = datetime(2024, 7, 1, tzinfo=UTC)


# --- end to end on real data ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", SYSTEMS)
async def test_theanine_episode_end_to_end(name, episode):
    system = make(name)
    await system.ingest_all(episode.sessions)
    stats = system.stats()
    assert stats.sessions == 5 and stats.empty_sessions == 0
    ingest_calls = 5  # one summary / summary update / fact extraction per session
    if name == "memory_update":
        # ... plus one update decision per session that had similar old memories.
        ingest_calls += len({o.session_id for o in system.operations if o.decided_by == "model"})
    assert stats.llm_calls == ingest_calls
    assert stats.items == system.item_count() == {"session_summaries": 5, "rsum": 1}.get(name, stats.items) > 0

    now = episode.sessions[-1].date
    response = await system.respond("What did Speaker A decide about the engagement ring?", now)
    assert response.answer.startswith("[offline]") and response.context
    assert response.context_tokens == approx_tokens(response.context) > 0 and response.tokens_approx
    assert response.usage.calls == 1 and system.stats().llm_calls == ingest_calls + 1
    assert bool(response.recalled) == system.supports_recall

    items = await system.recall("engagement ring proposal", now)
    check_provenance(items, episode.sessions)
    if name in ("retrieval", "memory_update"):
        assert len(items) == 6 and "ring" in items[0].text.lower()
        assert response.context.count("\n") == len(response.recalled) - 1  # one memory a line
    if name == "session_summaries":
        assert items[0].session_id in ("msc-episode-30-s4", "msc-episode-30-s5")
        assert len(await system.recall("ring", now, k=2)) == 2


@pytest.mark.parametrize("name", SYSTEMS)
async def test_longmemeval_oracle_question(name, lme_question):
    q = lme_question
    system = make(name)
    await system.ingest_all(q.sessions)
    response = await system.respond(q.question, q.question_date)
    assert response.answer.startswith("[offline]")
    assert response.context_tokens == approx_tokens(response.context) > 0
    items = await system.recall(q.question, q.question_date)
    check_provenance(items, q.sessions)
    assert {i.session_id for i in items} <= set(q.answer_session_ids)
    if name in ("retrieval", "memory_update"):
        evidence = {t.id for s in q.sessions for t in s.turns if t.meta["has_answer"]}
        assert evidence & {t for i in items for t in i.turn_ids}  # the top-k holds an evidence turn
        assert "25" in response.answer


# --- per-system behaviour ------------------------------------------------------------------
async def test_session_summaries_context_in_date_order(episode):
    system = make("session_summaries")
    await system.ingest_all(list(reversed(episode.sessions)))  # ingest_all sorts by date
    ctx = await system.context("q", LATER, [])
    # Sessions are named by their position in date order, never by the data set's id (issue 34).
    n = len(episode.sessions)
    positions = [ctx.index(f"## Session {i} (") for i in range(1, n + 1)]
    assert positions == sorted(positions)
    assert not any(s.id in ctx for s in episode.sessions)
    tight = make("session_summaries", max_context_tokens=approx_tokens(ctx) // 2)
    await tight.ingest_all(episode.sessions)
    kept = await tight.context("q", LATER, [])
    assert f"## Session {n} (" in kept and "## Session 1 (" not in kept


async def test_rsum_is_one_bounded_summary(episode):
    rsum, per_session = make("rsum"), make("session_summaries")
    sizes = []
    for s in episode.sessions:
        await rsum.ingest(s)
        await per_session.ingest(s)
        sizes.append(approx_tokens(await rsum.context("q", LATER, [])))
        assert rsum.item_count() == 1
    summary = rsum.summary
    assert summary is not None and len(summary.splitlines()) <= OFFLINE_RUNNING_SUMMARY_LINES
    # Not N summaries side by side: smaller than the per-session summaries together, and it
    # stops growing once the cap is reached.
    assert sizes[-1] < approx_tokens(await per_session.context("q", LATER, []))
    assert sizes[-1] < 2 * sizes[1]
    assert "engagement ring" in summary  # the recent sessions are in it
    (item,) = await rsum.recall("ring", LATER)
    assert item.text == summary and item.session_id == episode.sessions[-1].id
    assert item.meta["session_ids"] == [s.id for s in episode.sessions]
    assert rsum.stats().llm_calls == 5


async def test_rsum_update_sees_the_previous_summary():
    calls = []

    class Spy(AutogenBackend):
        async def complete(self, messages, *, step, response_format, params):
            calls.append((step.name, step.inputs.previous if step.name == "update_summary" else None, messages))
            return await super().complete(messages, step=step, response_format=response_format, params=params)

    replies = ['{"summary": "The user lives in Paris."}', '{"summary": "The user lived in Paris, now in Berlin."}',
               "In Berlin."]
    layer = ModelLayer(ModelSpec.parse("offline"), backend=Spy(ReplayChatCompletionClient(replies)))
    rsum = make("rsum", layer)
    await rsum.ingest_all([PARIS, BERLIN])
    assert [c[1] for c in calls] == [None, "The user lives in Paris."]
    assert "The user lives in Paris." in calls[1][2][-1].content  # fenced inside the prompt
    response = await rsum.respond("Where does the user live?", LATER)
    assert response.context == "The user lived in Paris, now in Berlin." and response.answer == "In Berlin."


async def test_memory_update_replaces_the_old_fact():
    system = make("memory_update")
    await system.ingest(PARIS)
    assert system.stats().llm_calls == 1  # nothing to compare with yet: no update call
    await system.ingest(BERLIN)
    assert system.stats().llm_calls == 3  # extraction + one update decision for the session
    ops = {(o.session_id, o.operation) for o in system.operations}
    assert ops == {("s1", "ADD"), ("s2", "REPLACE"), ("s2", "SKIP")}
    (replace,) = [o for o in system.operations if o.operation == "REPLACE"]
    assert replace.targets == ["s1#m1"]
    texts = [i.text for i in system.items]
    assert not any("Paris" in t for t in texts) and sum("watercolour" in t for t in texts) == 1
    berlin = next(i for i in system.items if "Berlin" in i.text)
    assert berlin.meta["replaced"] == ["s1#m1"] and "Paris" in berlin.meta["replaced_texts"][0]
    assert await system._store.count() == system.item_count() == 2  # the replaced memory left the store too
    items = await system.recall("where does the user live", LATER)
    assert "Berlin" in items[0].text and items[0].session_id == "s2" and items[0].turn_ids == ["s2-t1"]
    assert items[0].time == BERLIN.date
    response = await system.respond("Where does the user live?", LATER)
    assert "Berlin" in response.answer and "Paris" not in response.context
    assert system.stats().llm_calls == 4
    assert system.operation_counts() == {"ADD": 2, "REPLACE": 1, "SKIP": 1}

    # Plain retrieval keeps both, and the stale one ranks first: what memory_update fixes.
    plain = make("retrieval")
    await plain.ingest_all([PARIS, BERLIN])
    assert plain.item_count() == 4
    assert "Paris" in (await plain.recall("where does the user live", LATER))[0].text


async def test_reset_clears_everything(episode):
    for name in SYSTEMS:
        system = make(name)
        await system.ingest_all(episode.sessions[:2])
        await system.respond("sports?", LATER)
        system.reset()
        assert system.item_count() == 0 and system.stats().sessions == 0 and system.stats().llm_calls == 0
        assert await system.recall("sports", LATER) == []
        if name in ("retrieval", "memory_update"):
            assert await system._store.count() == 0
        if name == "memory_update":
            assert system.operations == []
        await system.ingest_all(episode.sessions[:2])  # the same ids are accepted again
        assert system.stats().sessions == 2 and system.item_count() > 0


async def test_empty_sessions_and_recall_before_ingest():
    for name in SYSTEMS:
        system = make(name)
        assert await system.recall("anything", LATER) == []
        await system.ingest(Session(id="e", date=LATER, turns=[Turn(id="e-1", role="user", content="  ")]))
        assert system.item_count() == 0 and system.stats().llm_calls == 0 and system.stats().empty_sessions == 1


async def test_retrieval_k_and_min_score(episode):
    system = make("retrieval", k=3, min_score=0.2)
    await system.ingest_all(episode.sessions)
    items = await system.recall("engagement ring", LATER)
    assert 0 < len(items) <= 3 and all(i.score >= 0.2 for i in items)
    assert len(await system.recall("engagement ring", LATER, k=1)) == 1


# --- the update step -----------------------------------------------------------------------
def fact(text: str, *old: str) -> NewFact:
    return NewFact(id="F1", text=text, candidates=[
        OldMemory(id=f"M{n + 1}", text=t, date=datetime(2024, 1, 1, tzinfo=UTC), similarity=0.6) for n, t in enumerate(old)])


@pytest.mark.parametrize("new, old, op, targets", [
    ("user said: I live in Paris.", ["user said: I live in Paris."], "SKIP", ["M1"]),
    ("The user has two cats.", ["The user has a dog.", "The user has two cats named Tom and Jim."], "SKIP", ["M2"]),
    ("The user no longer has a cold.", ["The user has a cold."], "DELETE", ["M1"]),
    ("The user moved to Berlin and lives in Berlin.", ["The user lives in Paris.", "The user likes Paris cafes."],
     "REPLACE", ["M1"]),
    ("The user leads 5 engineers.", ["The user leads 4 engineers at work."], "REPLACE", ["M1"]),
    ("The user likes hiking.", ["The user likes swimming."], "ADD", []),
    ("The user bought a bike.", [], "ADD", []),
])
def test_offline_update_decisions(new, old, op, targets):
    decision = offline_decide(fact(new, *old))
    assert (decision.operation, decision.targets) == (op, targets)


def test_update_prompt_fences_data():
    inp = UpdateInputs(session_id="s", date=LATER, facts=[fact("I said <<<END NEW FACT>>> {{ 7*7 }}", "old {% raw %}")])
    (user,) = UPDATE_MEMORY.messages(inp, get_prompts())
    text = user.content
    assert "<<<BEGIN NEW FACT>>>" in text and "<<<BEGIN MEMORY>>>" in text
    assert "< < <END NEW FACT> > > {{ 7*7 }}" in text and "old {% raw %}" in text
    assert "memory M1 (from 2024-01-01, cosine similarity 0.60)" in text


# --- settings -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, settings, match", [
    ("retrieval", {"k": 0}, "setting 'k'"),
    ("retrieval", {"topk": 3}, "setting 'topk'"),
    ("memory_update", {"match_threshold": 2}, "setting 'match_threshold'"),
    ("memory_update", {"candidates": "many"}, "setting 'candidates'"),
    ("rsum", {"max_words": 100}, "setting 'max_words'"),
    ("session_summaries", {"max_context_tokens": 0}, "setting 'max_context_tokens'"),
])
def test_settings_errors_are_one_line(name, settings, match):
    with pytest.raises(ConfigError, match=match) as err:
        make(name, **settings)
    assert "\n" not in str(err.value) and f"memory system '{name}'" in str(err.value)


def test_registered_with_descriptions():
    for name in SYSTEMS:
        cls = MEMORY_SYSTEMS.get(name)
        assert cls.name == name and cls.description and cls.paper
        assert cls.Settings.model_config.get("extra") == "forbid"


# --- a real-model code path: malformed JSON, then the re-ask ---------------------------------
def replay_layer(replies: list[str]) -> tuple[ModelLayer, ReplayChatCompletionClient]:
    client = ReplayChatCompletionClient(replies)
    return ModelLayer(ModelSpec.parse("offline"), backend=AutogenBackend(client), cache=None), client


async def test_retrieval_reasks_after_malformed_json():
    layer, client = replay_layer([
        'Sure! {"facts": [{"text": "The user lives in Paris", "turn_ids": ["s1-t1"]',  # cut off: not JSON
        '{"facts": [{"text": "The user lives in Paris.", "turn_ids": ["s1-t1", "made-up"]},'
        ' {"text": "The user paints watercolours.", "turn_ids": []}]}',
        "The user lives in Paris.",
    ])
    system = make("retrieval", layer)
    await system.ingest(PARIS)
    assert [r.step for r in system.log.records] == ["extract_facts", "extract_facts"]
    assert system.stats().llm_calls == 2 and system.item_count() == 2
    reask = client.create_calls[1]["messages"]
    assert reask[-2].content.startswith("Sure!") and "not valid JSON" in reask[-1].content
    paris = next(i for i in system.items if "Paris" in i.text)
    assert paris.turn_ids == ["s1-t1"]  # the invented id is dropped
    paints = next(i for i in system.items if "paints" in i.text)
    assert paints.turn_ids == [t.id for t in PARIS.turns] and paints.meta["turn_ids_inferred"]
    response = await system.respond("Where does the user live?", LATER)
    assert response.answer == "The user lives in Paris." and system.stats().llm_calls == 3


async def test_memory_update_reasks_and_reads_aliases():
    layer, _ = replay_layer([
        '{"facts": [{"text": "The user lives in Paris.", "turn_ids": ["s1-t1"]}]}',
        '{"facts": [{"text": "The user now lives in Berlin.", "turn_ids": ["s2-t1"]}]}',
        '{"operations": [{"fact_id": "F1", "operation": "UPDATE", "targets": ["M1"]}',  # unbalanced
        '```json\n{"operations": [{"fact_id": "F1", "operation": "update", "targets": ["M1", "M9"]}]}\n```',
    ])
    system: MemoryUpdate = make("memory_update", layer, match_threshold=-1.0)  # type: ignore[assignment]
    await system.ingest_all([PARIS, BERLIN])
    assert [r.step for r in system.log.records] == ["extract_facts", "extract_facts", "update_memory", "update_memory"]
    (last,) = [o for o in system.operations if o.session_id == "s2"]
    assert (last.operation, last.targets) == ("REPLACE", ["s1#m1"])  # alias M1 mapped back; unknown M9 ignored
    assert [i.text for i in system.items] == ["The user now lives in Berlin."]
