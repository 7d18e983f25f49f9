"""generative_agents: the memory-stream retrieval score of Generative Agents (Park et al. 2023).

Each session becomes extracted memory sentences; an LLM rates each one's importance (1-10) when
it is written. A query scores every memory (or the ``candidates`` most similar) by

    score = w_recency * recency + w_importance * importance + w_relevance * relevance

recency = decay ** (hours since last access), relevance = cosine similarity, each term min-max
normalised over the candidates (a constant term is 0 for all, see ``scoring.min_max``). The top
k are recalled and their last-access time moves to ``now``: a read is a write, as in the paper.
Reflections and planning (the rest of the paper's agent architecture) are not part of this
memory system.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...models.steps import TypedStep
from ...util.text import content_words
from .. import scoring
from ..base import memory_system
from ..types import MemoryItem, Session
from .retrieval import VectorMemory


# --- the importance step ------------------------------------------------------------------
class ImportanceInputs(BaseModel):
    memories: list[str]  # rated in one call per session (the paper rates each on creation)


class ImportanceRating(BaseModel):
    id: int = Field(description="the memory's number, from 1")
    importance: int = Field(description="1 (mundane) to 10 (extremely poignant)")

    @field_validator("importance", mode="before")
    @classmethod
    def _clamp(cls, v: object) -> int:
        # Models sometimes answer 0, 11 or 7.5: clamp to the scale rather than re-ask.
        return min(10, max(1, round(float(v))))  # type: ignore[arg-type]


class ImportanceRatings(BaseModel):
    ratings: list[ImportanceRating]


_EVENTS = frozenset(
    """married marry marrying wedding engaged engagement divorce divorced born birth baby pregnant
    died death passed funeral graduated graduate graduation promoted promotion hired fired quit laid job career
    moved moving relocated accident injured injury diagnosed diagnosis surgery hospital sick illness cancer
    breakup broke adopted retired retirement accepted admission rejected lost won award asylum visa bought
    sold house apartment started starting new""".split()
)
_PREFERENCES = frozenset(
    """love loves loved like likes hate hates hated prefer prefers preferred favorite favourite
    enjoy enjoys enjoyed allergic allergy vegan vegetarian afraid fear dream goal goals plan plans planning
    hope wish want wants""".split()
)
_MONTHS = (
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday yesterday tomorrow week month year"
).split()
_DATEISH = re.compile(r"\d|\b(" + "|".join(_MONTHS) + r")\b", re.IGNORECASE)
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def offline_importance_of(text: str) -> int:
    """Deterministic 1-10: a little for substance, more for life events, preferences, dates
    and named people or places. A heuristic standing in for the LLM's rating, labelled offline."""
    words = set(content_words(text))
    score = 1 + min(3, len(words) // 5)
    score += 3 if words & _EVENTS else 0
    score += 2 if words & _PREFERENCES else 0
    score += 1 if _DATEISH.search(text) else 0
    score += 1 if any(m.group(0) != "Speaker" for m in _NAME.finditer(text)) else 0
    return min(10, max(1, score))


def offline_importance(inp: ImportanceInputs) -> ImportanceRatings:
    return ImportanceRatings(
        ratings=[ImportanceRating(id=n + 1, importance=offline_importance_of(m)) for n, m in enumerate(inp.memories)]
    )


RATE_IMPORTANCE: TypedStep[ImportanceInputs, ImportanceRatings] = TypedStep(
    "rate_importance",
    template="memory/rate_importance.j2",
    inputs=ImportanceInputs,
    output=ImportanceRatings,
    offline=offline_importance,
)
DEFAULT_IMPORTANCE = 5  # a memory the model left unrated: the middle of the scale


# --- the system ---------------------------------------------------------------------------
class GenerativeAgentsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(10, ge=1, le=1000)  # memories recalled per question
    # The paper sets all weights to 1; its released code uses recency 0.5, relevance 3, importance 2.
    w_recency: float = Field(1.0, ge=0)
    w_importance: float = Field(1.0, ge=0)
    w_relevance: float = Field(1.0, ge=0)
    decay: float = Field(0.995, gt=0, le=1)  # recency factor per time unit
    time_unit_s: float = Field(scoring.HOUR_S, gt=0)  # the paper decays per (game) hour
    # None: score every memory (the paper's memory stream); n: only the n most similar.
    candidates: int | None = Field(None, ge=1)


@memory_system("generative_agents")
class GenerativeAgents(VectorMemory[GenerativeAgentsSettings]):
    description = (
        "memory sentences with LLM-rated importance in Qdrant; top-k by normalised "
        "recency + importance + relevance; recall refreshes last access"
    )
    paper = "Park et al. 2023, Generative Agents: Interactive Simulacra of Human Behavior (UIST)"
    Settings = GenerativeAgentsSettings

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.importance: dict[str, int] = {}
        self.last_access: dict[str, datetime] = {}

    async def _ingest(self, session: Session) -> None:
        items = await self.extract(session)
        if not items:
            return
        out = await RATE_IMPORTANCE.run(
            self.layer, ImportanceInputs(memories=[i.text for i in items]), log=self.log, prompts=self.prompts
        )
        rated = {r.id: r.importance for r in out.ratings}
        for n, item in enumerate(items, start=1):
            if n not in rated:
                item.meta["importance_defaulted"] = True
            self.importance[item.id] = rated.get(n, DEFAULT_IMPORTANCE)
            self.last_access[item.id] = session.date
        await self.add(items)

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        if not self.items:
            return []
        s = self.settings
        (qv,) = await self.embedder.embed([query])
        hits = await self.search(qv, min(s.candidates or len(self.items), len(self.items)))
        recency = [
            scoring.ga_recency(scoring.elapsed(self.last_access[i.id], now, s.time_unit_s), s.decay) for i, _ in hits
        ]
        importance = [float(self.importance[i.id]) for i, _ in hits]
        relevance = [cos for _, cos in hits]
        scores = scoring.ga_scores(recency, importance, relevance, (s.w_recency, s.w_importance, s.w_relevance))
        ranked = sorted(zip(scores, range(len(hits))), key=lambda x: (-x[0], x[1]))[: k or s.k]
        out = []
        for score, j in ranked:
            item = hits[j][0]
            out.append(
                item.model_copy(
                    update={
                        "score": score,
                        "scores": {"recency": recency[j], "importance": importance[j], "relevance": relevance[j]},
                    }
                )
            )
            self.last_access[item.id] = max(self.last_access[item.id], now)  # retrieval is an access
        return out

    def _reset(self) -> None:
        super()._reset()
        self.importance.clear()
        self.last_access.clear()
