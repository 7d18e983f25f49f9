"""The in-memory cosine index THEANINE searches with (issue 38): the same top-k as Qdrant's
exact local search, equal scores ordered later-added first, many queries in one call."""

from __future__ import annotations

import numpy as np
import pytest

from chateval.memory import cosine_index
from chateval.memory.cosine_index import CosineIndex
from chateval.memory.vector import VectorStore


async def test_same_top_k_and_scores_as_qdrant_local():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(400, 32)).astype(np.float32)
    ids = [f"m{i}" for i in range(len(vectors))]
    index, store = CosineIndex(), VectorStore(32)
    try:
        for lo in range(0, 400, 50):  # added in batches, as sessions are
            index.add(ids[lo : lo + 50], vectors[lo : lo + 50])
            await store.upsert(ids[lo : lo + 50], vectors[lo : lo + 50])
        queries = rng.normal(size=(20, 32)).astype(np.float32)
        for k in (1, 3, 10, 400, 500):
            mine = index.search_many(queries, k)
            for q, got in zip(queries, mine, strict=True):
                want = await store.search(q, k)
                assert [m for m, _ in got] == [m for m, _ in want]
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
    finally:
        await store.aclose()


def test_equal_scores_later_added_first_and_ties_at_the_cut_kept_in_order():
    index = CosineIndex()
    v = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    index.add(["a", "b", "c", "d"], np.stack([v, 2 * v, np.array([0, 1, 0], np.float32), 3 * v]))
    assert [m for m, _ in index.search_many(v[None], 2)[0]] == ["d", "b"]
    assert [m for m, _ in index.search_many(v[None], 4)[0]] == ["d", "b", "a", "c"]
    # Re-adding an id keeps its place (as an upsert does) and replaces its vector.
    index.add(["d"], np.array([[0, 1, 0]], np.float32))
    assert len(index) == 4
    assert [m for m, _ in index.search_many(v[None], 4)[0]] == ["b", "a", "d", "c"]


def test_empty_and_zero_vectors():
    index = CosineIndex()
    assert index.search_many(np.ones((2, 3)), 3) == [[], []]
    index.add(["z", "x"], np.array([[0, 0, 0], [1, 1, 0]], np.float32))
    assert index.search_many([], 3) == []
    (hits,) = index.search_many(np.array([[1.0, 1.0, 0.0]]), 5)
    assert [m for m, _ in hits] == ["x", "z"] and hits[0][1] == pytest.approx(1.0) and hits[1][1] == 0.0
    with pytest.raises(ValueError, match="dimension"):
        index.add(["w"], np.ones((1, 4), np.float32))


def test_the_product_runs_on_one_blas_thread_and_the_threads_come_back(monkeypatch):
    # OpenBLAS's per-core threads cost 30-90 ms of wall time per small product on a busy machine
    # (benchmarks/theanine_scale.py, BENCHMARKS.md): the search asks for one thread, then gives them back.
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    with cosine_index.one_blas_thread():
        assert blas_threads() and set(blas_threads()) == {1}
    assert blas_threads() == before

    seen = []
    real = cosine_index.one_blas_thread

    def spy():
        seen.append(blas_threads())
        return real()

    monkeypatch.setattr(cosine_index, "one_blas_thread", spy)
    index = CosineIndex()
    index.add(["a", "b"], np.eye(2, dtype=np.float32))
    assert [m for m, _ in index.search_many(np.eye(2, dtype=np.float32), 1)[0]] == ["a"]
    assert seen == [before]  # entered once per search_many call
