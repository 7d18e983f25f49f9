"""human_like: recall by probability, consolidation by spaced recall (Hou et al., CHI EA 2024).

Each session becomes extracted memory sentences in Qdrant (the paper's store). Every memory has
a consolidation g (1 when written) and a last-recall time. For a query, each memory's recall
probability is

    p = (1 - exp(-r * exp(-t / g))) / (1 - exp(-1))

r the cosine similarity to the query, t the time since the memory was last recalled (or
written) in ``time_unit_s`` (1e7 s reproduces the paper's Table 1 within 0.001). Memories with
p > k are recalled, most probable first, at most ``top_k`` (1, as in the paper and the released
code, which put the one most probable memory in the prompt). Each recalled memory consolidates:
g += S(t) = (1 - exp(-t)) / (1 + exp(-t)) and its last recall moves to now, so memories
recalled at long intervals come to decay more slowly than ones recalled in quick succession.

p can pass k = 0.86 only when r > 0.784 (``scoring.hou_min_relevance``), so with common
sentence embedders many questions recall nothing. ``fallback_k`` > 0 (ours, in neither the paper
nor the code) then passes the most probable memories to the answer anyway, marked
``below_threshold`` and not consolidated. ``min_relevance`` drops candidates below a cosine
first (the released code searches with a cosine floor of 0.8).

``variant="released"`` follows the authors' released code instead (tamoharu/Agent-Memory-CHI24):
t counts messages (every ingested turn is one; a question is the next one) since the memory's
last source turn or last recall; each candidate with cosine >= 0.8 is consolidated with S(t)
*before* its p is computed; there is no p > k test: the ``top_k`` most probable candidates are
recalled (the code recalls one).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import scoring
from ..base import memory_system
from ..types import MemoryItem, Session
from .retrieval import VectorMemory


class HumanLikeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(scoring.HOU_THRESHOLD, ge=0, lt=1)  # the paper's k (0: no threshold)
    time_unit_s: float = Field(scoring.HOU_TIME_UNIT_S, gt=0)
    top_k: int = Field(1, ge=1, le=1000)  # recalled memories per question, most probable first (paper: 1)
    min_relevance: float = Field(0.0, ge=-1, le=1)  # cosine floor for candidates (released code: 0.8)
    g0: float = Field(1.0, gt=0)  # consolidation of a new memory
    fallback_k: int = Field(0, ge=0, le=1000)  # ours; 0: the paper (nothing above k, nothing recalled)
    variant: Literal["paper", "released"] = "paper"  # released: the authors' code (messages as time)


RELEASED_COS_FLOOR = 0.8  # the released code's search threshold (config/parameters.py: cos_th)


class Trace(BaseModel):
    g: float
    last_recall: datetime
    last_message: int = 0  # variant "released": the message count at writing / last recall
    recalls: int = 0


@memory_system("human_like")
class HumanLike(VectorMemory[HumanLikeSettings]):
    description = (
        "memory sentences in Qdrant recalled when p(relevance, time, consolidation) > k; "
        "recall consolidates (Hou et al. 2024)"
    )
    paper = (
        "Hou, Tamoto & Miyashita 2024, My agent understands me better: integrating dynamic human-like "
        "memory recall and consolidation in LLM-based agents (CHI EA)"
    )
    Settings = HumanLikeSettings

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.traces: dict[str, Trace] = {}
        self.messages = 0  # turns ingested so far (the released code's clock)

    async def _ingest(self, session: Session) -> None:
        items = await self.extract(session)
        await self.add(items)
        index = {t.id: self.messages + n + 1 for n, t in enumerate(session.turns)}  # 1-based message numbers
        self.messages += len(session.turns)
        self.traces.update(
            {
                i.id: Trace(
                    g=self.settings.g0,
                    last_recall=session.date,
                    last_message=max((index[t] for t in i.turn_ids if t in index), default=self.messages),
                )
                for i in items
            }
        )

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        if not self.items:
            return []
        s = self.settings
        released = s.variant == "released"
        floor = max(s.min_relevance, RELEASED_COS_FLOOR) if released else s.min_relevance
        self.messages += released  # the question is the next message
        (qv,) = await self.embedder.embed([query])
        scored = []
        for item, r in await self.search(qv, len(self.items)):  # p is not monotone in r alone: all
            if r < floor:
                continue
            tr = self.traces[item.id]
            if released:  # t in messages; the candidate is consolidated before p is computed
                t = float(self.messages - tr.last_message)
                g = scoring.hou_consolidate(tr.g, t)
            else:
                t, g = scoring.elapsed(tr.last_recall, now, s.time_unit_s), tr.g
            scored.append((scoring.hou_recall_probability(r, t, g), r, t, g, item))
        scored.sort(key=lambda x: -x[0])  # stable: ties keep Qdrant's order
        cap = k or s.top_k
        recalled = (scored if released else [x for x in scored if x[0] > s.threshold])[:cap]
        # fallback_k is its own count (not capped by top_k), only by an explicit k from the caller
        fallback = [] if recalled else scored[: min(k or s.fallback_k, s.fallback_k)]
        out = []
        for p, r, t, g, item in recalled + fallback:
            tr = self.traces[item.id]
            parts = {"relevance": r, "p": p, "g": g}
            meta = dict(item.meta)
            if recalled:
                tr.g = g if released else scoring.hou_consolidate(tr.g, t)  # S(t), t since the previous recall
                tr.last_recall = max(tr.last_recall, now)
                tr.last_message = self.messages
                tr.recalls += 1
                meta.update(g_after=tr.g, recalls=tr.recalls)
            else:
                meta["below_threshold"] = True
            out.append(item.model_copy(update={"score": p, "scores": parts, "meta": meta}))
        return out

    def _reset(self) -> None:
        super()._reset()
        self.traces.clear()
        self.messages = 0
