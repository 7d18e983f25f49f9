"""zep: Zep / Graphiti temporal knowledge graph on graphiti-core, embedded Kuzu (offline, fast)."""

from __future__ import annotations

import inspect
import json
import os
import warnings
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

pytest.importorskip("graphiti_core", reason="graphiti-core is not installed (pip install 'chateval[zep]')")

from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402
from graphiti_core import Graphiti  # noqa: E402
from graphiti_core.driver.kuzu_driver import KuzuDriver  # noqa: E402
from graphiti_core.edges import EntityEdge  # noqa: E402
from graphiti_core.nodes import EntityNode, EpisodicNode  # noqa: E402
from graphiti_core.prompts.dedupe_edges import EdgeDuplicate  # noqa: E402
from graphiti_core.prompts.dedupe_nodes import NodeResolutions  # noqa: E402
from graphiti_core.prompts.extract_edges import EdgeTimestamps  # noqa: E402
from graphiti_core.prompts.extract_nodes import SummarizedEntities  # noqa: E402
from graphiti_core.prompts.lib import prompt_library  # noqa: E402
from graphiti_core.search.search_filters import SearchFilters  # noqa: E402
from graphiti_core.search.search_utils import edge_fulltext_search  # noqa: E402

from chateval.cli import main  # noqa: E402
from chateval.datasets import load_longmemeval  # noqa: E402
from chateval.util.errors import ConfigError  # noqa: E402
from chateval.memory import MEMORY_SYSTEMS, MemoryInputError, Session, Turn, as_utc  # noqa: E402
from chateval.memory import systems as _systems  # noqa: E402,F401
from chateval.memory.embeddings import make_embedder  # noqa: E402
from chateval.memory.types import MemoryItem  # noqa: E402
from chateval.memory.zep import offline, offline_facts, offline_text  # noqa: E402
from chateval.memory.zep.context import format_context  # noqa: E402
from chateval.memory.zep.cross_encoder import EmbeddingCrossEncoder  # noqa: E402
from chateval.memory.zep.embedder import LayerEmbedder  # noqa: E402
from chateval.memory.zep.kuzu_fixes import (  # noqa: E402
    ensure_fulltext_indexes,
    fulltext_index_names,
    fulltext_safe,
    open_kuzu,
)
from chateval.memory.zep.llm import GraphitiMessage, GraphitiStepInputs, LayerLLMClient  # noqa: E402
from chateval.memory.zep.search import SCORE_NAMES  # noqa: E402
from chateval.memory.zep.system import Zep  # noqa: E402
from chateval.models import AutogenBackend, CallLog, ModelLayer, ModelSpec  # noqa: E402
from chateval.models.steps import StepError  # noqa: E402

UTC = timezone.utc
from .conftest import SHARED as DATA  # noqa: E402
ORACLE = DATA / "longmemeval" / "longmemeval_oracle.json"
JAN, JUN, JUL = datetime(2024, 1, 10, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC), datetime(2024, 7, 1, tzinfo=UTC)
PARIS = Session(id="s1", date=JAN, turns=[Turn(id="t1", role="user", content="I live in Paris.")])
BERLIN = Session(id="s2", date=JUN, turns=[Turn(id="t2", role="user", content="I moved to Berlin.")])


def make(**settings) -> Zep:
    return MEMORY_SYSTEMS.get("zep")(ModelLayer(ModelSpec.parse("offline")), settings=settings or None,
                                     embedder=make_embedder("hash", cache=False))


def raw_kuzu() -> KuzuDriver:
    """graphiti's driver exactly as it comes (no workaround), for the tests of the workarounds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return KuzuDriver(db=":memory:")


@pytest.fixture
async def moved():
    """Paris (2024-01-10), then Berlin (2024-06-01)."""
    z = make()
    await z.ingest_all([PARIS, BERLIN])
    yield z
    await z.aclose()


# --- the system ----------------------------------------------------------------------------------


def test_registered_with_settings_checked():
    assert "zep" in MEMORY_SYSTEMS.names()
    assert os.environ["GRAPHITI_TELEMETRY_ENABLED"] == "false"
    with pytest.raises(ConfigError, match="zep.*group_id"):
        make(group_id="no spaces allowed")
    with pytest.raises(ConfigError, match="not both"):
        make(db_path="/tmp/x.kuzu", neo4j_uri="bolt://localhost:7687")
    with pytest.raises(ConfigError, match="reranker"):
        make(reranker="bm25")


GUARD_SCRIPT = """
import importlib, sys
sys.modules["graphiti_core"] = None  # as if the extra were not installed
from chateval.memory import MEMORY_SYSTEMS, systems
assert "zep" not in MEMORY_SYSTEMS.names() and "retrieval" in MEMORY_SYSTEMS.names()
assert "chateval.memory.zep.system" not in sys.modules  # imported on first use only
del sys.modules["graphiti_core"]
importlib.reload(systems)
assert "zep" in MEMORY_SYSTEMS.names() and "chateval.memory.zep.system" not in sys.modules
sys.modules["chateval.memory.zep.embedder"] = None  # a bug of ours, not a missing extra
try:
    MEMORY_SYSTEMS.get("zep")
