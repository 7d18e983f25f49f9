"""Bad input to memory systems, the same defined behaviour for every registered system:
sessions out of order or duplicated are refused, ingest_all sorts, empty sessions add nothing,
naive and aware datetimes mix (naive = UTC), and asking before any ingest is not an error."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import chateval.memory.systems  # noqa: F401  (registers the built-in systems)
from chateval.memory import MEMORY_SYSTEMS, MemoryInputError, MemorySystem, Session, Turn
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec

from .conftest import local_systems

SYSTEMS = local_systems()
UTC = timezone.utc


def make_system(name: str) -> MemorySystem:
    layer = ModelLayer(ModelSpec.parse("offline"))  # no completion cache: nothing shared between tests
    return MEMORY_SYSTEMS.get(name)(layer, embedder=make_embedder("hash", cache=False))


def session(sid: str, date: datetime, *user_texts: str) -> Session:
    turns = []
    for i, text in enumerate(user_texts):
        turns += [Turn(id=f"{sid}_{2 * i + 1}", role="user", content=text),
                  Turn(id=f"{sid}_{2 * i + 2}", role="assistant", content=f"That sounds lovely, tell me more about it ({i}).")]
    return Session(id=sid, date=date, turns=turns)


def s1(date=datetime(2023, 5, 1, 10, 0, tzinfo=UTC)) -> Session:
    return session("s1", date, "I adopted a tabby cat named Luna from the shelter last weekend.")


def s2(date=datetime(2023, 6, 1, 10, 0, tzinfo=UTC)) -> Session:
    return session("s2", date, "My sister Maya is moving to Lisbon for her new design job.")


def s3(date=datetime(2023, 7, 1, 10, 0, tzinfo=UTC)) -> Session:
    return session("s3", date, "I started training for the Berlin marathon in September.")


NOW = datetime(2023, 8, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=SYSTEMS)
def system(request) -> MemorySystem:
    return make_system(request.param)


def test_every_system_is_registered_with_metadata():
    assert "full_context" in SYSTEMS
    for name in SYSTEMS:
        cls = MEMORY_SYSTEMS.get(name)
        assert cls.name == name and cls.description and cls.paper, name


async def test_out_of_order_session_is_refused_naming_both_dates(system):
    await system.ingest(s2())
    with pytest.raises(MemoryInputError) as info:
        await system.ingest(s1())
    msg = str(info.value)
    assert "'s1'" in msg and "2023-05-01T10:00:00+00:00" in msg and "2023-06-01T10:00:00+00:00" in msg
    assert "ingest_all" in msg and "\n" not in msg and info.value.exit_code == 2
    assert [s.id for s in system.sessions] == ["s2"] and system.stats().sessions == 1  # nothing half-ingested
    await system.ingest(s3())  # later sessions are still accepted
    assert system.stats().sessions == 2


async def test_same_date_is_not_out_of_order(system):
    day = datetime(2023, 5, 1, tzinfo=UTC)
    await system.ingest(s1(day))
    await system.ingest(s2(day))
    assert system.stats().sessions == 2


async def test_ingest_all_sorts_by_date(system):
    await system.ingest_all([s3(), s1(), s2()])
    assert [s.id for s in system.sessions] == ["s1", "s2", "s3"]
    stats = system.stats()
    assert stats.sessions == 3 and stats.empty_sessions == 0 and stats.items == system.item_count() > 0


async def test_ingest_all_is_stable_for_equal_dates(system):
    day = datetime(2023, 5, 1, tzinfo=UTC)
    await system.ingest_all([s2(day), s1(day)])
    assert [s.id for s in system.sessions] == ["s2", "s1"]


async def test_duplicate_session_id_is_refused(system):
    await system.ingest(s1())
    with pytest.raises(MemoryInputError, match="session 's1' was already ingested"):
        await system.ingest(s1(datetime(2023, 9, 1, tzinfo=UTC)))
    system.reset()
    with pytest.raises(MemoryInputError, match=r"session 's1' is given twice \(duplicate session id\)"):
        await system.ingest_all([s1(), s2(), s1()])
    assert system.sessions == [] and system.item_count() == 0  # refused before anything was ingested
    await system.ingest(s1())
    with pytest.raises(MemoryInputError, match="duplicate session id"):
        await system.ingest_all([s2(), s1(datetime(2023, 9, 1, tzinfo=UTC))])
    assert [s.id for s in system.sessions] == ["s1"]


async def test_empty_sessions_add_no_memory(system):
    day = datetime(2023, 5, 1, tzinfo=UTC)
    await system.ingest(Session(id="e1", date=day, turns=[]))
    await system.ingest(Session(id="e2", date=day + timedelta(days=1), turns=[
        Turn(id="e2_1", role="user", content="   "), Turn(id="e2_2", role="assistant", content="\n")]))
    stats = system.stats()
    assert stats.sessions == 2 and stats.empty_sessions == 2
    assert system.item_count() == 0 and stats.items == 0 and stats.llm_calls == 0
    assert await system.recall("what about the cat?", NOW) == []
    r = await system.respond("What is my cat called?", NOW)
    assert r.answer and r.context == "" and r.context_tokens == 0 and r.recalled == []
    # An empty session does not hide the memory of a real one.
    await system.ingest(s1(day + timedelta(days=2)))
    assert system.item_count() > 0 and system.stats().empty_sessions == 2


async def test_empty_turns_are_dropped_from_a_session(system):
    s = s1()
    s.turns.append(Turn(id="s1_x", role="user", content="  "))
    await system.ingest(s)
    r = await system.respond("What is my cat called?", NOW)
    assert "s1_x" not in {t for item in r.recalled for t in item.turn_ids}


async def test_naive_and_aware_datetimes_mix_as_utc(system):
    naive = datetime(2023, 5, 1, 10, 0)  # taken as 10:00 UTC
    plus2 = timezone(timedelta(hours=2))
    await system.ingest(s1(naive))
    await system.ingest(s2(datetime(2023, 5, 2, 12, 0, tzinfo=plus2)))
    assert [s.date for s in system.sessions] == [datetime(2023, 5, 1, 10, 0, tzinfo=UTC),
                                                 datetime(2023, 5, 2, 10, 0, tzinfo=UTC)]
    # 11:00 at +02:00 is 09:00 UTC: before s1, so out of order (compared in UTC, no TypeError).
    with pytest.raises(MemoryInputError, match=r"2023-05-01T09:00:00\+00:00"):
        await system.ingest(s3(datetime(2023, 5, 1, 11, 0, tzinfo=plus2)))
    await system.ingest(s3(datetime(2023, 7, 1, 10, 0)))
    items = await system.recall("Where is Maya moving?", datetime(2023, 8, 1, 12, 0))  # naive now
    assert all(i.time.tzinfo is not None for i in items)
    for now in (datetime(2023, 8, 1, 12, 0), datetime(2023, 8, 1, 14, 0, tzinfo=plus2)):
        r = await system.respond("Where is my sister Maya moving?", now)
        assert r.answer  # (what is recalled after weeks depends on the system: some forget)


async def test_ingest_all_with_mixed_datetimes_sorts_in_utc(system):
    plus2 = timezone(timedelta(hours=2))
    # As wall-clock times these would sort s2, s1; in UTC s1 (09:00) comes before s2 (10:00).
    await system.ingest_all([s2(datetime(2023, 5, 1, 10, 0)), s1(datetime(2023, 5, 1, 11, 0, tzinfo=plus2))])
    assert [s.id for s in system.sessions] == ["s1", "s2"]


async def test_recall_and_respond_before_any_ingest(system):
    assert await system.recall("anything at all?", NOW) == []
    assert await system.recall("anything at all?", datetime(2023, 1, 1)) == []  # naive now
    r = await system.respond("What is my cat called?", NOW)
    assert isinstance(r.answer, str) and r.answer.strip()
    assert r.context == "" and r.context_tokens == 0 and r.recalled == []
    assert r.usage.calls == 1  # the answer itself
    dialogue = [Turn(id="t1", role="user", content="Hi! Do you remember my cat?")]
    r = await system.respond(dialogue, NOW)
    assert r.answer.strip() and r.context == ""
    stats = system.stats()
    assert stats.sessions == 0 and stats.items == 0


async def test_empty_question_is_refused(system):
    with pytest.raises(MemoryInputError, match="non-empty question"):
        await system.respond("   ", NOW)
    with pytest.raises(MemoryInputError):
        await system.respond([], NOW)


async def test_reset_allows_earlier_dates_again(system):
    await system.ingest(s3())
    system.reset()
    await system.ingest(s1())  # older than s3, but s3 was forgotten
    assert [s.id for s in system.sessions] == ["s1"]


def test_bad_setting_is_a_config_error():
    from chateval.util.errors import ConfigError

    for name in SYSTEMS:
        with pytest.raises(ConfigError, match=f"memory system '{name}': setting 'no_such_knob'"):
            MEMORY_SYSTEMS.get(name)(ModelLayer(ModelSpec.parse("offline")), settings={"no_such_knob": 1},
                                     embedder=make_embedder("hash", cache=False))
