"""Our ``Embedder`` as graphiti-core's ``EmbedderClient``: the same vectors, the same on-disk
cache, whatever the spec (hash, local MiniLM, OpenAI)."""

from __future__ import annotations

from collections.abc import Iterable

from graphiti_core.embedder.client import EmbedderClient

from ..embeddings import Embedder


class LayerEmbedder(EmbedderClient):
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    async def create(self, input_data: str | list[str] | Iterable[int] | Iterable[Iterable[int]]) -> list[float]:
        # graphiti passes a string or a one-string list and wants that one vector back
        # (token-id inputs are an OpenAI-client feature it never uses with a custom embedder).
        if isinstance(input_data, str):
            text = input_data
        else:
            items = list(input_data)
            if not items or not isinstance(items[0], str):
                raise TypeError("LayerEmbedder embeds text only")
            text = items[0]
        (vector,) = await self.embedder.embed([text])
        return vector.tolist()

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        if not input_data_list:
            return []
        return (await self.embedder.embed(input_data_list)).tolist()
