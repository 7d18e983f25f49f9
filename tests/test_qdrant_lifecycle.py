"""Qdrant for real deployments: each store owns a collection with a readable per-run prefix,
deleted on close() and on reset(); the async client is awaited from coroutines; --qdrant-url
sends $QDRANT_API_KEY. The server path runs against a fake Qdrant REST server on 127.0.0.1
(what it received is asserted), the same lifecycle against the client's local mode."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient

from chateval.cli import main
from chateval.memory import MEMORY_SYSTEMS, MemorySystem, Session, Turn
from chateval.memory import systems as _systems  # noqa: F401  (registers the built-in systems)
from chateval.memory.embeddings import make_embedder
from chateval.memory.vector import VectorStore, collection_prefix, settle
from chateval.models import ModelLayer, ModelSpec
from chateval.testing.fake_qdrant import FakeQdrantServer

pytestmark = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")

FIXTURES = Path(__file__).parent / "fixtures"
UTC = timezone.utc
SESSION = Session(id="s1", date=datetime(2024, 1, 10, tzinfo=UTC), turns=[
    Turn(id="s1-t1", role="user", content="I adopted a cat named Luna last week."),
    Turn(id="s1-t2", role="assistant", content="Congratulations on Luna!")])


def make(name: str, location: str, prefix: str) -> MemorySystem:
    system = MEMORY_SYSTEMS.get(name)(ModelLayer(ModelSpec.parse("offline")), qdrant=location,
                                      embedder=make_embedder("hash", cache=False))
    system.collection_prefix = prefix
    return system


async def names_in(folder: Path) -> list[str]:
    """The collections a Qdrant folder holds, seen by a client of its own."""
    client = AsyncQdrantClient(path=str(folder))
    try:
        return [c.name for c in (await client.get_collections()).collections]
    finally:
        await client.close()


def test_collection_prefix_is_readable_and_valid():
    assert collection_prefix("runs/lme S (dev)", "a1b2c3") == "chateval-runs-lme-S-dev-a1b2c3"
    assert collection_prefix("memory_update", base="chateval-x") == "chateval-x-memory_update"


@pytest.mark.parametrize("name", ["retrieval", "memory_update"])
async def test_local_mode_collection_deleted_on_reset_and_aclose(name, tmp_path):
    folder = tmp_path / "q"
    system = make(name, str(folder), "chateval-run1-" + name)
    await system.ingest(SESSION)
    store = system._store
    assert [c for c in await store.collections()] == [store.collection]
    assert store.collection.startswith(f"chateval-run1-{name}-")
    assert await store.count() == system.item_count() > 0
    system.reset()  # inside the loop: the deletion is awaited before the store is used again
    assert await store.count() == 0
    await system.ingest(SESSION)
    assert await store.count() == system.item_count() > 0
    await system.aclose()
    assert system._store is None and await names_in(folder) == []


def test_local_mode_sync_close_outside_a_loop_deletes_too(tmp_path):
    folder = tmp_path / "q"
    system = make("retrieval", str(folder), "chateval-sync")
    asyncio.run(system.ingest(SESSION))
    assert system.item_count() > 0
    system.close()  # no running loop: the deletion runs to completion here
    assert asyncio.run(names_in(folder)) == []


async def test_sync_close_inside_a_loop_finishes_with_settle(tmp_path):
    folder = tmp_path / "q"
    system = make("retrieval", str(folder), "chateval-task")
    await system.ingest(SESSION)
    system.close()  # a task in this loop
    await settle()
    assert await names_in(folder) == []


async def test_a_named_collection_is_kept(tmp_path):
    store = VectorStore(4, location=str(tmp_path / "q"), collection="mine")
    await store.upsert(["a"], np.eye(4, dtype=np.float32)[:1])
    await store.aclose()
    assert await names_in(tmp_path / "q") == ["mine"]


async def test_server_store_sends_api_key_and_deletes_its_collection(monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", "k-123")
    with FakeQdrantServer() as server:
        store = VectorStore(4, location=server.url, prefix="chateval-wire")
        v = np.eye(4, dtype=np.float32)
        await store.upsert(["a", "b", "c"], v[:3])
        assert (await store.search(v[1], 2))[0] == ("b", pytest.approx(1.0))  # the fake's cosine, over the wire
        store.reset()
        assert await store.count() == 0
        await store.aclose()
        assert server.collections == {}
        assert server.created == [store.collection, store.collection]  # made, dropped by reset, made again
        assert {r.api_key for r in server.requests} == {"k-123"}
        assert [(r.method, r.path) for r in server.requests][-1] == ("DELETE", f"/collections/{store.collection}")


@pytest.mark.slow
def test_benchmark_run_on_a_server_leaves_no_collection(tmp_path, monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", "k-456")
    out = tmp_path / "lme run"
    with FakeQdrantServer() as server:
        code = main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--out", str(out),
                     "--systems", "retrieval,memory_update", "--embedder", "hash", "--answer-model", "offline",
                     "--qdrant-url", server.url, "--workers", "2"])
        assert code == 0
        n_questions = len(json.loads((FIXTURES / "lme_tiny.json").read_text()))
        assert len(server.created) == 2 * n_questions  # one collection per (question, system)
        for name in server.created:
            assert name.startswith("chateval-lme-run-")
            assert "-retrieval-" in name or "-memory_update-" in name
        assert server.collections == {}  # every one deleted as its unit finished
        assert {r.api_key for r in server.requests} == {"k-456"}
        upserts = [r for r in server.requests if r.method == "PUT" and r.path.endswith("/points")]
        assert upserts and all(r.body["points"] for r in upserts)
    config = (out / "config.json").read_text()
    assert "k-456" not in config and json.loads(config)["qdrant"] == "server"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_failed"] == 0


def test_memory_ask_on_a_server_deletes_its_collection(capsys):
    with FakeQdrantServer() as server:
        code = main(["memory", "ask", "--system", "retrieval", "--data", str(FIXTURES / "lme_tiny.json"),
                     "--question-id", "t_job", "--model", "offline", "--embedder", "hash", "--qdrant-url", server.url])
        assert code == 0, capsys.readouterr().err
        assert len(server.created) == 1 and server.created[0].startswith("chateval-ask-t_job-")
        assert server.collections == {}
    assert "recalled" in capsys.readouterr().out  # what it shows comes after the collection is gone


@pytest.mark.slow
def test_head2head_closing_systems_synchronously_leaves_no_collection(tmp_path, monkeypatch):
    # head2head closes each conversation's systems from synchronous code: the deletions run as
    # tasks of the loop and the run waits for them before it returns.
    with FakeQdrantServer() as server:
        code = main(["bench", "head2head", "--data", str(FIXTURES / "lme_tiny.json"), "--out", str(tmp_path / "h2h"),
                     "--systems", "retrieval,memory_update", "--embedder", "hash", "--answer-model", "offline",
                     "--qdrant-url", server.url, "--limit", "2"])
        assert code == 0
        assert len(server.created) == 4 and server.collections == {}