except ImportError as e:
    print("propagated", e.name)
"""


CLAIM_SCRIPT = """
import sys
from chateval.util.errors import ConfigError
from chateval.memory import MEMORY_SYSTEMS, MemorySystem, memory_system, systems
try:
    @memory_system("zep")
    class Mine(MemorySystem):
        pass
except ConfigError as e:
    print("refused" if "already registered" in str(e) else e)
assert "chateval.memory.zep.system" not in sys.modules
import chateval.memory.zep.system  # imported directly, it registers itself
print(MEMORY_SYSTEMS.get("zep").__module__)
"""


@pytest.mark.slow
def test_the_name_is_taken_before_zep_is_imported():
    """A plugin cannot take 'zep' unasked just because graphiti is not imported yet."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", CLAIM_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused", "chateval.memory.zep.system"]


@pytest.mark.slow
def test_registration_is_guarded():
    """Only a missing graphiti-core (the extra) hides zep; any other ImportError propagates when
    zep is first asked for, and nothing of it is imported before."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", GUARD_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "propagated chateval.memory.zep.embedder"


async def test_bitemporal_invalidation(moved):
    edges = {e.fact: e for e in await EntityEdge.get_by_group_ids((await moved.graph()).driver, [moved.group_id])}
    assert set(edges) == {"user lives in Paris", "user moved to Berlin"}
    paris, berlin = edges["user lives in Paris"], edges["user moved to Berlin"]
    # (Kuzu hands back naive UTC datetimes.)
    assert (as_utc(paris.valid_at), as_utc(paris.invalid_at)) == (JAN, JUN)  # invalidated by the later fact
    assert paris.expired_at is not None  # ... and the graph knows when it learnt that
    assert (as_utc(berlin.valid_at), berlin.invalid_at, berlin.name) == (JUN, None, "LIVES_IN")

    items = await moved.recall("Where does the user live?", JUL)
    assert [i.text for i in items] == ["user lives in Paris", "user moved to Berlin"]  # graphiti's RRF order
    paris_item, berlin_item = items
    assert (berlin_item.session_id, berlin_item.turn_ids, berlin_item.time) == ("s2", ["t2"], JUN)
    assert (paris_item.session_id, paris_item.turn_ids, paris_item.time) == ("s1", ["t1"], JAN)
    assert berlin_item.meta["current"] and not paris_item.meta["current"]
    assert paris_item.meta["invalid_at"] == JUN.isoformat() and berlin_item.meta["relation"] == "LIVES_IN"
    assert all(i.score is not None and set(i.scores) == {"rrf"} for i in items)
    # current_first (ours, off by default) puts facts valid at question time first: Berlin in
    # July; asked in March, Paris was still true, so it stays first.
    assert Zep.parse_settings({}).current_first is False
    moved.settings = moved.parse_settings({"current_first": True})
    assert [i.text for i in await moved.recall("Where does the user live?", JUL)] == \
        ["user moved to Berlin", "user lives in Paris"]
    assert (await moved.recall("Where does the user live?", datetime(2024, 3, 1, tzinfo=UTC)))[0].text == \
        "user lives in Paris"
    moved.settings = moved.parse_settings({})
    assert moved.item_count() == 2 and moved.stats().items == 2


async def test_context_follows_the_paper_template(moved):
    resp = await moved.respond("Where does the user live?", JUL)
    lines = resp.context.splitlines()
    assert lines[0] == "FACTS and ENTITIES represent relevant context to the current conversation."
    assert "# format: FACT (Date range: from - to)" in lines and "# ENTITY_NAME: entity summary" in lines
    facts = lines[lines.index("<FACTS>") + 1: lines.index("</FACTS>")]
    assert facts == ["  - user lives in Paris (Date range: 2024-01-10 - 2024-06-01)",  # shown, not dropped
                     "  - user moved to Berlin (Date range: 2024-06-01 - present)"]
    entities = lines[lines.index("<ENTITIES>") + 1: lines.index("</ENTITIES>")]
    assert "  - Berlin: user moved to Berlin" in entities
    assert "  - user: user lives in Paris; user moved to Berlin" in entities
    assert resp.answer.startswith("[offline]") and resp.context_tokens > 0
    assert [i.text for i in resp.recalled] == ["user lives in Paris", "user moved to Berlin"]


def test_format_context_unknown_start_and_empty():
    item = MemoryItem(id="e", text="Bob likes jazz", time=JAN, session_id="s",
                      meta={"valid_at": None, "invalid_at": "2024-02-01T00:00:00+00:00"})
    ctx = format_context([item], [("Bob", "Bob likes jazz.\nBob plays piano.")])
    assert "  - Bob likes jazz (Date range: unknown - 2024-02-01)" in ctx
    assert "  - Bob: Bob likes jazz.; Bob plays piano." in ctx
    assert format_context([], []) == ""


@pytest.mark.parametrize("reranker", ["mmr", "cross_encoder"])
async def test_other_recipes(moved, reranker):
    moved.settings = moved.parse_settings({"reranker": reranker})
    items = await moved.recall("Where does the user live?", JUL)
    assert {i.text for i in items} == {"user moved to Berlin", "user lives in Paris"}
    assert all(set(i.scores) == {SCORE_NAMES[reranker]} for i in items)
    if reranker == "mmr":
        await moved.ingest(Session(id="s3", date=JUL, turns=[
            Turn(id="t3", role="user", content="I work at Google. My sister Anna lives in Rome.")]))
        items = await moved.recall("Where does the user live?", JUL)
        assert len(items) == 4 and all(i.score < 0 for i in items)
        # graphiti's default reranker floor (0) drops every negative MMR score: nothing is left.
        moved.settings = moved.parse_settings({"reranker": "mmr", "mmr_min_score": 0.0})
        assert await moved.recall("Where does the user live?", JUL) == []


async def test_llm_calls_per_episode_are_metered():
    z = make()
    per_episode = []
    for session in (PARIS, BERLIN):
        before = len(z.log.records)
        await z.ingest(session)
        per_episode.append(Counter(r.step for r in z.log.records[before:]))
    print("LLM calls per episode (offline):", [dict(c) for c in per_episode])
    # New fact, nothing related in the graph: entities, facts, one date step.
    assert per_episode[0] == {"graphiti:ExtractedEntities": 1, "graphiti:ExtractedEdges": 1,
                              "graphiti:EdgeTimestamps": 1}
    # A fact with an invalidation candidate adds one dedupe/contradiction step ("user" resolves
    # to the existing node by exact name, with no LLM call).
    assert per_episode[1] == per_episode[0] + Counter({"graphiti:EdgeDuplicate": 1})
    assert z.stats().llm_calls == 7 and all(r.model == "offline" for r in z.log.records)
    await z.aclose()


@pytest.mark.slow
@pytest.mark.skipif(not ORACLE.exists(), reason="LongMemEval oracle file not available")
async def test_longmemeval_question_end_to_end(capsys):
    (q,) = [q for q in load_longmemeval(ORACLE, limit=5) if q.question_id == "01493427"]
    z = make()
    await z.ingest_all(q.sessions)
    calls = z.stats().llm_calls
    print(f"LongMemEval {q.question_id}: {calls} LLM calls for {len(q.sessions)} sessions "
          f"({calls / len(q.sessions):.1f} per session): {dict(Counter(r.step for r in z.log.records))}")
    resp = await z.respond(q.question, q.question_date)
    assert resp.answer.startswith("[offline]") and "25 new postcards" in resp.context
    assert "<FACTS>" in resp.context and "<ENTITIES>" in resp.context
    sessions = {s.id: s for s in q.sessions}
    assert resp.recalled and len(resp.recalled) <= 20
    for item in resp.recalled:
        assert item.session_id in sessions and item.meta["valid_at"] == sessions[item.session_id].date.isoformat()
        # Message episodes (the default, the paper's): a fact cites the messages it came from.
        assert item.turn_ids and set(item.turn_ids) <= {t.id for t in sessions[item.session_id].turns}
        assert not item.meta["turn_ids_inferred"]
    assert calls >= 3 * len(q.sessions) and resp.usage.calls == 1  # the answer; recall has no LLM call
    await z.aclose()


@pytest.mark.slow
async def test_persisted_graph_is_resumed(tmp_path):
    path = str(tmp_path / "graphs" / "zep.kuzu")
    z = make(db_path=path, group_id="alice")
    await z.ingest_all([PARIS, BERLIN])
    await z.aclose()

    again = make(db_path=path, group_id="alice")
    items = await again.recall("Where does the user live?", JUL)  # no ingest in this instance
    assert [i.text for i in items] == ["user lives in Paris", "user moved to Berlin"]
    assert [i.session_id for i in items] == ["s1", "s2"] and items[0].meta["invalid_at"] == JUN.isoformat()
    assert [s.id for s in again.sessions] == ["s1", "s2"] and again.sessions[0].turns[0].content == "I live in Paris."
    assert again.item_count() == 2
    with pytest.raises(MemoryInputError, match="already ingested"):
        await again.ingest(PARIS)
    with pytest.raises(MemoryInputError, match="older"):
        await again.ingest(Session(id="s0", date=JAN, turns=[Turn(id="t0", role="user", content="Hi.")]))
    again.close()

    other = make(db_path=path, group_id="bob")  # one graph group per user: bob sees nothing
    assert await other.recall("Where does the user live?", JUL) == [] and other.sessions == []
    other.close()


@pytest.mark.slow
async def test_reset_clears_the_group(tmp_path):
    path = str(tmp_path / "zep.kuzu")
    z = make(db_path=path, group_id="carol")
    await z.ingest(PARIS)
    z.reset()
    assert z.item_count() == 0 and await z.recall("Where does the user live?", JUL) == []
    await z.ingest(PARIS)  # the same session id is new again
    assert z.item_count() == 1
    z.reset()
    await z.ingest(BERLIN)
    z.close()
    again = make(db_path=path, group_id="carol")
    assert [i.text for i in await again.recall("Where does the user live?", JUL)] == ["user moved to Berlin"]
    again.close()


async def test_message_episodes_and_the_earlier_name():
    """One episode per message (the paper's choice): each fact cites its own message."""
    assert Zep.parse_settings({"episodes": "turn"}).episodes == "message"
    z = make(episodes="message")
    session = Session(id="s1", date=JAN, turns=[Turn(id="a", role="user", content="I live in Paris."),
                                                Turn(id="b", role="assistant", content="Nice."),
                                                Turn(id="c", role="user", content="I work at Google.")])
    await z.ingest(session)
    episodes = await EpisodicNode.get_by_group_ids((await z.graph()).driver, [z.group_id])
    assert sorted(e.name for e in episodes) == ["s1/a", "s1/b", "s1/c"]
    assert all(as_utc(e.valid_at) == JAN for e in episodes)
    items = {i.text: i for i in await z.recall("Where does the user work?", JUL)}
    assert items["user works at Google"].turn_ids == ["c"] and items["user lives in Paris"].turn_ids == ["a"]
    assert not items["user works at Google"].meta["turn_ids_inferred"]
    await z.aclose()


@pytest.mark.slow
@pytest.mark.parametrize("settings,first", [({}, 8), ({"context_episodes": 10}, 2)])
async def test_message_episodes_see_the_messages_just_before_them(settings, first):
    """All messages of a session share its time; graphiti's window of previous episodes must
    still be the messages just before, not same-time messages picked by the database: the
    paper's 4 by default (issue 28), graphiti's own 10 as an option."""
    turns = [Turn(id=f"m{i}", role="user", content=f"I visited City{i} today.") for i in range(1, 13)]
    z = make(**settings)
    assert z.settings.episodes == "message"  # the paper's episodes are the default
    g = await z.graph()
    seen: list[str] = []
    original = g.llm_client.generate_response

    async def spy(messages, response_model=None, *args, **kwargs):
        if response_model is not None and response_model.__name__ == "ExtractedEntities":
            seen.append(messages[-1].content)
        return await original(messages, response_model, *args, **kwargs)

    g.llm_client.generate_response = spy
    await z.ingest(Session(id="s1", date=JAN, turns=turns))
    last = seen[-1]
    window = last[last.index("<PREVIOUS MESSAGES>"):last.index("</PREVIOUS MESSAGES>")]
    shown = [i for i in range(1, 13) if f"City{i} " in window]
    assert shown == list(range(first, 12))
    await z.aclose()


WORK = Session(id="s3", date=JUL, turns=[Turn(id="t3", role="user", content="I work at Google. I live in Berlin."),
                                          Turn(id="t4", role="user", content="My sister Anna lives in Rome.")])


@pytest.mark.slow
@pytest.mark.parametrize("reranker", ["rrf", "node_distance", "episode_mentions", "cross_encoder"])
async def test_graphiti_rerankers(reranker):
    z = make(reranker=reranker, center_entity="user")
    await z.ingest_all([PARIS, BERLIN, WORK])
    items = await z.recall("Where does the user live?", JUL)
    assert items and all(set(i.scores) == {SCORE_NAMES[reranker]} for i in items)
    scores = [i.score for i in items]
    edges = {e.uuid: e for e in await EntityEdge.get_by_group_ids((await z.graph()).driver, [z.group_id])}
    if reranker == "episode_mentions":  # the score is what ranked it: episodes citing the fact
        assert scores == [float(len(edges[i.id].episodes)) for i in items] and scores == sorted(scores, reverse=True)
        assert scores[0] == 2.0  # "user lives in Berlin" was said in s2's fact and again in s3
    if reranker == "node_distance":  # 1 / hops from the user; the center's own facts get 1 / 0.1 and come first
        user = next(n for n in await EntityNode.get_by_group_ids((await z.graph()).driver, [z.group_id])
                    if n.name == "user")
        own = [i for i in items if edges[i.id].source_node_uuid == user.uuid]
        assert own and items[: len(own)] == own and all(i.score == 10.0 for i in own)
        assert [i.text for i in items[len(own):]] == ["Anna lives in Rome"] and items[-1].score == 0.0  # unreachable
        # Without a center name the top RRF fact's entity is the center; an empty graph recalls nothing.
        assert await make(reranker="node_distance").recall("Where does the user live?", JUL) == []
    if reranker == "cross_encoder":
        assert "stand-in" in SCORE_NAMES[reranker] and scores == sorted(scores, reverse=True)
    resp = await z.respond("Where does the user live?", JUL)
    assert "<ENTITIES>" in resp.context and resp.recalled
    await z.aclose()


def tiny_cross_encoder(folder: Path) -> Path:
    """A one-layer BERT cross-encoder with random weights, written locally: the real loading and
    scoring path of a sentence-transformers CrossEncoder, with no download."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "user", "lives", "in", "paris", "moved", "to", "berlin",
             "where", "does", "live", "?"]
    (folder / "vocab.txt").write_text("\n".join(words))
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=32, num_labels=1)
                                  ).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


@pytest.mark.slow
async def test_a_real_cross_encoder_from_a_local_folder(tmp_path):
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import CrossEncoder

    path = str(tiny_cross_encoder(tmp_path / "ce"))
    z = make(reranker="cross_encoder", cross_encoder_model=path)
    await z.ingest_all([PARIS, BERLIN])
    items = await z.recall("Where does the user live?", JUL)
    label = f"cross_encoder (model: {path})"
    assert items and all(set(i.scores) == {label} for i in items)
    expected = CrossEncoder(path, device="cpu").predict([("Where does the user live", i.text) for i in items])
    assert [i.score for i in items] == pytest.approx([float(x) for x in expected], abs=1e-6)
    assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)
    await z.aclose()
    with pytest.raises(ConfigError, match="cross_encoder_model.*not a folder"):
        await make(reranker="cross_encoder", cross_encoder_model=str(tmp_path / "missing")).recall("x", JUL)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="cannot load it") as err:
        await make(reranker="cross_encoder", cross_encoder_model=str(tmp_path / "empty")).recall("x", JUL)
    assert "\n" not in str(err.value)


async def test_communities_are_built_on_ingest_when_asked():
    z = make(communities=True)
    await z.ingest(PARIS)
    built = await z.community_nodes()
    steps = Counter(r.step for r in z.log.records)
    assert built and steps["graphiti:SummaryDescription"] >= 1  # named by the offline description step
    assert any("Paris" in c.summary for c in built)
    await z.ingest(BERLIN)  # then updated per episode, not rebuilt
    after = await z.community_nodes()
    assert after and {c.uuid for c in built} & {c.uuid for c in after}
    plain = make()
    await plain.ingest(PARIS)
    assert await plain.community_nodes() == [] and Zep.parse_settings({}).communities is False
    await z.aclose()
    await plain.aclose()


async def test_graphiti_bug_update_communities_on_add_episode_still_fails():
    """Why zep updates communities itself: graphiti 0.30.2's add_episode(update_communities=True)
    fails unless an episode yields exactly two entities. Fails once upstream fixes it."""
    z = make(communities=True)
    await z.ingest(PARIS)  # communities exist
    g = await z.graph()
    with pytest.raises((ValueError, ValidationError)):
        await g.add_episode(name="x", episode_body="user: I work at Google. My sister Anna lives in Rome.",
                            source_description="test", reference_time=JUL, group_id=z.group_id,
                            update_communities=True)
    await z.aclose()


def test_offline_reads_graphiti_s_community_prompts():
    from graphiti_core.prompts.summarize_nodes import Summary, SummaryDescription

    def inputs(msgs):
        return GraphitiStepInputs(messages=[GraphitiMessage(role=m.role, content=m.content) for m in msgs],
                                  response_model="Summary")

    pair = prompt_library.summarize_nodes.summarize_pair(
        {"node_summaries": [{"summary": "user lives in Paris. user likes tea."}, {"summary": "user likes tea."}]})
    assert offline.community_summary(inputs(pair), Summary).summary == "user lives in Paris. user likes tea."
    desc = prompt_library.summarize_nodes.summary_description({"summary": "user lives in Paris. user likes tea."})
    assert offline.community_description(inputs(desc), SummaryDescription).description == "user lives in Paris."


async def test_fact_dates_carry_the_time_where_the_data_has_it():
    at = datetime(2023, 5, 20, 14, 21, tzinfo=UTC)  # LongMemEval's "2023/05/20 (Sat) 14:21"
    z = make()
    await z.ingest(Session(id="s1", date=at, turns=[Turn(id="a", role="user", content="I live in Paris.")]))
    resp = await z.respond("Where does the user live?", JUL)
    assert "  - user lives in Paris (Date range: 2023-05-20 14:21 - present)" in resp.context
    z.settings = z.parse_settings({"fact_times": "date"})
    assert "(Date range: 2023-05-20 - present)" in (await z.respond("Where does the user live?", JUL)).context
    await z.aclose()
    item = MemoryItem(id="e", text="Bob likes jazz", time=JAN, session_id="s", meta={"valid_at": JAN.isoformat()})
    assert "(Date range: 2024-01-10 - present)" in format_context([item], [])  # midnight: a date
    assert "(Date range: 2024-01-10 00:00 - present)" in format_context([item], [], times="datetime")


async def test_unreachable_neo4j_is_one_line_without_the_password():
    z = make(neo4j_uri="bolt://127.0.0.1:1", neo4j_password="s3cret-pw")
    with pytest.raises(ConfigError, match="cannot reach Neo4j at bolt://127.0.0.1:1") as err:
        await z.ingest(PARIS)
    assert "s3cret" not in str(err.value)


@pytest.mark.slow
def test_bench_longmemeval_runs_zep(tmp_path):
    if not ORACLE.exists():
        pytest.skip("LongMemEval oracle file not available")
    entries = {e["question_id"]: e for e in json.loads(ORACLE.read_text()) if e["question_id"] in ("66f24dbb", "9aaed6a3")}
    data = tmp_path / "two.json"
    data.write_text(json.dumps(list(entries.values())))
    out = tmp_path / "run"
    assert main(["bench", "longmemeval", "--data", str(data), "--systems", "zep", "--answer-model", "offline",
                 "--embedder", "hash", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] == "ok" and r["context"] for r in rows)
    assert all(r["stats"]["llm_calls"] > 0 and r["stats"]["items"] > 0 for r in rows)


# --- the adapters ----------------------------------------------------------------------------------


def replay_layer(*replies: str) -> ModelLayer:
    info = {"vision": False, "function_calling": False, "json_output": True, "family": "unknown",
            "structured_output": True, "multiple_system_messages": True}
    return ModelLayer(ModelSpec.parse("openai-compatible/m", "http://127.0.0.1:9/v1"),
                      backend=AutogenBackend(ReplayChatCompletionClient(list(replies), model_info=info)))


async def test_llm_client_goes_through_the_layer_and_reasks_once():
    from graphiti_core.prompts.models import Message

    log = CallLog()
    client = LayerLLMClient(replay_layer("not json", '{"valid_at": "2024-01-10T00:00:00Z"}'), log)
    out = await client.generate_response([Message(role="system", content="s"), Message(role="user", content="u")],
                                         response_model=EdgeTimestamps)
    assert out == {"valid_at": "2024-01-10T00:00:00Z"}
    assert [r.step for r in log.records] == ["graphiti:EdgeTimestamps"] * 2

    bad = LayerLLMClient(replay_layer("nope", '{"duplicate_facts": "x"}'), CallLog())
    with pytest.raises(StepError, match="graphiti:EdgeDuplicate"):
        await bad.generate_response([Message(role="user", content="u")], response_model=EdgeDuplicate)


async def test_embedder_and_cross_encoder_adapters():
    emb = make_embedder("hash", cache=False)
    adapter = LayerEmbedder(emb)
    one = await adapter.create("user lives in Paris")
    assert one == await adapter.create(["user lives in Paris"]) and len(one) == emb.dim
    assert await adapter.create_batch(["a", "b"]) == [await adapter.create("a"), await adapter.create("b")]
    ranked = await EmbeddingCrossEncoder(emb).rank("user lives in Paris", ["Bob likes jazz", "user lives in Paris"])
    assert ranked[0] == ("user lives in Paris", pytest.approx(1.0))


# --- the offline model's answers to graphiti's steps ------------------------------------------------


def test_offline_text_heuristics():
    content = "user: I live in Paris with my sister Anna.\nassistant: Visit the Louvre!"
    assert offline_text.extract_entities(content) == ["user", "Paris", "Anna", "sister"]  # assistant lines: context only
    facts = offline_facts.extract_facts(content, ["user", "Paris", "Anna"])
    assert facts[0] == ("user", "LIVES_IN", "Paris", "user lives in Paris")
    assert facts[1][2:] == ("Anna", "user lives in Paris with user's sister Anna")
    assert offline_facts.extract_facts("Caroline: I've moved to Boston.", ["Caroline", "Boston"]) == \
        [("Caroline", "LIVES_IN", "Boston", "Caroline has moved to Boston")]
    assert offline_facts.parse_fact("user moved to Berlin") == ("user", "LIVES_IN", "berlin")
    assert offline_facts.relation_type(" is looking for a ") == "LOOKING_FOR"


def test_offline_reads_graphiti_s_own_prompts():
    """The blocks the handlers read, in prompts built by the installed graphiti: a renamed block
    fails here rather than silently building an empty graph."""
    ctx = {"episode_content": "user: I live in Paris.", "previous_episodes": [], "entity_types": [],
           "custom_extraction_instructions": "", "source_description": "", "episode_timestamp": None}
    inp = GraphitiStepInputs(response_model="ExtractedEntities", messages=[
        GraphitiMessage(role=m.role, content=m.content) for m in prompt_library.extract_nodes.extract_message(ctx)])
    out = json.loads(offline.extracted_entities(inp, None))
    assert [e["name"] for e in out["extracted_entities"]] == ["user", "Paris"]

    ctx = {"episode_content": "user: I live in Paris.", "previous_episodes": [], "reference_time": JAN,
           "nodes": [{"name": "user", "entity_types": ["Entity"]}, {"name": "Paris", "entity_types": ["Entity"]}],
           "edge_types": [], "custom_extraction_instructions": ""}
    msgs = prompt_library.extract_edges.edge(ctx)
    out = json.loads(offline.extracted_edges(GraphitiStepInputs(response_model="ExtractedEdges", messages=[
        GraphitiMessage(role=m.role, content=m.content) for m in msgs]), None))
    assert [(e["source_entity_name"], e["relation_type"], e["target_entity_name"]) for e in out["edges"]] == \
        [("user", "LIVES_IN", "Paris")]

    msgs = prompt_library.dedupe_edges.resolve_edge({
        "existing_edges": [{"idx": 0, "fact": "user lives in Paris"}], "new_edge": "user moved to Berlin",
        "edge_invalidation_candidates": [{"idx": 1, "fact": "user works at Google"}, {"idx": 2, "fact": "user lives in Paris"}]})
    out = offline.edge_duplicate(GraphitiStepInputs(response_model="EdgeDuplicate", messages=[
        GraphitiMessage(role=m.role, content=m.content) for m in msgs]), EdgeDuplicate)
    assert (out.duplicate_facts, out.contradicted_facts) == ([], [0, 2])

    msgs = prompt_library.extract_edges.extract_timestamps({"fact": "user lives in Paris",
                                                            "reference_time": JAN.isoformat()})
    out = offline.edge_timestamps(GraphitiStepInputs(response_model="EdgeTimestamps", messages=[
        GraphitiMessage(role=m.role, content=m.content) for m in msgs]), EdgeTimestamps)
    assert (out.valid_at, out.invalid_at) == ("2024-01-10T00:00:00Z", None)

    msgs = prompt_library.dedupe_nodes.nodes({
        "extracted_nodes": [{"id": 0, "name": "paris", "entity_type": ["Entity"], "entity_type_description": ""},
                            {"id": 1, "name": "Rome", "entity_type": ["Entity"], "entity_type_description": ""}],
        "existing_nodes": [{"candidate_id": 0, "name": "Berlin"}, {"candidate_id": 1, "name": "Paris"}],
        "episode_content": "user: I love Paris.", "previous_episodes": []})
    out = offline.node_resolutions(GraphitiStepInputs(response_model="NodeResolutions", messages=[
        GraphitiMessage(role=m.role, content=m.content) for m in msgs]), NodeResolutions)
    assert [(r.id, r.duplicate_candidate_id) for r in out.entity_resolutions] == [(0, 1), (1, -1)]

    msgs = prompt_library.extract_nodes.extract_summaries_batch({
        "entities": [{"name": "Paris", "summary": "user lives in Paris. It is big.", "entity_types": ["Entity"],
                      "attributes": {}}],
        "episode_content": "user: I love Paris. It rains.\nassistant: Paris is nice.", "previous_episodes": [],
        "entity_type_descriptions": {}})
    out = offline.summarized_entities(GraphitiStepInputs(response_model="SummarizedEntities", messages=[
        GraphitiMessage(role=m.role, content=m.content) for m in msgs]), SummarizedEntities)
    assert [(e.name, e.summary) for e in out.summaries] == [("Paris", "user lives in Paris.\nI love Paris.")]


# --- graphiti-core's Kuzu problems: these assert the problems still exist in the pinned version ----
# When one of them fails, upstream fixed it: drop the matching workaround in zep/kuzu_fixes.py.


async def test_kuzu_bug_database_name_still_unset():
    driver = raw_kuzu()
    assert not hasattr(driver, "_database"), "graphiti fixed KuzuDriver._database: drop set_database_name()"
    graphiti = Graphiti(graph_driver=driver, llm_client=LayerLLMClient(ModelLayer(ModelSpec.parse("offline")), CallLog()),
                        embedder=LayerEmbedder(make_embedder("hash", cache=False)),
                        cross_encoder=EmbeddingCrossEncoder(make_embedder("hash", cache=False)))
    with pytest.raises(AttributeError, match="_database"):
        await graphiti.add_episode(name="e", episode_body="user: hi", source_description="t", reference_time=JAN,
                                   group_id="g1")
    fixed = open_kuzu()
    assert fixed._database == ""
    driver.db.close(), fixed.db.close()


async def test_kuzu_bug_fulltext_indexes_still_not_built():
    driver = raw_kuzu()
    await driver.build_indices_and_constraints()
    assert await fulltext_index_names(driver) == set(), "graphiti now builds Kuzu FTS indexes: drop the fix"
    with pytest.raises(RuntimeError, match="edge_name_and_fact"):
        await edge_fulltext_search(driver, "Paris", SearchFilters(), None, 10)
    assert sorted(await ensure_fulltext_indexes(driver)) == ["community_name", "edge_name_and_fact",
                                                            "episode_content", "node_name_and_summary"]
    assert await ensure_fulltext_indexes(driver) == []  # idempotent (a persisted graph has them)
    assert await edge_fulltext_search(driver, "Paris", SearchFilters(), None, 10) == []
    driver.db.close()


def test_kuzu_bug_database_size_still_not_configurable():
    params = inspect.signature(KuzuDriver.__init__).parameters
    assert set(params) == {"self", "db", "max_concurrent_queries"}, \
        "KuzuDriver takes database options now: pass max_db_size instead of swapping the database"


async def test_kuzu_bug_fulltext_query_still_keeps_punctuation():
    z = make()
    await z.ingest(PARIS)
    driver = (await z.graph()).driver
    assert await edge_fulltext_search(driver, "Paris?", SearchFilters(), [z.group_id], 10) == [], \
        "Kuzu or graphiti now strips query punctuation: drop fulltext_safe()"
    assert [e.fact for e in await edge_fulltext_search(driver, fulltext_safe("Paris?"), SearchFilters(),
                                                       [z.group_id], 10)] == ["user lives in Paris"]
    await z.aclose()
