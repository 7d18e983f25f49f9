"""An exact cosine top-k over vectors kept in memory, searched many queries at a time.

Qdrant's local mode answers each query by re-normalising every stored vector in Python-driven
numpy (O(N·d) allocations per query), which makes an ingest that searches once per new memory
quadratic in practice. This index keeps the vectors normalised once, as Qdrant stores them
(float32, divided by their norm), scores a batch of queries with one matrix product (float32,
then float64 for the few vectors that rounding could put in the top k), and
orders like Qdrant: best score first, equal scores the later-added vector first (Qdrant local
takes ``argsort(scores)[::-1]``). It answers the same top-k as Qdrant's exact search; a
system keeps Qdrant as its store and uses this beside it for local (brute-force) locations.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import numpy as np

_EPS = 1.1920929e-7  # Qdrant's: a vector with a smaller norm is stored as it is
_BLAS: Any = None  # threadpoolctl's controller of the loaded BLAS libraries, made on first search
_BLAS_SEEN = -1  # len(sys.modules) when it was made: a BLAS loads with an extension module's import


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """Run the BLAS calls inside on one thread. A session's product (a few queries x N x d) is
    small: OpenBLAS's default threads (one per core) wake up and wait for each other on every
    call, which on a busy machine cost 30-90 ms of wall time per call against 2-12 ms on one
    thread (benchmarks/theanine_scale.py, issue 38); one thread also makes the scores' rounding
    the same on every machine, whatever its core count. Without threadpoolctl (the memory extra
    installs it) the BLAS keeps its threads: same top-k up to rounding, slower under load.
    The controller only knows the libraries loaded when it was made (scanning them costs ~4 ms),
    so it is made again after new modules were imported (scipy and torch bring BLAS of their own)."""
    global _BLAS, _BLAS_SEEN
    if _BLAS is None or (_BLAS is not False and len(sys.modules) != _BLAS_SEEN):
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _BLAS = False
        else:
            _BLAS, _BLAS_SEEN = ThreadpoolController(), len(sys.modules)
    return _BLAS.limit(limits=1, user_api="blas") if _BLAS else contextlib.nullcontext()


class CosineIndex:
    """String-keyed unit vectors in insertion order; an id added again keeps its place.

    The vectors are kept as Qdrant keeps them, float32. A search scores every stored vector in
    float32 (half the memory traffic and twice the SIMD width of float64: the product over all N
    vectors, once per session, is what makes an ingest quadratic), keeps only the vectors that
    float32's rounding bound cannot rule out of the top k, and scores and orders those in float64,
    as the whole search did before (issue 38): the answer is the float64 top-k, ties included."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._rows = np.zeros((0, 0), dtype=np.float32)  # capacity-doubling buffer
        self._n = 0
        self._max_norm = 0.0  # an upper bound of the stored vectors' norms (for the rounding bound)

    def __len__(self) -> int:
        return self._n

    def add(self, ids: list[str], vectors: np.ndarray) -> None:
        vecs = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=-1, keepdims=True)
        unit = np.where(norms > _EPS, vecs / np.where(norms > _EPS, norms, 1.0), vecs).astype(np.float32)
        if self._rows.shape[1] != unit.shape[1]:
            if self._n:
                raise ValueError(f"vector dimension {unit.shape[1]} != the index's {self._rows.shape[1]}")
            self._rows = np.zeros((0, unit.shape[1]), dtype=np.float32)
        if len(unit):
            self._max_norm = max(self._max_norm, float(np.linalg.norm(unit.astype(np.float64), axis=-1).max()))
        for key, row in zip(ids, unit):
            at = self._pos.get(key)
            if at is None:
                if self._n == len(self._rows):
                    grown = np.zeros((max(16, 2 * len(self._rows)), unit.shape[1]), dtype=np.float32)
                    grown[: self._n] = self._rows[: self._n]
                    self._rows = grown
                at = self._pos[key] = self._n
                self._ids.append(key)
                self._n += 1
            self._rows[at] = row

    def search_many(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Per query, the ``k`` best (id, cosine similarity), best first; equal scores, the
        later-added vector first."""
        if not self._n or not len(queries):
            return [[] for _ in range(len(queries))]
        q = np.atleast_2d(np.asarray(queries, dtype=np.float64))
        qn = np.linalg.norm(q, axis=-1, keepdims=True)
        q = q / np.where(qn != 0.0, qn, _EPS)
        rows, n = self._rows[: self._n], self._n
        k = min(max(1, k), n)
        with one_blas_thread():
            cols, keep = self._candidates(q, rows, k)
            chosen = rows if len(cols) == n else rows[cols]
            exact = q @ chosen.astype(np.float64).T  # (queries, candidates), as all were scored before
        out = []
        for i in range(len(q)):
            cand = np.flatnonzero(keep[i])[::-1]  # later-added first: a stable sort keeps equal scores so
            row = exact[i, cand]
            if k < len(cand):
                # The k-th best score, then every candidate at least as good (ties included), sorted.
                cut = -np.partition(-row, k - 1)[k - 1]
                sel = np.flatnonzero(row >= cut)
                best = sel[np.argsort(-row[sel], kind="stable")][:k]
            else:
                best = np.argsort(-row, kind="stable")
            out.append([(self._ids[cols[cand[b]]], float(row[b])) for b in best])
        return out

    def _candidates(self, q: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions of the vectors some query must score exactly, ascending; per query, which of
        them). A float32 score is within ``slack`` of the float64 one (the standard bound of a
        d-term inner product, |fl(x.y) - x.y| <= d*u*|x|*|y|, plus rounding the query to float32
        and the float64 product's own error), so a vector whose float32 score is below the k-th
        best float32 score minus twice the slack scores below k others in float64: it is neither
        in the top k nor tied with its last. Every other vector is scored in float64."""
        n, d = rows.shape
        # One query is a matrix-vector product, whose rounding can differ with a vector's position
        # (equal vectors, unequal scores): it scores every vector, as before, for the same order.
        if k >= n or len(q) == 1:
            return np.arange(n), np.ones((len(q), n), dtype=bool)
        approx = q.astype(np.float32) @ rows.T
        if not np.isfinite(approx).all():  # no bound holds: score every vector exactly
            return np.arange(n), np.ones((len(q), n), dtype=bool)
        u32, u64 = 2.0**-24, 2.0**-53
        gamma = (d + 2) * u32 / (1 - (d + 2) * u32) + (d + 2) * u64 / (1 - (d + 2) * u64)
        slack = 1.01 * gamma * np.linalg.norm(q, axis=-1) * self._max_norm  # 1%: the bound's own rounding
        kth = np.partition(approx, n - k, axis=1)[:, n - k].astype(np.float64)
        keep = approx >= (kth - 2 * slack)[:, None]
        cols = np.flatnonzero(keep.any(axis=0))
        return cols, keep[:, cols]

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]
