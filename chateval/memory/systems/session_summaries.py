"""session_summaries: one LLM summary per session; every summary, oldest first, is the context."""

from __future__ import annotations

from datetime import datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ...models import approx_tokens
from ..base import MemorySystem, memory_system
from ..extract import SUMMARIZE_SESSION, session_inputs
from ..types import MemoryItem, Session


class SessionSummariesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Summaries are rendered oldest first; beyond this budget (a local estimate, ~4 characters
    # a token) the oldest summaries are dropped first, as full_context drops whole sessions.
    max_context_tokens: int = Field(120_000, gt=0)


def render_summary(item: MemoryItem, number: int) -> str:
    """A summary as the reader sees it: by its session's position in the history and its date
    (never by the session's id, as full_context's sessions)."""
    return f"## Session {number} ({item.time:%Y-%m-%d %H:%M})\n{item.text}"


@memory_system("session_summaries")
class SessionSummaries(MemorySystem[SessionSummariesSettings]):
    description = "one LLM summary per session; all summaries, oldest first, in the prompt"
    paper = "session-summary baseline (Xu et al. 2022, Beyond Goldfish Memory; LongMemEval, Wu et al. 2025)"
    Settings = SessionSummariesSettings
    supports_recall = False  # the whole (summarised) history is the context; recall() ranks it on request

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._summaries: list[MemoryItem] = []

    async def _ingest(self, session: Session) -> None:
        out = await SUMMARIZE_SESSION.run(self.layer, session_inputs(session), log=self.log, prompts=self.prompts)
        self._summaries.append(
            MemoryItem(
                id=f"{session.id}#summary",
                text=out.summary.strip(),
                time=session.date,
                session_id=session.id,
                turn_ids=[t.id for t in session.turns],
            )
        )

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        """The summaries ranked by cosine similarity with the query (for inspection and metrics;
        ``respond`` gives the model all of them)."""
        if not self._summaries:
            return []
        vectors = await self.embedder.embed([query] + [s.text for s in self._summaries])
        sims = vectors[1:] @ vectors[0]
        order = np.argsort(-sims, kind="stable")[: k or len(self._summaries)]
        return [
            self._summaries[i].model_copy(update={"score": float(sims[i]), "scores": {"relevance": float(sims[i])}})
            for i in order
        ]

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        budget, kept = self.settings.max_context_tokens, []
        number = self.session_numbers()
        for block in reversed([render_summary(s, number[s.session_id]) for s in self._summaries]):
            cost = approx_tokens(block)
            if cost > budget:
                break
            kept.append(block)
            budget -= cost
        return "\n\n".join(reversed(kept))

    @property
    def summaries(self) -> list[MemoryItem]:
        return list(self._summaries)

    def item_count(self) -> int:
        return len(self._summaries)

    def _reset(self) -> None:
        self._summaries.clear()
