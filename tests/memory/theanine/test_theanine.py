"""THEANINE (Ong et al., NAACL 2025), offline: the linking rule, timeline untangling (exact on a
branching graph, bounded on large ones), persistence, prompts, ablations, and the sample MSC
episode end to end."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from chateval.datasets import load_msc
from chateval.memory import MEMORY_SYSTEMS, MemoryInputError, Session, Turn
from chateval.memory.answer import ANSWER, AnswerInputs
from chateval.memory.embeddings import make_embedder
from chateval.memory.systems import theanine as th
from chateval.memory.timeline_graph import RELATIONS, GraphFileError, TimelineGraph, window
from chateval.models import ModelLayer, ModelSpec
from chateval.util.prompts import get_prompts

from ...conftest import SHARED, shared

SAMPLE = SHARED / "theanine" / "sample_dialogue.json"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def day(n: int) -> datetime:
    return T0 + timedelta(days=n)


def make(settings: dict | None = None):
    return MEMORY_SYSTEMS.get("theanine")(ModelLayer(ModelSpec.parse("offline")), settings=settings,
                                          embedder=make_embedder("hash", cache=False))


def session(n: int, *texts: str) -> Session:
    sid = f"s{n}"
    return Session(id=sid, date=day(n), turns=[Turn(id=f"{sid}-t{i + 1}", role="user", content=t)
                                               for i, t in enumerate(texts)])


def graph(nodes: dict[str, int], edges: list[tuple[str, str]]) -> TimelineGraph:
    g = TimelineGraph()
    for mid, d in nodes.items():
        g.add_memory(mid, text=f"event {mid}", time=day(d))
    for a, b in edges:
        g.link(a, b, "SameTopic")
    return g


def steps(system) -> Counter:
    return Counter(r.step for r in system.log.records)


@pytest.fixture(scope="module")
def episode():
    return load_msc(shared("theanine", "sample_dialogue.json"))[0]


# --- Phase I-2: the linking rule --------------------------------------------------------------
def test_linking_targets_one_per_component_most_recent_related_memory():
    # Component 1: a1 -> a2 -> a3 (a3 newest but unrelated); component 2: b1 -> b2; c1 alone.
    g = graph({"a1": 1, "a2": 2, "a3": 5, "b1": 1, "b2": 3, "c1": 4}, [("a1", "a2"), ("a2", "a3"), ("b1", "b2")])
    related = {"a1": "Cause", "a2": "SameTopic", "b1": "Changed", "b2": "Want"}
    assert g.linking_targets(related) == [("a2", "SameTopic"), ("b2", "Want")]  # oldest first
    assert g.linking_targets({"a1": "Cause", "c1": "React"}) == [("a1", "Cause"), ("c1", "React")]
    assert g.linking_targets({}) == []
    assert g.linking_targets({"unknown": "Cause"}) == []


def test_edges_go_forward_in_time_only():
    g = graph({"old": 1, "new": 2}, [])
    with pytest.raises(ValueError):
        g.link("new", "old", "Cause")


def test_system_links_to_the_most_recent_related_memory_of_each_component(monkeypatch):
    """Relations come from a fake model: related iff the new memory names a word of the old one."""
    calls = []

    async def fake_run(layer, inputs, **kw):
        calls.append(inputs)
        new = set(inputs.new.event.lower().split()) & {"alpha", "beta"}
        return th.RelationOutput(relations=[
            th.RelationLabel(memory_id=c.id, relation="SameTopic" if new & set(c.event.lower().split()) else None)
            for c in inputs.candidates])

    monkeypatch.setattr(th.RELATE_MEMORIES, "run", fake_run)
    s = make({"linking": "batch"})

    async def go():
        await s.ingest(session(1, "alpha apples grow in the orchard", "beta bananas grow on the island"))
        await s.ingest(session(2, "alpha apples were picked today by hand"))
        await s.ingest(session(3, "alpha and beta fruit salad was served with cream"))
        await s.ingest(session(4, "gamma rays were measured in the laboratory"))

    import asyncio

    asyncio.run(go())
    g = s.graph
    assert len(calls) == 3  # session 1 has no associative memories: no relation call for it
    assert {c.new.event.split(": ", 1)[1] for c in calls} == {"alpha apples were picked today by hand",
                                                              "alpha and beta fruit salad was served with cream",
                                                              "gamma rays were measured in the laboratory"}
    assert set(g.g.in_edges("s2#m1")) == {("s1#m1", "s2#m1")}
    # s3 relates to s1#m1, s2#m1 (one component) and s1#m2 (another): one link per component,
    # to the most recent related memory: s2#m1, not s1#m1.
    assert set(g.g.predecessors("s3#m1")) == {"s2#m1", "s1#m2"}
    assert g.relation("s2#m1", "s3#m1") == "SameTopic"
    # Every relation None: no link.
    assert g.g.in_degree("s4#m1") == 0


# --- Phase II-1: timeline untangling ----------------------------------------------------------
BRANCHING = graph(
    {"r1": 0, "r2": 1, "x": 2, "y": 3, "z": 3, "w": 4, "a": 0, "b": 1, "c": 1, "d": 2, "e": 3, "f": 3},
    [("r1", "x"), ("r2", "x"), ("x", "y"), ("x", "z"), ("y", "w"),
     ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e"), ("d", "f")],
)


@pytest.mark.parametrize("through,expected", [
    # x has two roots; the component's oldest (r1) starts every timeline; two ends (w, z).
    ("x", [["r1", "x", "y", "w"], ["r1", "x", "z"]]),
    ("y", [["r1", "x", "y", "w"]]),
    ("r2", [["r2", "x", "y", "w"], ["r2", "x", "z"]]),  # r1 does not lead to r2: r2 is its own start
    ("w", [["r1", "x", "y", "w"]]),
    ("d", [["a", "b", "d", "e"], ["a", "b", "d", "f"], ["a", "c", "d", "e"], ["a", "c", "d", "f"]]),
    ("b", [["a", "b", "d", "e"], ["a", "b", "d", "f"]]),
])
def test_raw_timelines_on_a_branching_graph(through, expected):
    got = BRANCHING.enumerate_timelines(through, 100)
    assert sorted(got) == sorted(expected)
    assert BRANCHING.count_timelines(through) == len(expected)
    assert all(BRANCHING.is_path(p) and through in p for p in got)


def test_sampling_picks_n_of_the_timelines_deterministically():
    every = BRANCHING.enumerate_timelines("d", 100)
    a = BRANCHING.sample_timelines("d", 2, random.Random(7))
    b = BRANCHING.sample_timelines("d", 2, random.Random(7))
    assert a == b and len(a) == 2 and len({tuple(p) for p in a}) == 2 and all(p in every for p in a)
    assert sorted(BRANCHING.sample_timelines("d", 10, random.Random(1))) == sorted(every)
    # Beyond the cap the count-weighted walks take over, still within the same set.
    walked = BRANCHING.sample_timelines("d", 3, random.Random(3), cap=1)
    assert len(walked) == 3 and all(p in every for p in walked)


def ladder(n: int) -> TimelineGraph:
    """Two memories a day, each linked to both of the next day's: 2^(n/2 - 1) paths end to end."""
    g = TimelineGraph()
    for i in range(n):
        g.add_memory(f"m{i}", text=f"event {i}", time=day(i // 2))
        if i >= 2:
            for j in ((i // 2 - 1) * 2, (i // 2 - 1) * 2 + 1):
                g.link(f"m{j}", f"m{i}", "SameTopic")
    return g


def test_enumeration_is_bounded_on_a_graph_of_1200_memories():
    g = ladder(1200)
    through = "m600"  # day 300
    total = g.count_timelines(through)
    assert total == 2 ** 598  # day 0 fixed (the oldest), 299 free days either side: counted, never listed
    listed = g.enumerate_timelines(through, 50)
    assert len(listed) == 50 and len({tuple(p) for p in listed}) == 50
    sample = g.sample_timelines(through, 4, random.Random(0), cap=256)
    assert sample == g.sample_timelines(through, 4, random.Random(0), cap=256)
    assert len(sample) == 4
    for p in sample + listed:
        assert g.is_path(p) and through in p and len(p) == 600
        assert p[0] == "m0"  # the component's oldest memory
        assert g.g.out_degree(p[-1]) == 0


def test_a_long_chain_does_not_hit_the_recursion_limit():
    g = graph({f"c{i}": i for i in range(1500)}, [(f"c{i}", f"c{i + 1}") for i in range(1499)])
    (path,) = g.enumerate_timelines("c700", 10)
    assert len(path) == 1500
    cut = window(path, "c700", 12)
    assert len(cut) == 12 and "c700" in cut and g.is_path(cut)
    assert window(path, "c0", 5) == ["c0", "c1", "c2", "c3", "c4"]
    assert window(path, "c1499", 3) == ["c1497", "c1498", "c1499"]


# --- offline relation rule and the relation schema --------------------------------------------
def test_offline_relation_rule():
    old = "user said: I adopted a puppy named Max from the shelter"
    assert th.offline_relation("user said: I bought a new car yesterday", old) is None
    assert th.offline_relation("user said: Max the puppy now sleeps in my bed", old) == "Changed"
    assert th.offline_relation("user said: Max the puppy is calm because of the shelter training", old) == "Reason"
    assert th.offline_relation("user said: I want Max the puppy to learn tricks", old) == "Want"
    assert th.offline_relation("user said: Max the puppy and I walked to the beach", old) == "SameTopic"
    assert set(RELATIONS) == {"Changed", "Cause", "Reason", "HinderedBy", "React", "Want", "SameTopic"}


@pytest.mark.parametrize("raw,expected", [("same topic", "SameTopic"), ("Hindered By", "HinderedBy"),
                                          ("none", None), (None, None), ("causes", "Cause"), ("Changed", "Changed")])
def test_relation_labels_are_normalised(raw, expected):
    assert th.RelationLabel(memory_id="M1", relation=raw).relation == expected


# --- a small user with a chain of memories ----------------------------------------------------
PUPPY = [
    session(1, "I adopted a puppy named Max from the shelter"),
    session(2, "Max the puppy now sleeps in my bed every night"),
    session(3, "Max the puppy and I walked to the beach today"),
]
BEACH = [Turn(id="d1", role="assistant", content="Hi! What have you been up to?"),
         Turn(id="d2", role="user", content="I walked to the beach again today, the beach was lovely.")]


async def puppy_system(settings: dict | None = None):
    s = make(settings)
    await s.ingest_all(PUPPY)
    return s


async def test_puppy_chain_graph_and_refinement():
    s = await puppy_system({"k": 1})
    g = s.graph
    assert sorted(g.g.edges) == [("s1#m1", "s2#m1"), ("s2#m1", "s3#m1")]  # s3 links only to the most recent
    assert g.relation("s1#m1", "s2#m1") == "Changed" and g.relation("s2#m1", "s3#m1") == "SameTopic"
    before = steps(s)
    resp = await s.respond(BEACH, day(4))
    after = steps(s) - before
    assert after == Counter({"theanine_refine": 1, "theanine_response": 1})  # one distinct timeline
    assert resp.prompt == "theanine_response"
    (t,) = s.last_timelines
    assert t.path == ["s1#m1", "s2#m1", "s3#m1"] and t.retrieved == ["s3#m1"] == [i.id for i in resp.recalled]
    assert t.kept == ["s3#m1"]  # offline refinement keeps what shares words with the dialogue
    assert "beach" in resp.context and "shelter" not in resp.context
    assert resp.context.startswith("Timeline 1 (")


async def test_ablation_refine_false_gives_the_raw_timeline():
    s = await puppy_system({"refine": False})
    before = steps(s)
    resp = await s.respond(BEACH, day(4))
    assert "theanine_refine" not in steps(s) - before
    lines = resp.context.splitlines()
    assert lines[0].startswith("Timeline 1 (2024-01-02 to 2024-01-04")
    assert "shelter" in lines[1] and "(Changed)" in lines[2] and "(SameTopic)" in lines[3] and "beach" in lines[3]


async def test_ablation_events_format_shuffles_single_events():
    s = await puppy_system({"refine": False, "timeline_format": "events"})
    resp = await s.respond(BEACH, day(4))
    again = await s.respond(BEACH, day(4))
    assert resp.context == again.context  # seeded
    lines = resp.context.splitlines()
    assert len(lines) == 3 and all(line.startswith("- [2024-01-0") for line in lines)
    assert "Timeline" not in resp.context and "(Changed)" not in resp.context
    raw = await puppy_system({"refine": False})
    raw_lines = (await raw.respond(BEACH, day(4))).context.splitlines()[1:]
    raw_events = {line.split("] ", 1)[1].split(") ", 1)[-1] for line in raw_lines}
    assert {line.split("] ", 1)[1] for line in lines} == raw_events
    orders = set()
    for seed in range(6):
        s2 = await puppy_system({"refine": False, "timeline_format": "events", "seed": seed})
        orders.add((await s2.respond(BEACH, day(4))).context)
    assert len(orders) > 1  # the order is shuffled, not chronological


async def test_ablation_relation_aware_false_links_by_similarity_without_llm_calls():
    s = await puppy_system({"relation_aware": False})
    assert "theanine_relation" not in steps(s)
    g = s.graph
    # The paper's ablation: each later memory is linked to all its j (= 3) associative memories.
    assert sorted(g.g.edges) == [("s1#m1", "s2#m1"), ("s1#m1", "s3#m1"), ("s2#m1", "s3#m1")]
    for a, b, d in g.g.edges(data=True):
        assert d["relation"] is None and d["kind"] == "similarity" and g.key(a) < g.key(b)
    one = await puppy_system({"relation_aware": False, "j": 1})
    assert sorted(one.graph.g.edges) == [("s1#m1", "s2#m1"), ("s2#m1", "s3#m1")]  # j = 1: the most similar only
    aware = await puppy_system()
    assert steps(aware)["theanine_relation_pair"] == 3  # one call per (earlier, new) pair: 1 + 2


# --- persistence --------------------------------------------------------------------------------
async def test_graph_persists_per_user_and_reloads_identically(tmp_path, episode):
    path = tmp_path / "users" / "alice.json"
    s = make({"graph_path": str(path)})
    await s.ingest_all(episode.sessions[:4])
    assert path.exists()
    saved = json.loads(path.read_text())
    assert saved["graph"]["format"] == 1 and len(saved["nodes"]) == len(s.graph)

    r = make({"graph_path": str(path)})  # a new process for the same user
    assert r.graph.to_json() == s.graph.to_json()
    assert sorted(r.graph.g.edges(data=True)) == sorted(s.graph.g.edges(data=True))
    assert dict(r.graph.g.nodes(data=True)) == dict(s.graph.g.nodes(data=True))
    assert [x.id for x in r.sessions] == [x.id for x in episode.sessions[:4]]
    query = [Turn(id="q", role="Speaker B", content="How is the proposal with the ring going?")]
    a, b = await s.respond(query, day(60)), await r.respond(query, day(60))
    assert a.context == b.context and [i.id for i in a.recalled] == [i.id for i in b.recalled]
    with pytest.raises(MemoryInputError):
        await r.ingest(episode.sessions[0])  # already in the user's graph
    await r.ingest(episode.sessions[4])
    assert len(make({"graph_path": str(path)}).graph) == len(r.graph) > len(s.graph)
    r.reset()
    assert len(make({"graph_path": str(path)}).graph) == 0


def test_a_corrupt_graph_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text('{"graph": {"format": 1}, "nodes": [{"id": "x"}], "edges": []}')
    with pytest.raises(GraphFileError, match="malformed memory graph"):
        make({"graph_path": str(bad)})
    bad.write_text("not json")
    with pytest.raises(GraphFileError, match="cannot read"):
        make({"graph_path": str(bad)})


# --- prompts ------------------------------------------------------------------------------------
def rendered(step, inputs) -> str:
    return "\n".join(m.content for m in step.messages(inputs, get_prompts()))


def test_relation_prompt_renders_every_field():
    inp = th.RelationInputs(
        new=th.MemoryRef(id="NEW", event="Max now sleeps in my bed", time=day(9), conversation="user: Max sleeps here"),
        candidates=[th.MemoryRef(id="M1", event="I adopted Max", time=day(2), conversation="user: I adopted Max today"),
                    th.MemoryRef(id="M2", event="I like beaches", time=day(3), conversation="")])
    text = rendered(th.RELATE_MEMORIES, inp)
    for needle in ("Max now sleeps in my bed", "user: Max sleeps here", "2024-01-10", "memory M1 (2024-01-03)",
                   "I adopted Max", "user: I adopted Max today", "memory M2 (2024-01-04)", "I like beaches",
                   *RELATIONS, '"relations"'):
        assert needle in text, needle


def test_refine_and_response_prompts_render_every_field():
    inp = th.RefineInputs(
        dialogue=[Turn(id="1", role="Speaker B", content="How is Max?"), Turn(id="2", role="Speaker A", content="Fine!")],
        timeline=[th.TimelineEvent(id="E1", event="I adopted Max", time=day(2)),
                  th.TimelineEvent(id="E2", event="Max now sleeps in my bed", time=day(9), relation="Changed",
                                   retrieved=True)],
        now=day(30))
    text = rendered(th.REFINE_TIMELINE, inp)
    for needle in ("E1 [2024-01-03]", "I adopted Max", "E2 [2024-01-10] (Changed) *matched*", "Max now sleeps in my bed",
                   "Event E2 is the one", "Speaker B:", "How is Max?", "Speaker A:", "Fine!", "2024-01-31", '"events"'):
        assert needle in text, needle
    context = "Timeline 1 (2024-01-03 to 2024-01-10):\n- [2024-01-03] I adopted Max\n- [2024-01-10] (Changed) Max sleeps"
    answer = rendered(ANSWER, AnswerInputs(question="Fine!", dialogue=inp.dialogue, context=context, now=day(30)))
    for needle in (context, "How is Max?", "Fine!", "Speaker B:", "2024-01-31", "Reply to the user's last message"):
        assert needle in answer, needle


# --- the sample episode end to end ------------------------------------------------------------
async def test_sample_episode_graph_and_timelines(episode):
    s = make()
    await s.ingest_all(episode.sessions)
    g = s.graph
    assert len(g) == s.item_count() == len(s.items) > 40
    labels = Counter(d["relation"] for _, _, d in g.g.edges(data=True))
    assert labels and set(labels) <= set(RELATIONS) and len(labels) >= 2
    for a, b in g.g.edges:
        assert g.node(a)["time"] < g.node(b)["time"]  # old -> new, across sessions
    # LLM calls per session: 1 extraction + 1 relation call per (new, associative) pair, j = 3.
    st = steps(s)
    assert st["theanine_events"] == 5 and "extract_facts" not in st
    before_per_session = [sum(1 for m in g.g.nodes if g.node(m)["session_id"] in {x.id for x in episode.sessions[:i]})
                          for i in range(len(episode.sessions))]
    per_session = [sum(1 for m in g.g.nodes if g.node(m)["session_id"] == x.id) for x in episode.sessions]
    assert st["theanine_relation_pair"] == sum(n * min(3, b) for n, b in zip(per_session, before_per_session))
    # Both speakers' events are memories, attributed by name.
    assert {g.node(m)["text"].split(" said:")[0] for m in g.g.nodes} == {"Speaker A", "Speaker B"}

    dialogue = [Turn(id="x1", role="Speaker B", content="How is the proposal planning going?"),
                Turn(id="x2", role="Speaker A", content="I want to propose at Universal Studios with the ring.")]
    before = steps(s)
    resp = await s.respond(dialogue, episode.sessions[-1].date + timedelta(days=7))
    assert len(resp.recalled) == 3
    paths = [p for item in resp.recalled for p in item.meta["timelines"]]
    assert paths
    for item in resp.recalled:
        for p in item.meta["timelines"]:
            assert item.id in p and g.is_path(p)
            assert g.g.out_degree(p[-1]) == 0 or len(p) == s.settings.max_events
    assert any(len(p) > 1 for p in paths) or g.g.number_of_edges() == 0
    used = steps(s) - before
    assert used["theanine_response"] == 1 and used["theanine_refine"] == len({tuple(p) for p in paths})
    assert resp.context.count("Timeline ") == len(s.last_timelines)
    for t in s.last_timelines:
        assert set(t.kept) <= set(t.path) and set(t.retrieved) <= set(t.path)
    # The dialogue, not only its last turn, is the retrieval query (oldest turn first, as the
    # original code; newest first as an option).
    assert th.dialogue_query(dialogue, "x", 6) == ("Speaker B: How is the proposal planning going?\n"
                                                  "Speaker A: I want to propose at Universal Studios with the ring.")
    assert th.dialogue_query(dialogue, "x", 6, "newest_first") == (
        "Speaker A: I want to propose at Universal Studios with the ring.\n"
        "Speaker B: How is the proposal planning going?")
    assert th.dialogue_query(None, "a question", 6) == "a question"


def test_settings_are_validated():
    from chateval.util.errors import ConfigError

    with pytest.raises(ConfigError, match="theanine"):
        make({"timeline_format": "graph"})
    with pytest.raises(ConfigError, match="j"):
        make({"j": 0})
