"""mem0 (the open-source mem0ai Memory) as a system under test, against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'chateval[mem0]')")

from chateval.cli import main  # noqa: E402
from chateval.memory import MEMORY_SYSTEMS, Session, Turn  # noqa: E402
from chateval.memory import systems as _systems  # noqa: E402,F401
from chateval.memory.embeddings import make_embedder  # noqa: E402
from chateval.models import ModelLayer, ModelSpec  # noqa: E402
from chateval.testing.fake_openai import FakeOpenAIServer  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parent.parent / "examples"
FACT = "User adopted a dog named Rex in May"


def responder(body: dict) -> str:
    """mem0's extraction step gets the JSON it expects; every other call (the answer) gets text."""
    if "## New Messages" in body["messages"][-1]["content"]:
        return json.dumps({"memory": [{"text": FACT}]})
    return "Rex"


def extraction_requests(server: FakeOpenAIServer) -> list[str]:
    return [
        r["messages"][-1]["content"]
        for r in server.requests
        if "messages" in r and "## New Messages" in r["messages"][-1]["content"]
    ]


def make(server: FakeOpenAIServer, **settings):
    layer = ModelLayer(ModelSpec.parse("openai-compatible/m", server.base_url))
    return MEMORY_SYSTEMS.get("mem0")(layer, settings=settings or None, embedder=make_embedder("hash", cache=False))


SESSION = Session(
    id="answer_s1",
    date=datetime(2023, 5, 1, 9, 30, tzinfo=UTC),
    turns=[
        Turn(id="t1", role="user", content="I adopted a dog last week, his name is Rex."),
        Turn(id="t2", role="assistant", content="Congratulations on adopting Rex!"),
    ],
)


def test_mem0_extracts_through_our_layer_and_recalls_with_provenance():
    with FakeOpenAIServer(responder=responder) as server:
        system = make(server)

        async def run():
            await system.ingest(SESSION)
            return await system.respond("Which dog did the user adopt named Rex?", datetime(2023, 6, 1, tzinfo=UTC))

        try:
            resp = asyncio.run(run())
            tmp_dir = system._dir
            exported = system.export()
        finally:
            system.close()
        (extraction,) = extraction_requests(server)
        answer_prompt = server.requests[-1]["messages"][-1]["content"]
    # mem0's extraction prompt carries the turns and the session date, never the session id
    assert "user: I adopted a dog last week, his name is Rex." in extraction
    assert "assistant: Congratulations on adopting Rex!" in extraction
    assert "Conversation date: 2023-05-01 09:30" in extraction and "answer_s1" not in extraction
    # recall: mem0's stored fact, dated by its session, traced back to it
    (item,) = resp.recalled
    assert item.text == FACT and item.session_id == "answer_s1" and item.time.date().isoformat() == "2023-05-01"
    assert item.score is not None and item.score >= 0.1
    # the shared answer step over the recalled memory
    assert f"[2023-05-01] {FACT}" in answer_prompt and resp.answer == "Rex"
    assert system.item_count() == 1 and system.stats().llm_calls == 2
    assert exported is not None and exported["library"].startswith("mem0ai 2.")
    assert [(m["memory"], m["chateval_session"]) for m in exported["memories"]] == [(FACT, "answer_s1")]
    assert tmp_dir and not os.path.exists(tmp_dir)  # the local Qdrant folder is removed on close


def test_mem0_named_speakers_settings_and_reset():
    with FakeOpenAIServer(responder=responder) as server:
        system = make(server, top_k=1, threshold=0.99)
        locomo = Session(
            id="s1",
            date=datetime(2023, 5, 8, tzinfo=UTC),
            turns=[Turn(id="d1", role="Caroline", content="I went to a support group.")],
        )

        async def run():
            await system.ingest(locomo)
            high = await system.recall("support group", datetime(2023, 6, 1, tzinfo=UTC))
            system.reset()
            after = await system.recall("support group", datetime(2023, 6, 1, tzinfo=UTC))
            return high, after

        try:
            high, after = asyncio.run(run())
        finally:
            system.close()
        (extraction,) = extraction_requests(server)
    assert "user: Caroline: I went to a support group." in extraction  # mem0 knows user/assistant only
    assert high == []  # the score floor (0.99) drops the fact
    assert after == [] and system.item_count() == 0


