"""A cross-encoder for graphiti-core's ``cross_encoder`` reranker, scored with our embedder.

graphiti's own rerankers need a model's token log-probabilities (OpenAI, Gemini) or a BGE
model downloaded from the hub; neither goes through our model layer, and no cross-encoder model
ships in a package that installs here (hub downloads fail), so none loads offline. This one ranks
passages by cosine between the query's and each passage's embedding: no LLM call, deterministic,
cached — a bi-encoder stand-in for the cross-encoder recipe, named as such in every item's
``scores`` ("cross_encoder (stand-in: embedding cosine)").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

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


class ModelCrossEncoder(CrossEncoderClient):
    """A real cross-encoder: a sentence-transformers CrossEncoder from a local folder (the
    ``cross_encoder_model`` setting; nothing is downloaded). Scores each (query, fact) pair."""

    def __init__(self, path: str) -> None:
        from ...util.errors import ConfigError

        where = f"zep.cross_encoder_model '{path}'"
        if not Path(path).is_dir():
            raise ConfigError(
                f"{where}: not a folder (a local sentence-transformers CrossEncoder; nothing is downloaded)"
            )
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ConfigError(f"{where}: needs sentence-transformers (pip install -e '.[local]')") from None
        try:
            self.model = CrossEncoder(path, device="cpu", local_files_only=True)
        except Exception as e:  # one line: which folder, and what the loader said
            raise ConfigError(f"{where}: cannot load it ({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
        self.name = Path(path).name

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        if not passages:
            return []
        scores = np.asarray(
            await asyncio.to_thread(self.model.predict, [(query, p) for p in passages], show_progress_bar=False),
            dtype=float,
        )
        order = np.argsort(-scores, kind="stable")
        return [(passages[i], float(scores[i])) for i in order]
