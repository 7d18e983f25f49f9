"""retrieval: sessions become memory sentences in a vector store; recall is top-k by cosine
(Xu et al. 2022, the retrieval-augmented memory of "Beyond Goldfish Memory")."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..base import MemorySystem, SettingsT, format_items, memory_system
from ..extract import EXTRACT_FACTS, MemoryFact, cited_turns, session_inputs
from ..types import MemoryItem, Session
from ..vector import VectorStore


class RetrievalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(6, ge=1, le=1000)  # memories recalled per question
    # Recalled memories below this cosine similarity are dropped (None: always k of them).
    min_score: float | None = Field(None, ge=-1.0, le=1.0)


class TopKSettings(Protocol):
    """What the default recall of a ``VectorMemory`` reads (``RetrievalSettings`` and its kin)."""

    k: int
    min_score: float | None


class VectorMemory(MemorySystem[SettingsT]):
    """Shared machinery: memory sentences with provenance, embedded into one Qdrant collection.
    The collection is created on the first write (the embedder's dimension is known then)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._items: dict[str, MemoryItem] = {}
        self._store: VectorStore | None = None

    # --- memory sentences ----------------------------------------------------------------
    async def extract(self, session: Session) -> list[MemoryItem]:
        """The session's memory sentences, with turn ids checked against the session."""
        out = await EXTRACT_FACTS.run(self.layer, session_inputs(session), log=self.log, prompts=self.prompts)
        return [self._item(session, n, f) for n, f in enumerate(f for f in out.facts if f.text.strip())]

    def _item(self, session: Session, n: int, fact: MemoryFact) -> MemoryItem:
        cited, inferred = cited_turns(session, fact.turn_ids)
        meta = {"turn_ids_inferred": True} if inferred else {}
        return MemoryItem(
            id=f"{session.id}#m{n + 1}",
            text=fact.text.strip(),
            time=session.date,
            session_id=session.id,
            turn_ids=cited,
            meta=meta,
        )

    # --- the store -----------------------------------------------------------------------
    def _store_for(self, dim: int) -> VectorStore:
        if self._store is None:
            self._store = VectorStore(dim, location=self.qdrant, prefix=self.collection_prefix)
        return self._store

    async def add(self, items: list[MemoryItem], vectors: np.ndarray | None = None) -> None:
        if not items:
            return
        if vectors is None:
            vectors = await self.embedder.embed([i.text for i in items])
        await self._store_for(vectors.shape[1]).upsert(
            [i.id for i in items], vectors, [{"session_id": i.session_id, "time": i.time.isoformat()} for i in items]
        )
        self._items.update({i.id: i for i in items})

    async def remove(self, ids: list[str]) -> None:
        ids = [i for i in ids if i in self._items]
        if ids and self._store is not None:
            await self._store.delete(ids)
        for i in ids:
            del self._items[i]

    async def search(self, vector: np.ndarray, k: int) -> list[tuple[MemoryItem, float]]:
        if self._store is None or not self._items:
            return []
        return [(self._items[key], score) for key, score in await self._store.search(vector, k) if key in self._items]

    @property
    def items(self) -> list[MemoryItem]:
        return list(self._items.values())

    # --- MemorySystem --------------------------------------------------------------------
    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        if not self._items:
            return []
        (qv,) = await self.embedder.embed([query])
        # Systems whose settings have no k/min_score (generative_agents, ...) override _recall.
        settings = cast(TopKSettings, self.settings)
        floor = settings.min_score
        return [
            item.model_copy(update={"score": score, "scores": {"relevance": score}})
            for item, score in await self.search(qv, k or settings.k)
            if floor is None or score >= floor
        ]

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        return format_items(items)

    def item_count(self) -> int:
        return len(self._items)

    def _reset(self) -> None:
        self._items.clear()
        if self._store is not None:
            self._store.reset()

    async def aclose(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            await store.aclose()  # deletes this system's collection

    def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            store.close()


@memory_system("retrieval")
class Retrieval(VectorMemory[RetrievalSettings]):
    description = "LLM-extracted memory sentences per session in Qdrant; top-k by cosine similarity"
    paper = "Xu et al. 2022, Beyond Goldfish Memory: Long-Term Open-Domain Conversation"
    Settings = RetrievalSettings

    @classmethod
    def texts_to_embed(cls, settings: BaseModel, sessions: list[Session], question: str) -> list[str]:
        return [question]  # the memory sentences need the extraction step (a model call)

    async def _ingest(self, session: Session) -> None:
        await self.add(await self.extract(session))
