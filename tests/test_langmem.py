"""LangMem (LangChain's open-source memory manager) as a system under test, against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("langmem", reason="langmem is not installed (pip install 'chateval[langmem]')")

from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from chateval.cli import main  # noqa: E402
from chateval.memory import MEMORY_SYSTEMS, Session, Turn  # noqa: E402
from chateval.memory import systems as _systems  # noqa: E402,F401
from chateval.memory.embeddings import make_embedder  # noqa: E402
from chateval.models import AutogenBackend, ModelLayer, ModelSpec  # noqa: E402
from chateval.testing.fake_openai import FakeOpenAIServer, Fault  # noqa: E402
from chateval.util.errors import ConfigError  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parent.parent / "examples"
FACT = "User adopted a dog named Rex in May"


def responder(body: dict) -> str:
    """LangMem's extraction (a request offering tools) gets a call of its Memory tool; the answer gets text."""
    if body.get("tools"):
        return json.dumps({"tool_calls": [{"name": "Memory", "arguments": {"content": FACT}}]})
    return "Rex"


def tool_requests(server: FakeOpenAIServer) -> list[dict]:
    return [r for r in server.requests if r.get("tools")]


def conversation(request: dict) -> str:
    return request["messages"][-1]["content"]


def make(server: FakeOpenAIServer, **settings):
    layer = ModelLayer(ModelSpec.parse("openai-compatible/m", server.base_url))
    return MEMORY_SYSTEMS.get("langmem")(layer, settings=settings or None, embedder=make_embedder("hash", cache=False))


SESSION = Session(
    id="answer_s1",
    date=datetime(2023, 5, 1, 9, 30, tzinfo=UTC),
    turns=[
        Turn(id="t1", role="user", content="I adopted a dog last week, his name is Rex."),
        Turn(id="t2", role="assistant", content="Congratulations on adopting Rex!"),
    ],
)


def test_langmem_extracts_by_tool_calls_through_our_layer_and_recalls_with_provenance():
    with FakeOpenAIServer(responder=responder) as server:
        system = make(server)

        async def run():
            await system.ingest(SESSION)
            return await system.respond("Which dog did the user adopt?", datetime(2023, 6, 1, tzinfo=UTC))

        resp = asyncio.run(run())
        (extraction,) = tool_requests(server)
        answer_prompt = conversation(server.requests[-1])
    # LangMem's own request: its Memory tool offered, its prompt over the session's turns and date
    assert [t["function"]["name"] for t in extraction["tools"]] == ["Memory"]
    assert extraction["model"] == "m" and extraction["temperature"] == 0.0
    text = conversation(extraction)
    assert "I adopted a dog last week, his name is Rex." in text and "Congratulations on adopting Rex!" in text
    assert "Conversation date: 2023-05-01 09:30" in text and "answer_s1" not in text
    # recall: the stored memory, dated by its session, traced back to it
    (item,) = resp.recalled
    assert item.text == FACT and item.session_id == "answer_s1" and item.time.date().isoformat() == "2023-05-01"
    assert f"[2023-05-01] {FACT}" in answer_prompt and resp.answer == "Rex"
    # both calls metered in the system's log, LangMem's with the tokens the endpoint reported
    tools_call, answer_call = system.log.records
    assert tools_call.step == "langmem:tools" and tools_call.prompt_tokens > 0 and tools_call.completion_tokens > 0
    assert answer_call.step != "langmem:tools" and system.stats().llm_calls == 2 and system.item_count() == 1
    exported = system.export()
    assert exported is not None and exported["library"].startswith("langmem 0.")
    assert [(m["memory"], m["chateval_session"]) for m in exported["memories"]] == [(FACT, "answer_s1")]


def test_langmem_retries_through_the_layer_not_the_sdk():
    with FakeOpenAIServer(responder=responder) as server:
        server.script([Fault("500")])
        system = make(server)
        asyncio.run(system.ingest(SESSION))
        assert server.actions[:2] == ["500", "reply"] and len(tool_requests(server)) == 2
    (rec,) = system.log.records
    assert rec.attempts == 2 and system.item_count() == 1


