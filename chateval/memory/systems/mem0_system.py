"""mem0: the open-source ``mem0.Memory`` (``pip install "chateval[mem0]"``) as a system under test.

Each session is one ``Memory.add`` under one mem0 user id per system instance (a case): mem0
extracts facts from the turns with its own prompt (the session date leads the messages as a
system line, since the open-source ``add`` refuses a timestamp), compares them with the memories
it already holds and stores them in a local Qdrant folder (a temporary directory, removed on
close; never a server). Recall is ``Memory.search`` (mem0's defaults: top 20, score floor 0.1);
the answer is the shared answer step over the recalled memories. mem0's LLM and embedder are
the run's model layer and embedder (``mem0_adapters``); mem0's telemetry is switched off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from datetime import datetime
from importlib.metadata import version
from typing import Any, Literal
from uuid import uuid4

# mem0 reads these when it is imported: no PostHog events, and its config folder (it writes a
# user id there) inside a temporary directory rather than the user's home.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "chateval-mem0"))

import mem0.memory.main as _mem0_main  # noqa: E402
import mem0.memory.telemetry as _mem0_telemetry  # noqa: E402
from mem0 import Memory  # noqa: E402
from mem0.configs.base import MemoryConfig  # noqa: E402
from pydantic import BaseModel, ConfigDict, Field  # noqa: E402

from ...util.errors import ConfigError  # noqa: E402
from ..base import MemorySystem, memory_system  # noqa: E402
from ..types import MemoryItem, Session, as_utc  # noqa: E402
from .mem0_adapters import LayerEmbedding, LayerLLM  # noqa: E402

# mem0 reads MEM0_TELEMETRY once, at its first import: if something imported it before us, the
# variable came too late, so its flag is switched off where mem0 reads it as well.
_mem0_telemetry.MEM0_TELEMETRY = False
_mem0_main.MEM0_TELEMETRY = False
# mem0 warns on every Memory that spaCy and fastembed (its optional entity boost and BM25
# keyword scoring) are missing; docs/memory.md says so once instead.
logging.getLogger("mem0").setLevel(logging.ERROR)

# mem0's factories build an OpenAI client for its LLM and embedder when the Memory is made; both
# are replaced by our layer and embedder before any call, so they get a placeholder key and a
# loopback address they never use.
_PLACEHOLDER = {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}


class Mem0Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = Field(20, ge=1, le=200)  # Memory.search's default
    threshold: float = Field(0.1, ge=-1.0, le=1.0)  # Memory.search's default score floor
    infer: bool = True  # False: mem0 stores each turn verbatim (no extraction call)
    # What one of the top_k is, for the run's protocol card (mem0 stores and returns facts; a
    # top_k above the session count does not return the whole history).
    granularity: Literal["fact"] = "fact"


@memory_system("mem0")
class Mem0(MemorySystem[Mem0Settings]):
    description = "mem0 (open-source mem0ai Memory): LLM-extracted facts in a local Qdrant folder, searched by vector"
    paper = "Chhikara et al. 2025, Mem0: Building Production-Ready AI Agents with Scalable Long-Term Memory"
    Settings = Mem0Settings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.layer.spec.is_offline and self.settings.infer:
            # mem0's extraction prompt is mem0's, not one of our typed steps: the offline model
            # has no answer for it, and every ingest would fail.
            raise ConfigError(
                "mem0: the offline model cannot answer mem0's own extraction prompt; give a model endpoint "
                "(e.g. --answer-model openai-compatible/NAME --base-url URL) or --set mem0.infer=false"
            )
        self.user_id = f"chateval-{uuid4().hex[:12]}"
        self._memory: Memory | None = None
        self._dir: str | None = None
        self._count = 0

    async def _mem0(self) -> Memory:
        if self._memory is None:
            loop = asyncio.get_running_loop()
            dim = self.embedder.dim or len((await self.embedder.embed(["dimension probe"]))[0])
            self._dir = tempfile.mkdtemp(prefix="chateval-mem0-")
            config = MemoryConfig.model_validate(
                {
                    "vector_store": {
                        "provider": "qdrant",
                        "config": {
                            "collection_name": f"{self.collection_prefix}-mem0",
                            "path": os.path.join(self._dir, "qdrant"),
                            "embedding_model_dims": dim,
                        },
                    },
                    "llm": {"provider": "openai", "config": _PLACEHOLDER},
                    "embedder": {"provider": "openai", "config": {**_PLACEHOLDER, "embedding_dims": dim}},
                    "history_db_path": os.path.join(self._dir, "history.db"),
                }
            )
            memory = await asyncio.to_thread(Memory, config)
            memory.llm = LayerLLM(self.layer, self.log, loop)
            memory.embedding_model = LayerEmbedding(self.embedder, loop)
            self._memory = memory
        return self._memory

    async def _ingest(self, session: Session) -> None:
        memory = await self._mem0()
        messages: list[dict[str, str]] = [
            {"role": "system", "content": f"Conversation date: {session.date:%Y-%m-%d %H:%M}"}
        ]
        for t in session.turns:
            role = t.role.lower()
            if role in ("user", "assistant"):
                messages.append({"role": role, "content": t.content})
            else:  # a named speaker (LoCoMo): mem0 knows user/assistant only, so the name goes in the text
                messages.append({"role": "user", "content": f"{t.role}: {t.content}"})
        meta = {"chateval_session": session.id, "session_date": session.date.isoformat()}
        result = await asyncio.to_thread(
            memory.add, messages, user_id=self.user_id, metadata=meta, infer=self.settings.infer
        )
        self._count += sum(1 for r in result.get("results", []) if r.get("event") == "ADD")

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        memory = await self._mem0()
        found = await asyncio.to_thread(
            memory.search,
            query,
            top_k=k or self.settings.top_k,
            filters={"user_id": self.user_id},
            threshold=self.settings.threshold,
        )
        items = []
        for r in found.get("results", []):
            meta = r.get("metadata") or {}
            date = meta.get("session_date")
            items.append(
                MemoryItem(
                    id=str(r["id"]),
                    text=str(r["memory"]),
                    time=as_utc(datetime.fromisoformat(date)) if date else now,
                    session_id=str(meta.get("chateval_session", "")),
                    turn_ids=[],
                    score=float(r.get("score") or 0.0),
                    scores={"mem0": float(r.get("score") or 0.0)},
                )
            )
        return items

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        return "\n".join(f"[{i.time:%Y-%m-%d}] {i.text}" for i in sorted(items, key=lambda i: i.time))

    def export(self) -> dict[str, Any] | None:
        """mem0's stored memories for this case (text, session, date), with the library's version."""
        if self._memory is None:
            return None
        # every ADD is counted, so the count bounds what is stored (updates and deletes never add)
        found = self._memory.get_all(filters={"user_id": self.user_id}, top_k=max(self._count, 1))
        memories = [
            {"id": r["id"], "memory": r["memory"], **{k: v for k, v in (r.get("metadata") or {}).items()}}
            for r in found.get("results", [])
        ]
        return {"library": f"mem0ai {version('mem0ai')}", "memories": memories}

    def item_count(self) -> int:
        return self._count

    def _reset(self) -> None:
        self.close()
        self.user_id = f"chateval-{uuid4().hex[:12]}"
        self._count = 0

    def close(self) -> None:
        memory, self._memory = self._memory, None
        if memory is not None:
            client = getattr(memory.vector_store, "client", None)
            if client is not None:
                client.close()  # releases the Qdrant folder lock
            memory.db.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
