"""rsum: one running summary, rewritten by the LLM after each session (Wang et al. 2023)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from ..base import MemorySystem, memory_system
from ..extract import UPDATE_SUMMARY, session_inputs
from ..types import MemoryItem, Session


class RsumSettings(BaseModel):
    # No knobs: the update prompt (memory/update_summary.j2) asks the model to keep the summary
    # concise; override the template to change that.
    model_config = ConfigDict(extra="forbid")


@memory_system("rsum")
class RecursiveSummary(MemorySystem[RsumSettings]):
    description = "one running summary, rewritten after each session from the old summary and the new session"
    paper = "Wang et al. 2023, Recursively Summarizing Enables Long-Term Dialogue Memory in Large Language Models"
    Settings = RsumSettings
    supports_recall = False  # the context is the summary itself

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._summary: str | None = None
        self._absorbed: list[Session] = []  # the (non-empty) sessions the summary has absorbed

    async def _ingest(self, session: Session) -> None:
        out = await UPDATE_SUMMARY.run(
            self.layer, session_inputs(session, previous=self._summary), log=self.log, prompts=self.prompts
        )
        self._summary = out.summary.strip() or self._summary
        self._absorbed.append(session)

    @property
    def summary(self) -> str | None:
        return self._summary

    def _item(self) -> MemoryItem | None:
        sessions = self._absorbed
        if self._summary is None or not sessions:
            return None
        # One item standing for the whole history: it cites every ingested turn, and is dated
        # (and attributed to) the last session it absorbed.
        last = sessions[-1]
        return MemoryItem(
            id="rsum#summary",
            text=self._summary,
            time=last.date,
            session_id=last.id,
            turn_ids=[t.id for s in sessions for t in s.turns],
            meta={"session_ids": [s.id for s in sessions], "updates": len(sessions)},
        )

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        item = self._item()
        if item is None or (k is not None and k < 1):
            return []
        query_vec, summary_vec = await self.embedder.embed([query, item.text])
        score = float(query_vec @ summary_vec)
        return [item.model_copy(update={"score": score, "scores": {"relevance": score}})]

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        return self._summary or ""

    def item_count(self) -> int:
        return 1 if self._summary else 0

    def _reset(self) -> None:
        self._summary = None
        self._absorbed.clear()