def test_langmem_tracing_is_off_whatever_the_environment_says(monkeypatch):
    import langsmith.utils

    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGSMITH_API_KEY", "unused")
    langsmith.utils.get_env_var.cache_clear()
    assert langsmith.utils.tracing_is_enabled()  # the control: the environment asks for tracing
    seen: list[bool] = []
    with FakeOpenAIServer(responder=responder) as server:
        system = make(server)
        real = system.layer.call

        async def spy(*args, **kwargs):
            seen.append(bool(langsmith.utils.tracing_is_enabled()))
            return await real(*args, **kwargs)

        monkeypatch.setattr(system.layer, "call", spy)
        asyncio.run(system.ingest(SESSION))
    langsmith.utils.get_env_var.cache_clear()
    assert seen == [False]


def test_langmem_named_speakers_settings_reset_and_refusals():
    with FakeOpenAIServer(responder=responder) as server:
        system = make(server, top_k=1)
        locomo = Session(
            id="s1",
            date=datetime(2023, 5, 8, tzinfo=UTC),
            turns=[Turn(id="d1", role="Caroline", content="I went to a support group.")],
        )

        async def run():
            await system.ingest(locomo)
            found = await system.recall("support group", datetime(2023, 6, 1, tzinfo=UTC))
            system.reset()
            after = await system.recall("support group", datetime(2023, 6, 1, tzinfo=UTC))
            return found, after

        found, after = asyncio.run(run())
        (extraction,) = tool_requests(server)
    assert "Caroline: I went to a support group." in conversation(extraction)
    assert len(found) == 1 and after == [] and system.item_count() == 0
    with pytest.raises(ConfigError, match="top_k"):
        MEMORY_SYSTEMS.get("langmem").parse_settings({"top_k": 0})
    with pytest.raises(ConfigError, match="offline model cannot answer LangMem"):
        MEMORY_SYSTEMS.get("langmem")(ModelLayer(ModelSpec.parse("offline")), embedder=make_embedder("hash"))
    info = {"vision": False, "function_calling": False, "json_output": True, "family": "unknown",
            "structured_output": True, "multiple_system_messages": True}  # fmt: skip
    replay = ModelLayer(
        ModelSpec.parse("openai-compatible/m", "http://127.0.0.1:9/v1"),
        backend=AutogenBackend(ReplayChatCompletionClient(["x"], model_info=info)),
    )
    with pytest.raises(ConfigError, match="OpenAI wire format only"):
        MEMORY_SYSTEMS.get("langmem")(replay, embedder=make_embedder("hash"))


@pytest.mark.slow
def test_bench_longmemeval_and_locomo_with_langmem(tmp_path):
    common = ["--answer-model", "openai-compatible/m", "--judge-model", "offline", "--embedder", "hash", "--no-cache"]
    with FakeOpenAIServer(responder=responder) as server:
        lme = main(
            ["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--limit", "2"]
            + ["--systems", "langmem,full_context,my_memory", "--plugin", str(EXAMPLES / "my_memory.py")]
            + ["--base-url", server.base_url, *common, "--out", str(tmp_path / "lme")]
        )
        lme_extractions = [conversation(r) for r in tool_requests(server)]
        server.reset()
        locomo = main(
            ["bench", "locomo", "--data", str(FIXTURES / "locomo_tiny.json"), "--limit", "1", "--systems", "langmem"]
            + ["--base-url", server.base_url, *common, "--out", str(tmp_path / "locomo")]
        )
        locomo_extractions = [conversation(r) for r in tool_requests(server)]
    summary = json.loads((tmp_path / "lme" / "summary.json").read_text())
    assert lme == 0 and summary["n_failed"] == 0
    assert set(summary["methods"]) == {"langmem", "full_context", "my_memory"}
    data = json.loads((FIXTURES / "lme_tiny.json").read_text())[:2]
    assert len(lme_extractions) == sum(len(d["haystack_sessions"]) for d in data)  # one LangMem call per session
    # the blind boundary: no dataset session id reaches LangMem's prompts
    leaked = [sid for d in data for sid in d["haystack_session_ids"] if any(sid in e for e in lme_extractions)]
    assert not leaked and all("Conversation date: 20" in e for e in lme_extractions)
    conv = json.loads((FIXTURES / "locomo_tiny.json").read_text())[0]["conversation"]
    assert locomo == 0 and json.loads((tmp_path / "locomo" / "summary.json").read_text())["n_failed"] == 0
    assert any(f"{conv['speaker_a']}: " in e for e in locomo_extractions)
    assert any(f"{conv['speaker_b']}: " in e for e in locomo_extractions)
