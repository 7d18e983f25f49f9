"""Baseline rankers for retrieval-only evaluation: BM25, dense embeddings, and RRF fusion."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..memory.embeddings import Embedder
from ..memory.lexical import BM25Index

RRF_K = 60  # the constant of Cormack et al. (2009)


def rank_bm25(query: str, ids: Sequence[str], texts: Sequence[str]) -> list[str]:
    index = BM25Index()
    index.add(list(ids), list(texts))
    hits = [i for i, _ in index.search(query, len(ids))]
    seen = set(hits)
    return hits + [i for i in ids if i not in seen]  # unmatched documents keep corpus order at the end


async def rank_dense(query: str, ids: Sequence[str], texts: Sequence[str], embedder: Embedder) -> list[str]:
    if not ids:
        return []
    vectors = await embedder.embed(list(texts))
    q = (await embedder.embed([query]))[0]
    order = np.argsort(-(vectors @ q), kind="stable")
    return [ids[j] for j in order]


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank of d)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for pos, doc in enumerate(ranking):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + pos + 1)
    return sorted(scores, key=lambda d: (-scores[d], d))
