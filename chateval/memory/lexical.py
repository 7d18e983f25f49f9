"""Lexical search with BM25 (bm25s). The index is rebuilt lazily after changes: bm25s has no
incremental updates, and memories change far less often than they are searched."""

from __future__ import annotations

import bm25s
import numpy as np


class BM25Index:
    def __init__(self) -> None:
        self._docs: dict[str, str] = {}
        self._ids: list[str] = []
        self._model: bm25s.BM25 | None = None

    def add(self, ids: list[str], texts: list[str]) -> None:
        for i, t in zip(ids, texts):
            self._docs[i] = t
        self._model = None

    def remove(self, ids: list[str]) -> None:
        for i in ids:
            self._docs.pop(i, None)
        self._model = None

    def __len__(self) -> int:
        return len(self._docs)

    def _build(self) -> bm25s.BM25 | None:
        self._ids = list(self._docs)
        tokens = bm25s.tokenize([self._docs[i] for i in self._ids], stopwords="en", show_progress=False)
        if not tokens.vocab:  # only stopwords everywhere: nothing can match (bm25s cannot index it)
            return None
        model = bm25s.BM25()
        model.index(tokens, show_progress=False)
        self._model = model
        return model

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best-first (id, BM25 score), only documents sharing a term with the query."""
        if not self._docs or not query.strip():
            return []
        model = self._model or self._build()
        q = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if model is None or not q.vocab:
            return []
        scores = model.get_scores([w for w in q.vocab if w])  # per-document scores for the query terms
        order = np.argsort(-scores, kind="stable")[: max(1, k)]
        return [(self._ids[j], float(scores[j])) for j in order if scores[j] > 0]