def test_mem0_telemetry_is_off_and_settings_are_checked():
    import mem0.memory.telemetry as telemetry

    assert os.environ["MEM0_TELEMETRY"] == "False" and telemetry.MEM0_TELEMETRY is False
    from chateval.util.errors import ConfigError

    with pytest.raises(ConfigError, match="top_k"):
        MEMORY_SYSTEMS.get("mem0").parse_settings({"top_k": 0})


def test_bench_longmemeval_with_mem0_and_full_context(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=responder) as server:
        rc = main(
            [
                "bench",
                "longmemeval",
                "--data",
                str(FIXTURES / "lme_tiny.json"),
                "--systems",
                "mem0,full_context,my_memory",  # beside a built-in and a user's own agent, in one command
                "--plugin",
                str(EXAMPLES / "my_memory.py"),
                "--answer-model",
                "openai-compatible/m",
                "--base-url",
                server.base_url,
                "--judge-model",
                "offline",
                "--embedder",
                "hash",
                "--limit",
                "2",
                "--no-cache",
                "--out",
                str(out),
            ]
        )
        extractions = extraction_requests(server)
    summary = json.loads((out / "summary.json").read_text())
    assert rc == 0 and summary["n_failed"] == 0
    assert set(summary["methods"]) == {"mem0", "full_context", "my_memory"}
    data = json.loads((FIXTURES / "lme_tiny.json").read_text())[:2]
    sessions = sum(len(d["haystack_sessions"]) for d in data)
    assert len(extractions) == sessions  # one mem0 add per (non-empty) session
    # the blind boundary: no dataset session id and no gold field reaches mem0's prompts
    leaked = [sid for d in data for sid in d["haystack_session_ids"] if any(sid in e for e in extractions)]
    assert any(sid.startswith("answer_") for d in data for sid in d["haystack_session_ids"]) and not leaked
    assert all("Conversation date: 20" in e for e in extractions)


def test_mem0_refuses_the_offline_model_unless_it_stores_turns_verbatim():
    from chateval.util.errors import ConfigError

    offline = ModelLayer(ModelSpec.parse("offline"))
    with pytest.raises(ConfigError, match="mem0.infer=false"):
        MEMORY_SYSTEMS.get("mem0")(offline, embedder=make_embedder("hash", cache=False))
    system = MEMORY_SYSTEMS.get("mem0")(offline, settings={"infer": False}, embedder=make_embedder("hash", cache=False))

    async def run():
        await system.ingest(SESSION)
        return await system.recall("adopted a dog Rex", datetime(2023, 6, 1, tzinfo=UTC))

    try:
        items = asyncio.run(run())
    finally:
        system.close()
    # infer=false: no extraction call, each turn stored verbatim with its session
    assert system.log.records == [] and system.item_count() == 2
    assert {i.text for i in items} <= {t.content for t in SESSION.turns} and items
    assert all(i.session_id == "answer_s1" for i in items)


def test_bench_locomo_with_mem0_names_speakers(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=responder) as server:
        rc = main(
            [
                "bench",
                "locomo",
                "--data",
                str(FIXTURES / "locomo_tiny.json"),
                "--systems",
                "mem0",
                "--answer-model",
                "openai-compatible/m",
                "--base-url",
                server.base_url,
                "--judge-model",
                "offline",
                "--embedder",
                "hash",
                "--limit",
                "1",
                "--no-cache",
                "--out",
                str(out),
            ]
        )
        extractions = extraction_requests(server)
    summary = json.loads((out / "summary.json").read_text())
    conv = json.loads((FIXTURES / "locomo_tiny.json").read_text())[0]["conversation"]
    assert rc == 0 and summary["n_failed"] == 0 and extractions
    # LoCoMo's speakers reach mem0 by name (mem0 itself knows only user/assistant)
    assert any(f"user: {conv['speaker_a']}: " in e for e in extractions)
    assert any(f"user: {conv['speaker_b']}: " in e for e in extractions)
