"""Remote embeddings (`openai/<m>`, `openai-compatible/<m>`) through the model layer, against the
fake server's /v1/embeddings on 127.0.0.1: batches, dimension from the reply, the cache keyed by
model + endpoint + text, retries, metering, the shared concurrency limit, and a benchmark run."""

from __future__ import annotations

import asyncio
import json
import threading

import numpy as np
import pytest

from chateval.cli import main
from chateval.util.errors import ConfigError, ModelCallError
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec, RetryPolicy
from chateval.testing.fake_openai import FakeOpenAIServer, Fault
from chateval.testing.protocols import vector

from .conftest import FIXTURES

TEXTS = [f"memory number {i} about the garden" for i in range(10)]


def layer(**kw) -> ModelLayer:
    return ModelLayer(ModelSpec.parse("offline"), retry=RetryPolicy(base_delay_s=0.01), **kw)


def embedder(server: FakeOpenAIServer, lay: ModelLayer, tmp_path, **kw):
    return make_embedder("openai-compatible/emb", layer=lay, base_url=server.base_url, cache_dir=tmp_path / "emb",
                         **{"batch_size": 4, **kw})


async def test_batches_dimension_cache_and_metering(tmp_path, monkeypatch):
    monkeypatch.setenv("CHATEVAL_API_KEY", "sk-emb-canary")
    with FakeOpenAIServer(embedding_dim=12) as server:
        lay = layer()
        emb = embedder(server, lay, tmp_path)
        assert emb.dim is None  # not from a table: from the first reply
        m = await emb.embed(TEXTS)
        requests, headers = server.requests, server.request_headers
        again = await emb.embed(TEXTS[:3] + ["a new text"])
        after = server.requests[len(requests):]
    assert m.shape == (10, 12) and emb.dim == 12
    expected = np.asarray([vector(t, 12) for t in TEXTS])
    assert np.allclose(m, expected / np.linalg.norm(expected, axis=1, keepdims=True))  # each text its own row
    # Batches of 4, sent concurrently (any order), each answered in its own order.
    assert sorted(r["input"] for r in requests) == sorted([TEXTS[0:4], TEXTS[4:8], TEXTS[8:10]])
    assert {r["model"] for r in requests} == {"emb"} and {h[":path"] for h in headers} == {"/v1/embeddings"}
    assert headers[0]["authorization"] == "Bearer sk-emb-canary"
    assert [r["input"] for r in after] == [["a new text"]]  # the three cached texts were not sent again
    assert np.allclose(again[:3], m[:3])
    t = lay.totals
    assert t.calls == 4 and t.prompt_tokens == sum(s["usage"]["prompt_tokens"] for s in server.completions)
    assert t.cost_usd is None  # no price for "emb"
    cache_files = b"".join(p.read_bytes() for p in (tmp_path / "emb").rglob("*") if p.is_file())
    assert b"sk-emb-canary" not in cache_files and server.base_url.encode() not in cache_files


async def test_another_endpoint_is_another_cache_key(tmp_path):
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        await embedder(a, layer(), tmp_path).embed(TEXTS[:2])
        await embedder(b, layer(), tmp_path).embed(TEXTS[:2])  # same model name, same cache folder
        assert len(a.requests) == len(b.requests) == 1


async def test_faults_are_retried_and_a_rejected_key_fails_at_once(tmp_path):
    with FakeOpenAIServer() as server:
        server.script([Fault("429", retry_after=0.01), Fault("500"), Fault("empty")])
        lay = layer()
        m = await embedder(server, lay, tmp_path, batch_size=100).embed(TEXTS[:2])
        assert m.shape[0] == 2 and len(server.requests) == 4 and lay.totals.retries == 3
        server.script([Fault("401")])
        with pytest.raises(ModelCallError, match=r"model call to openai-compatible/emb failed after 1 attempt\(s\): HTTP 401"):
            await embedder(server, lay, tmp_path, batch_size=100).embed(["never seen"])


async def test_embedding_calls_share_the_layers_concurrency_limit(tmp_path):
    in_flight, peak = 0, 0
    lock = threading.Lock()

    def responder(body):  # runs in the server's handler thread
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        threading.Event().wait(0.05)
        with lock:
            in_flight -= 1
        return "ok"

    with FakeOpenAIServer(responder=responder) as server:
        lay = layer(max_connections=2)
        await asyncio.gather(embedder(server, lay, tmp_path, batch_size=1, cache=False).embed(TEXTS[:6]),
                             embedder(server, lay, tmp_path, batch_size=1, cache=False).embed(TEXTS[6:]))
        assert len(server.requests) == 10
    assert peak == 2  # ten single-text batches from two embedders, never more than the layer's 2


def test_bad_settings_are_one_line():
    with pytest.raises(ConfigError, match="needs --embedder-base-url"):
        make_embedder("openai-compatible/emb", cache=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder("openai/text-embedding-3-small", cache=False)
    with pytest.raises(ConfigError, match="openai-compatible/<model>"):
        make_embedder("cohere/embed", cache=False)


@pytest.mark.slow
def test_longmemeval_retrieval_with_an_embedding_server(tmp_path):
    out = tmp_path / "o"
    with FakeOpenAIServer(embedding_dim=16) as server:
        rc = main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "retrieval",
                   "--answer-model", "offline", "--embedder", "openai-compatible/emb", "--embedder-base-url",
                   server.base_url, "--embedder-batch-size", "8", "--retrieval-only", "--out", str(out)])
        sent = [r for r in server.requests if "input" in r]
    summary = json.loads((out / "summary.json").read_text())
    cfg = json.loads((out / "config.json").read_text())["judging"]
    assert rc == 0 and summary["n_failed"] == 0 and sent and all(len(r["input"]) <= 8 for r in sent)
    assert cfg["embedder"] == "openai-compatible/emb" and cfg["embedder_base_url"] == server.base_url
    assert summary["methods"]["retrieval"]["retrieval"]["n_evaluable"] > 0
    # The summary records the embedding calls: every request the server answered, with its tokens.
    usage = summary["embedding_usage"]
    assert usage["calls"] == len(sent) and usage["prompt_tokens"] > 0 and usage["failed_calls"] == 0


def test_memory_ask_with_an_embedding_server(capsys):
    data = str(FIXTURES / "lme_tiny.json")
    qid = json.loads((FIXTURES / "lme_tiny.json").read_text())[0]["question_id"]
    args = ["memory", "ask", "--system", "retrieval", "--data", data, "--question-id", qid, "--model", "offline",
            "--embedder", "openai-compatible/emb"]
    with FakeOpenAIServer(embedding_dim=8) as server:
        rc = main(args + ["--embedder-base-url", server.base_url, "--embedder-batch-size", "3"])
        sent = [r for r in server.requests if "input" in r]
    assert rc == 0 and sent and all(r["model"] == "emb" and len(r["input"]) <= 3 for r in sent)
    capsys.readouterr()
    assert main(args + ["--embedder-base-url", "ftp://nowhere"]) == 2
    err = capsys.readouterr().err
    assert "--embedder-base-url" in err and len(err.strip().splitlines()) == 1
