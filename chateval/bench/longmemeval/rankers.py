"""Baseline rankers for retrieval-only evaluation: BM25, dense embeddings, and RRF fusion."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...memory.embeddings import Embedder
from ...memory.fusion import RRF_K, rrf  # noqa: F401  (re-exported: the hybrid baseline fuses with it)
from ...memory.lexical import BM25Index


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
