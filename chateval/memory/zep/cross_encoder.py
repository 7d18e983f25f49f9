"""A cross-encoder for graphiti-core's ``cross_encoder`` reranker, scored with our embedder.

graphiti's own rerankers need a model's token log-probabilities (OpenAI, Gemini) or a BGE
model downloaded from the hub; neither goes through our model layer, and no cross-encoder model
ships in a package that installs here (hub downloads fail), so none loads offline. This one ranks
passages by cosine between the query's and each passage's embedding: no LLM call, deterministic,
cached — a bi-encoder stand-in for the cross-encoder recipe, named as such in every item's
``scores`` ("cross_encoder (stand-in: embedding cosine)").
"""

from __future__ import annotations

import numpy as np
from graphiti_core.cross_encoder.client import CrossEncoderClient

from ..embeddings import Embedder


class EmbeddingCrossEncoder(CrossEncoderClient):
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        if not passages:
            return []
        vectors = await self.embedder.embed([query, *passages])  # rows are L2-normalised
        scores = vectors[1:] @ vectors[0]
        order = np.argsort(-scores, kind="stable")  # ties keep graphiti's (RRF) order
        return [(passages[i], float(scores[i])) for i in order]
