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


def _full_float64_top_k(vectors: np.ndarray, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """The search as it was before the float32 screen (issue 38): every stored vector scored in
    float64, best first, equal scores the later-added first (positions, scores)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    rows = np.where(norms > 1.1920929e-7, vectors / np.where(norms > 1.1920929e-7, norms, 1.0), vectors)
    rows = rows.astype(np.float32).astype(np.float64)
    q = np.atleast_2d(queries.astype(np.float64))
    q = q / np.where((qn := np.linalg.norm(q, axis=-1, keepdims=True)) != 0.0, qn, 1.1920929e-7)
    with cosine_index.one_blas_thread():
        scores = (q @ rows.T)[:, ::-1]
    out = []
    for row in scores:
        best = np.argsort(-row, kind="stable")[: min(k, len(rows))]
        out.append([(len(rows) - 1 - int(c), float(row[c])) for c in best])
    return out


@pytest.mark.parametrize("kind", ["gaussian", "small_integers", "repeated", "sparse_signs"])
def test_the_float32_screen_gives_the_float64_top_k_ties_and_scores_included(kind):
    # Data full of exact ties (repeated vectors, integer and sparse +-1 vectors, like the hashing
    # embedder's): the float32 screen must keep every vector the float64 order could put in the
    # top k, so ids, order and scores equal the float64 search over all vectors, bit for bit.
    rng = np.random.default_rng(11)
    for d, n in ((8, 300), (256, 700), (384, 150)):
        if kind == "gaussian":
            vectors = rng.normal(size=(n, d))
        elif kind == "small_integers":
            vectors = rng.integers(-2, 3, size=(n, d)).astype(float)
        elif kind == "repeated":
            vectors = rng.normal(size=(6, d))[rng.integers(0, 6, n)] * rng.choice([1.0, 2.0, 3.0], n)[:, None]
        else:
            vectors = (rng.random((n, d)) < 0.05) * rng.choice([-1.0, 1.0], (n, d))
        vectors = vectors.astype(np.float32)
        index = CosineIndex()
        for lo in range(0, n, 37):
            index.add([f"m{i}" for i in range(lo, min(n, lo + 37))], vectors[lo : lo + 37])
        for m in (1, 2, 10):  # one query is a matrix-vector product: scored over all vectors
            queries = np.concatenate([vectors[rng.integers(0, n, m // 2)], rng.integers(-2, 3, (m - m // 2, d))])
            queries = queries.astype(np.float32)
            for k in (1, 3, 6, n, n + 4):
                got = index.search_many(queries, k)
                want = _full_float64_top_k(vectors, queries, k)
                assert [[(f"m{p}", s) for p, s in row] for row in want] == got, (d, n, m, k)


def test_the_screen_scores_only_the_vectors_rounding_could_put_in_the_top_k(monkeypatch):
    # Distinct scores: a session's queries score a few candidates in float64, not all N vectors.
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(2000, 64)).astype(np.float32)
    index = CosineIndex()
    index.add([f"m{i}" for i in range(len(vectors))], vectors)
    seen = []
    real = CosineIndex._candidates

    def spy(self, *args):
        cols, keep = real(self, *args)
        seen.append((len(cols), keep.sum(axis=1).tolist()))
        return cols, keep

    monkeypatch.setattr(CosineIndex, "_candidates", spy)
    queries = rng.normal(size=(10, 64)).astype(np.float32)
    got = index.search_many(queries, 3)
    assert got == [[(f"m{p}", s) for p, s in row] for row in _full_float64_top_k(vectors, queries, 3)]
    ((cols, per_query),) = seen
    assert all(k == 3 for k in per_query) and cols <= 30


def test_a_query_that_is_not_finite_scores_every_vector():
    index = CosineIndex()
    index.add(["a", "b", "c"], np.eye(3, dtype=np.float32))
    cols, keep = index._candidates(np.array([[np.nan, 0, 0], [1.0, 0, 0]]), index._rows[:3], 1)
    assert cols.tolist() == [0, 1, 2] and keep.all()
