"""LangMem: LangChain's open-source memory manager (``pip install "chateval[langmem]"``) as a system under test.

Each session is one call of LangMem's ``MemoryStoreManager`` (``create_memory_store_manager``
with its defaults) in one namespace per system instance (a case): LangMem searches the memories
it already holds for the conversation, then extracts, updates and deletes memories with its own
prompt by tool calls, and writes them to a LangGraph ``InMemoryStore`` indexed by the run's
embedder (in the process; never a server). The session date leads the messages as a system line.
Recall is the store's semantic search (LangMem's search tool default: 10); the answer is the
shared answer step. LangMem's LLM is the run's answer model (``langmem_adapters``); LangSmith
tracing is switched off around every LangMem call, whatever the environment says.
"""

from __future__ import annotations

from datetime import datetime
from importlib.metadata import version
from typing import Any, Literal
from uuid import uuid4

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import IndexConfig
from langgraph.store.memory import InMemoryStore
from langmem import create_memory_store_manager
from langsmith import tracing_context
from pydantic import BaseModel, ConfigDict, Field

from ...util.errors import ConfigError
from ..base import MemorySystem, memory_system
from ..types import MemoryItem, Session
from .langmem_adapters import chat_model, embed_function, openai_client

_ALL = 100_000  # "every item" for the store's listing (a case holds far fewer)


class LangMemSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = Field(10, ge=1, le=200)  # LangMem's search tool's default limit
    query_limit: int = Field(5, ge=1, le=100)  # existing memories shown to the extractor (LangMem's default)
    enable_deletes: bool = True  # LangMem's default: the extractor may delete outdated memories
    # What one of the top_k is, for the run's protocol card.
    granularity: Literal["fact"] = "fact"


@memory_system("langmem")
class LangMem(MemorySystem[LangMemSettings]):
    description = "LangMem (LangChain's open-source memory manager): tool-call extracted memories in a LangGraph store"
    paper = "LangChain 2025, LangMem SDK (open-source library; no paper)"
    Settings = LangMemSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.layer.spec.is_offline:
            # LangMem extracts by tool calls with its own prompt: the offline model answers neither.
            raise ConfigError(
                "langmem: the offline model cannot answer LangMem's tool calls; give a model endpoint "
                "(e.g. --answer-model openai-compatible/NAME --base-url URL)"
            )
        openai_client(self.layer)  # the wrong kind of endpoint fails here, before any unit
        self._start()

    def _start(self) -> None:
        self.namespace = ("chateval", uuid4().hex[:12])
        self._store: InMemoryStore | None = None
        self._manager: Any = None
        self._origin: dict[str, tuple[str, datetime]] = {}  # memory key -> the session that last wrote it
        self._count = 0

    async def _langmem(self) -> tuple[InMemoryStore, Any]:
        if self._store is None:
            dim = self.embedder.dim or len((await self.embedder.embed(["dimension probe"]))[0])
            self._store = InMemoryStore(index=IndexConfig(dims=dim, embed=embed_function(self.embedder)))
            # made on first use, as the store is: an instance that never ingests holds no client
            self._manager = create_memory_store_manager(
                chat_model(self.layer, self.log),
                namespace=self.namespace,
                store=self._store,
                query_limit=self.settings.query_limit,
                enable_deletes=self.settings.enable_deletes,
            )
        return self._store, self._manager

    async def _ingest(self, session: Session) -> None:
        store, manager = await self._langmem()
        messages: list[BaseMessage] = [SystemMessage(content=f"Conversation date: {session.date:%Y-%m-%d %H:%M}")]
        for t in session.turns:
            role = t.role.lower()
            if role == "user":
                messages.append(HumanMessage(content=t.content))
            elif role == "assistant":
                messages.append(AIMessage(content=t.content))
            else:  # a named speaker (LoCoMo): the name goes in the text
                messages.append(HumanMessage(content=f"{t.role}: {t.content}"))
        with tracing_context(enabled=False):
            written = await manager.ainvoke({"messages": messages})
        for w in written:
            self._origin[str(w["key"])] = (session.id, session.date)
        self._count = len(await store.asearch(self.namespace, limit=_ALL))

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        store, _ = await self._langmem()
        with tracing_context(enabled=False):
            found = await store.asearch(self.namespace, query=query, limit=k or self.settings.top_k)
        items = []
        for r in found:
            session_id, date = self._origin.get(r.key, ("", now))
            items.append(
                MemoryItem(
                    id=r.key,
                    text=_text(r.value),
                    time=date,
                    session_id=session_id,
                    turn_ids=[],
                    score=float(r.score or 0.0),
                    scores={"langmem": float(r.score or 0.0)},
                )
            )
        return items

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        return "\n".join(f"[{i.time:%Y-%m-%d}] {i.text}" for i in sorted(items, key=lambda i: i.time))

    def export(self) -> dict[str, Any] | None:
        """LangMem's stored memories for this case (text, the session that last wrote it), with the version."""
        if self._store is None:
            return None
        memories = []
        for r in self._store.search(self.namespace, limit=_ALL):
            session_id, date = self._origin.get(r.key, ("", None))
            memories.append(
                {
                    "id": r.key,
                    "memory": _text(r.value),
                    "chateval_session": session_id,
                    "session_date": date.isoformat() if date else None,
                }
            )
        return {"library": f"langmem {version('langmem')}", "memories": memories}

    def item_count(self) -> int:
        return self._count

    def _reset(self) -> None:
        self._start()


def _text(value: dict[str, Any]) -> str:
    """A stored memory's text: LangMem's default schema keeps it as ``{"content": {"content": ...}}``."""
    content = value.get("content")
    if isinstance(content, dict) and isinstance(content.get("content"), str):
        return str(content["content"])
    return str(content)
