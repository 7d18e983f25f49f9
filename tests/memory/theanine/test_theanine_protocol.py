"""THEANINE as the paper and the original code describe it (issue 16, items 1-7): the response
step as the speaker, per-pair relation linking with whole sessions, the linking rule on G_t, the
"w/o relation-aware linking" ablation, the timeline start, events of both speakers, and
inspectable traces. Offline, with fake relation steps or a fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from chateval.memory import MEMORY_SYSTEMS, Session, Turn
from chateval.memory.embeddings import make_embedder
from chateval.memory.systems import theanine as th
from chateval.memory.systems.theanine.steps import EventInputs, next_speaker, session_excerpt
from chateval.memory.timeline_graph import TimelineGraph
from chateval.models import ModelLayer, ModelSpec
from chateval.util.prompts import get_prompts
from chateval.testing.fake_openai import FakeOpenAIServer

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def day(n: int) -> datetime:
    return T0 + timedelta(days=n)


def make(settings: dict | None = None, layer: ModelLayer | None = None):
    return MEMORY_SYSTEMS.get("theanine")(layer or ModelLayer(ModelSpec.parse("offline")), settings=settings,
                                          embedder=make_embedder("hash", cache=False))


def session(n: int, *texts: str, roles: tuple[str, ...] = ("user",)) -> Session:
    sid = f"s{n}"
    return Session(id=sid, date=day(n), turns=[Turn(id=f"{sid}-t{i + 1}", role=roles[i % len(roles)], content=t)
                                               for i, t in enumerate(texts)])


def rendered(step, inputs) -> str:
    return "\n".join(m.content for m in step.messages(inputs, get_prompts()))


# --- item 3: the linking rule on G_t ----------------------------------------------------------
def fake_pairs(monkeypatch, related: dict[str, set[str]]):
    """RELATE_PAIR from a table: new memory word -> the earlier memory words it relates to."""
    calls = []

    async def fake_run(layer, inputs, **kw):
        calls.append((inputs.earlier.event, inputs.new.event))
        new = inputs.new.event.split(": ", 1)[1].split()[0]
        old = inputs.earlier.event.split(": ", 1)[1].split()[0]
        return th.PairRelation(explanation="table", relation="SameTopic" if old in related.get(new, ()) else None)

    monkeypatch.setattr(th.RELATE_PAIR, "run", fake_run)
    return calls


def linked(monkeypatch, related: dict[str, set[str]], new_order: tuple[str, str]) -> set[tuple[str, str]]:
    fake_pairs(monkeypatch, related)
    s = make({"j": 5})
    words = {"A": "alpha apples grow in the orchard", "B": "beta bananas grow on the island",
             "n1": "n1 fruit salad was served", "n2": "n2 fruit smoothie was blended"}

    async def go():
        await s.ingest(session(1, words["A"]))
        await s.ingest(session(2, words["B"]))
        await s.ingest(session(3, *(words[n] for n in new_order)))

    asyncio.run(go())
    name = {mid: s.graph.node(mid)["text"].split(": ", 1)[1].split()[0] for mid in s.graph.g.nodes}
    name = {mid: {"alpha": "A", "beta": "B"}.get(w, w) for mid, w in name.items()}
    return {(name[a], name[b]) for a, b in s.graph.g.edges}


def test_linking_is_computed_on_the_graph_before_the_session(monkeypatch):
    # The case: n1 <- {A, B}, then n2 <- {B}. A and B are separate components of G_t.
    assert linked(monkeypatch, {"n1": {"alpha", "beta"}, "n2": {"beta"}}, ("n1", "n2")) == {
        ("A", "n1"), ("B", "n1"), ("B", "n2")}
    # n2 <- {A, B} too: on G_t A and B are still two components, so n2 links to both, although
    # n1 (earlier in the session) already joined them; updating components while linking would
    # give n2 a single edge (to B, the most recent), and a different graph in the other order.
    both = {"n1": {"alpha", "beta"}, "n2": {"alpha", "beta"}}
    expected = {("A", "n1"), ("B", "n1"), ("A", "n2"), ("B", "n2")}
    assert linked(monkeypatch, both, ("n1", "n2")) == expected
    assert linked(monkeypatch, both, ("n2", "n1")) == expected


# --- item 2: per-pair relation protocol -------------------------------------------------------
LONG = [f"turn number {i} about the garden and the weather and many other things" for i in range(60)]


def test_session_excerpt_is_the_whole_session_within_budget_else_a_window_around_the_cited_turn():
    turns = [Turn(id=f"t{i}", role="A" if i % 2 else "B", content=c) for i, c in enumerate(LONG)]
    assert session_excerpt(turns[:4], ["t1"], 1000).splitlines() == [f"{t.role}: {t.content}" for t in turns[:4]]
    cut = session_excerpt(turns, ["t30"], 200)
    lines = cut.splitlines()
    assert lines[0] == "…" and lines[-1] == "…"  # turns were left out on both sides
    assert any(line.endswith(LONG[30]) for line in lines) and len(cut) <= 4 * 200 + 10
    body = [line for line in lines if line != "…"]
    idx = [LONG.index(line.split(": ", 1)[1]) for line in body]
    assert idx == list(range(idx[0], idx[-1] + 1)) and idx[0] <= 30 <= idx[-1]  # contiguous whole turns


def test_pair_prompt_shows_both_whole_sessions_the_rules_and_asks_for_explanation_first():
    inp = th.PairInputs(earlier=th.MemoryRef(id="EARLIER", event="Speaker 1 adopted a dog", time=day(1),
                                             conversation="Speaker 1: I adopted a dog\nSpeaker 2: Lovely!"),
                        new=th.MemoryRef(id="NEW", event="Speaker 1's dog now sleeps inside", time=day(9),
                                         conversation="Speaker 2: How is the dog?\nSpeaker 1: Sleeps inside now."))
    text = rendered(th.RELATE_PAIR, inp)
    for needle in ("Speaker 1: I adopted a dog", "Speaker 2: Lovely!", "Speaker 2: How is the dog?",
                   "Sleeps inside now.", "2024-01-02", "2024-01-10", "clear evidence", "answer None",
                   "who each memory is about", "explanation first", '{"explanation": "...", "relation": "..."}'):
        assert needle in text, needle
    assert th.PairRelation.model_validate({"explanation": "x", "relation": "None"}).relation is None


def relation_server_reply(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    if "list the events worth remembering" in prompt:
        sid = "s2" if "new job" in prompt else "s1"
        return json.dumps({"facts": [{"text": f"Speaker 1 {'has a new job' if sid == 's2' else 'hates the old job'}",
                                      "turn_ids": [f"{sid}-t1"]},
                                     {"text": f"Speaker 2 {'bakes bread' if sid == 's2' else 'likes baking'}",
                                      "turn_ids": [f"{sid}-t2"]}]})
    if "EARLIER memory" in prompt:
        return json.dumps({"explanation": "The job changed.", "relation": "Changed"})
    if "Refine the timeline" in prompt:
        return json.dumps({"events": [{"id": "E1", "text": "Speaker 1 hated the old job."},
                                      {"id": "E2", "text": "Speaker 1 has a new job now."}], "note": "a change"})
    return "Speaker 2: Congrats on the new job, how is it going?"


def test_wire_level_pair_linking_events_of_both_speakers_and_the_speaker_response():
    with FakeOpenAIServer(responder=relation_server_reply) as server:
        layer = ModelLayer(ModelSpec.parse("openai-compatible/x", server.base_url), structured="off")
        s = make({"k": 1, "j": 2}, layer)
        roles = ("Speaker 1", "Speaker 2")

        async def go():
            await s.ingest(session(1, "I hate my old job so much", "I like baking on weekends", roles=roles))
            await s.ingest(session(2, "I started a new job last week", "I baked bread today", roles=roles))
            dialogue = [Turn(id="d1", role="Speaker 1", content="Guess what, the new job is great!")]
            return await s.respond(dialogue, day(5))

        resp = asyncio.run(go())
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    events = [p for p in prompts if "list the events worth remembering" in p]
    assert len(events) == 2 and all("Speaker 1 and Speaker 2" in p for p in events)
    pairs = [p for p in prompts if "EARLIER memory" in p]
    assert len(pairs) == 4  # 2 new memories x 2 associative memories, one call each
    # The calls of one new memory open with the same bytes, its session included (a cacheable prefix).
    for new_event in {p.split("<<<BEGIN NEW MEMORY>>>\n")[1].split("\n")[0] for p in pairs}:
        mine = [p for p in pairs if f"<<<BEGIN NEW MEMORY>>>\n{new_event}\n" in p]
        assert len(mine) == 2 and mine[0][:mine[0].index("<<<BEGIN EARLIER MEMORY")] == \
            mine[1][:mine[1].index("<<<BEGIN EARLIER MEMORY")]
        assert "<<<END NEW SESSION>>>" in mine[0][:mine[0].index("<<<BEGIN EARLIER MEMORY")]
    # Whole sessions, not only the cited turn: both turns of each session are in every pair prompt.
    assert all("I hate my old job so much" in p and "I like baking on weekends" in p and
               "I started a new job last week" in p and "I baked bread today" in p for p in pairs)
    g = s.graph
    # s1's two memories are two components of G_t, both related to each new memory: two links each.
    assert g.g.number_of_edges() == 4
    for a, b, d in g.g.edges(data=True):
        assert d["relation"] == "Changed" and d["explanation"] == "The job changed."
    (response_prompt,) = [p for p in prompts if "next utterance" in p]
    assert "You are Speaker 2" in response_prompt and "don't know" not in response_prompt
    assert "Guess what, the new job is great!" in response_prompt
    assert resp.prompt == "theanine_response"
    assert resp.answer == "Congrats on the new job, how is it going?"  # the echoed name is dropped
    (t,) = resp.trace["timelines"]
    assert [e["relation"] for e in t["raw"]] == [None, "Changed"]
    assert [e["text"] for e in t["refined"]] == ["Speaker 1 hated the old job.", "Speaker 1 has a new job now."]
    assert t["note"] == "a change" and resp.trace["retrieved"][0]["id"] in t["retrieved"]


def test_batch_linking_is_one_call_per_new_memory():
    s = make({"linking": "batch", "j": 3})
    asyncio.run(s.ingest_all([session(1, "I adopted a puppy named Max", "Max the puppy chews shoes"),
                              session(2, "Max the puppy now sleeps in my bed", "Max the puppy learned to sit")]))
    st = Counter(r.step for r in s.log.records)
    assert st["theanine_relation"] == 2 and "theanine_relation_pair" not in st
    p = make({"linking": "pair", "j": 3})
    asyncio.run(p.ingest_all([session(1, "I adopted a puppy named Max", "Max the puppy chews shoes"),
                              session(2, "Max the puppy now sleeps in my bed", "Max the puppy learned to sit")]))
    assert Counter(r.step for r in p.log.records)["theanine_relation_pair"] == 4


# --- item 1: which response step runs ---------------------------------------------------------
def test_dialogue_gets_the_speaker_step_and_a_question_the_qa_step():
    s = make()
    asyncio.run(s.ingest(session(1, "I adopted a puppy named Max from the shelter", "Max the puppy is so cute",
                                 roles=("Speaker 1", "Speaker 2"))))
    dialogue = [Turn(id="d1", role="Speaker 1", content="Max the puppy learned a new trick!")]
    r = asyncio.run(s.respond(dialogue, day(3)))
    assert r.prompt == "theanine_response" and "don't have that information" not in r.answer
    q = asyncio.run(s.respond("What is the puppy called?", day(3)))
    assert q.prompt == "memory_answer"
    qa = make({"dialogue_prompt": "qa"})
    asyncio.run(qa.ingest(session(1, "I adopted a puppy named Max from the shelter")))
    assert asyncio.run(qa.respond(dialogue, day(3))).prompt == "memory_answer"


def test_next_speaker():
    d = [Turn(id="1", role="Speaker 1", content="hi")]
    assert next_speaker(d, []) == "assistant"
    assert next_speaker(d, ["Speaker 1", "Speaker 2"]) == "Speaker 2"
    d2 = d + [Turn(id="2", role="Speaker 2", content="yo"), Turn(id="3", role="Speaker 1", content="so")]
    assert next_speaker(d2, []) == "Speaker 2"
    # TeaFarm marks roles "<name> (user)" / "<name> (you)": the asker's plain name is the same person.
    q = [Turn(id="q", role="Alice (user)", content="Didn't you move to Paris?")]
    assert next_speaker(q, ["Alice", "Bob"]) == "Bob"
    assert next_speaker([Turn(id="a", role="Bob (you)", content="hi")] + q, ["Alice", "Bob"]) == "Bob (you)"


def test_speaker_prompt_renders_every_field():
    inp = th.SpeakerInputs(dialogue=[Turn(id="1", role="Speaker 1", content="How was the trip?")],
                           speaker="Speaker 2", memory="Timeline 1 (...):\n- [2024-01-02] Speaker 2 went to Rome",
                           now=day(30))
    text = rendered(th.RESPOND_AS_SPEAKER, inp)
    for needle in ("You are Speaker 2", "Speaker 1:", "How was the trip?", "Speaker 2 went to Rome", "2024-01-31",
                   "ignore any that do not fit", "same style"):
        assert needle in text, needle


# --- item 6: events of both speakers ----------------------------------------------------------
def test_events_prompt_and_offline_events_cover_both_speakers():
    ses = session(1, "I moved to Berlin for work last spring", "I started learning the cello recently",
                  roles=("Alice", "Bob"))
    inp = EventInputs(session_id=ses.id, date=ses.date, turns=ses.turns, speakers=["Alice", "Bob"])
    text = rendered(th.EXTRACT_EVENTS, inp)
    assert "between Alice and Bob" in text and "Cover every speaker" in text and "begins with the name" in text
    s = make()
    asyncio.run(s.ingest(ses))
    assert sorted(i.text.split(" said:")[0] for i in s.items) == ["Alice", "Bob"]
    # The assistant's turns are events too (a user/assistant session).
    s2 = make()
    asyncio.run(s2.ingest(session(1, "I moved to Berlin for work last spring", "Berlin has great museums to visit",
                                  roles=("user", "assistant"))))
    assert sorted(i.text.split(" said:")[0] for i in s2.items) == ["assistant", "user"]


# --- item 5: timeline start -------------------------------------------------------------------
def test_timelines_start_at_the_components_oldest_memory():
    g = TimelineGraph()
    for mid, d in {"r1": 0, "r2": 1, "x": 2, "y": 3, "q": 5}.items():
        g.add_memory(mid, text=mid, time=day(d))
    for a, b in [("r1", "x"), ("r2", "x"), ("x", "y")]:
        g.link(a, b, "SameTopic")
    assert g.component_oldest("r2") == g.component_oldest("y") == "r1" and g.component_oldest("q") == "q"
    assert all(p[0] == "r1" for p in g.enumerate_timelines("y", 10))
    # r1 cannot reach r2 along edges: the timeline starts at the oldest memory that can (r2 itself).
    assert g.enumerate_timelines("r2", 10) == [["r2", "x", "y"]]
    g.add_memory("z", text="z", time=day(6))
    g.link("q", "z", "Cause")
    g.link("y", "z", "Cause")  # merging two components keeps the older one's oldest memory
    assert g.component_oldest("q") == "r1"


def test_trace_marks_where_each_timeline_starts():
    s = make({"k": 5, "relation_aware": False, "j": 1})
    asyncio.run(s.ingest_all([session(1, "I adopted a puppy named Max from the shelter"),
                              session(2, "Max the puppy now sleeps in my bed every night")]))
    r = asyncio.run(s.respond([Turn(id="d", role="user", content="Max the puppy sleeps in my bed")], day(4)))
    for t in r.trace["timelines"]:
        assert t["start"] == t["raw"][0]["id"] and t["start_is_component_oldest"] is True


# --- item 7: inspectable runs -----------------------------------------------------------------
def test_refine_prompt_names_every_matched_event_and_export_is_node_link_json():
    inp = th.RefineInputs(dialogue=[Turn(id="1", role="A", content="hi")], now=day(9), timeline=[
        th.TimelineEvent(id="E1", event="one", time=day(1), retrieved=True),
        th.TimelineEvent(id="E2", event="two", time=day(2)),
        th.TimelineEvent(id="E3", event="three", time=day(3), retrieved=True)])
    text = rendered(th.REFINE_TIMELINE, inp)
    assert "Events E1 and E3 are the ones that matched" in text and "E1E3" not in text
    one = th.RefineInputs(dialogue=[], now=day(9), timeline=[th.TimelineEvent(id="E1", event="x", time=day(1),
                                                                               retrieved=True)])
    assert "Event E1 is the one that matched" in rendered(th.REFINE_TIMELINE, one)
    s = make()
    asyncio.run(s.ingest_all([session(1, "I adopted a puppy named Max from the shelter"),
                              session(2, "Max the puppy now sleeps in my bed every night")]))
    data = s.export()
    assert data["graph"]["format"] == 1 and len(data["nodes"]) == 2 and len(data["edges"]) == 1
    assert data["edges"][0]["explanation"].startswith("offline rule")
    (edge,) = s.graph.g.edges
    back = TimelineGraph.from_json(json.loads(json.dumps(data)))
    assert back.relation(*edge) == s.graph.relation(*edge) and back.g.edges[edge]["explanation"] == data["edges"][0]["explanation"]


# --- item 1: TeaFarm records which response step ran ------------------------------------------
@pytest.mark.slow
def test_teafarm_records_the_response_step_per_unit(tmp_path):
    from chateval.cli import main

    from ...conftest import shared

    sample = shared("theanine", "sample_dialogue.json")
    out = tmp_path / "tf"
    assert main(["bench", "teafarm", "--data", str(sample), "--systems", "theanine,retrieval", "--answer-model",
                 "offline", "--embedder", "hash", "--per-speaker", "1", "--out", str(out)]) in (0, 1)
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    ok = [r for r in rows if r.get("status") == "ok"]
    assert ok and {r["system"] for r in ok} == {"theanine", "retrieval"}
    for r in ok:
        assert r["prompt"] == ("theanine_response" if r["system"] == "theanine" else "memory_answer")
        assert ("trace" in r) == (r["system"] == "theanine")


# --- the paper's dynamic-k retrieval baseline (Table 5) ----------------------------------------
def test_dynamic_k_retrieves_as_many_memories_as_the_timelines_hold():
    sessions = [session(1, "I adopted a puppy named Max from the shelter", "I bake sourdough bread on Sundays"),
                session(2, "Max the puppy now sleeps in my bed every night", "My sister visited from Boston"),
                session(3, "Max the puppy and I walked to the beach today", "The sourdough starter died last week")]
    dialogue = [Turn(id="d", role="user", content="Max the puppy loved the beach again today")]
    full = make({"k": 1})
    asyncio.run(full.ingest_all(sessions))
    asyncio.run(full.respond(dialogue, day(5)))
    n = len({m for t in full.trace()["timelines"] for m in (e["id"] for e in t["raw"])})
    assert n >= 2  # the puppy chain

    dyn = MEMORY_SYSTEMS.get("theanine_dynamic_k")(ModelLayer(ModelSpec.parse("offline")), settings={"k": 1},
                                                   embedder=make_embedder("hash", cache=False))
    asyncio.run(dyn.ingest_all(sessions))
    before = Counter(r.step for r in dyn.log.records)
    r = asyncio.run(dyn.respond(dialogue, day(5)))
    used = Counter(r.step for r in dyn.log.records) - before
    assert len(r.recalled) == n and all(i.meta["dynamic_k"] == n for i in r.recalled)
    scores = [i.score for i in r.recalled]
    assert scores == sorted(scores, reverse=True)  # by similarity alone
    assert used == Counter({"theanine_response": 1})  # no refinement
    assert "Timeline" not in r.context and len(r.context.splitlines()) == n
    assert r.trace["timelines"] == [] and len(r.trace["retrieved"]) == n
