"""An exact cosine top-k over vectors kept in memory, searched many queries at a time.

Qdrant's local mode answers each query by re-normalising every stored vector in Python-driven
numpy (O(N·d) allocations per query), which makes an ingest that searches once per new memory
quadratic in practice. This index keeps the vectors normalised once, as Qdrant stores them
(float32, divided by their norm), scores a batch of queries with one matrix product, and
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
    """String-keyed unit vectors in insertion order; an id added again keeps its place."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._rows = np.zeros((0, 0), dtype=np.float64)  # capacity-doubling buffer
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, ids: list[str], vectors: np.ndarray) -> None:
        vecs = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=-1, keepdims=True)
        unit = np.where(norms > _EPS, vecs / np.where(norms > _EPS, norms, 1.0), vecs).astype(np.float64)
        if self._rows.shape[1] != unit.shape[1]:
            if self._n:
                raise ValueError(f"vector dimension {unit.shape[1]} != the index's {self._rows.shape[1]}")
            self._rows = np.zeros((0, unit.shape[1]), dtype=np.float64)
        for key, row in zip(ids, unit):
            at = self._pos.get(key)
            if at is None:
                if self._n == len(self._rows):
                    grown = np.zeros((max(16, 2 * len(self._rows)), unit.shape[1]), dtype=np.float64)
                    grown[: self._n] = self._rows[: self._n]
                    self._rows = grown
                at = self._pos[key] = self._n
                self._ids.append(key)
                self._n += 1
            self._rows[at] = row

    def search_many(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Per query, the ``k`` best (id, cosine similarity), best first."""
        if not self._n or not len(queries):
            return [[] for _ in range(len(queries))]
        q = np.atleast_2d(np.asarray(queries, dtype=np.float64))
        qn = np.linalg.norm(q, axis=-1, keepdims=True)
        q = q / np.where(qn != 0.0, qn, _EPS)
        # Reversed columns: a stable descending sort then puts the later of equal scores first.
        with one_blas_thread():
            scores = (q @ self._rows[: self._n].T)[:, ::-1]
        k = min(max(1, k), self._n)
        out = []
        for row in scores:
            if k < self._n:
                # The k-th best score, then every column at least as good (ties included), sorted.
                cut = -np.partition(-row, k - 1)[k - 1]
                cand = np.flatnonzero(row >= cut)
                best = cand[np.argsort(-row[cand], kind="stable")][:k]
            else:
                best = np.argsort(-row, kind="stable")
            out.append([(self._ids[self._n - 1 - c], float(row[c])) for c in best])
        return out

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]
