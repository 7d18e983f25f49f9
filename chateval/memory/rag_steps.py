"""The typed LLM steps of ``longmemeval_rag`` besides the shared ones (facts, summaries,
answer): keyphrase extraction for key expansion, re-ranking, and chain-of-note reading.
Each has a deterministic offline version computed from its typed inputs."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

from pydantic import BaseModel, Field, field_validator

from ..models.steps import TypedStep
from ..util.text import content_words
from .extract import SessionInputs, is_user, turn_refs


class Keyphrase(BaseModel):
    text: str = Field(description="a few words naming what the turn is about")
    turn_ids: list[str] = Field(default_factory=list, description="numbers of the turns it comes from")

    _refs = field_validator("turn_ids", mode="before")(turn_refs)


class Keyphrases(BaseModel):
    keyphrases: list[Keyphrase]


OFFLINE_KEYPHRASES_PER_TURN = 6


def offline_keyphrases(inp: SessionInputs) -> Keyphrases:
    """Per substantive user turn: its most frequent content words (longer first on ties)."""
    out = []
    for n, t in enumerate(inp.turns, start=1):
        words = content_words(t.content)
        if not is_user(t) or len(words) < 3:
            continue
        counts = Counter(words)
        top = sorted(counts, key=lambda w: (-counts[w], -len(w), w))[:OFFLINE_KEYPHRASES_PER_TURN]
        out.append(Keyphrase(text=", ".join(top), turn_ids=[str(n)]))  # the turn's number, as prompted
    return Keyphrases(keyphrases=out)


EXTRACT_KEYPHRASES: TypedStep[SessionInputs, Keyphrases] = TypedStep(
    "rag_keyphrases",
    template="memory/rag_keyphrases.j2",
    inputs=SessionInputs,
    output=Keyphrases,
    offline=offline_keyphrases,
)


class Candidate(BaseModel):
    id: int
    date: datetime
    text: str


class RerankInputs(BaseModel):
    question: str
    now: datetime
    candidates: list[Candidate]


class Reranking(BaseModel):
    order: list[int] = Field(description="candidate ids, most useful first")


def offline_rerank(inp: RerankInputs) -> Reranking:
    """Distinct question words each candidate contains, most first (ties keep the given order)."""
    q = set(content_words(inp.question))
    hits = {c.id: len(q & set(content_words(c.text))) for c in inp.candidates}
    return Reranking(order=sorted(hits, key=lambda i: -hits[i]))  # sorted() is stable


RERANK: TypedStep[RerankInputs, Reranking] = TypedStep(
    "rag_rerank",
    template="memory/rag_rerank.j2",
    inputs=RerankInputs,
    output=Reranking,
    offline=offline_rerank,
)


class Note(BaseModel):
    id: int
    note: str = Field(description="what this item says that helps answer the question; empty if nothing")


class Notes(BaseModel):
    notes: list[Note]


class NotesInputs(BaseModel):
    question: str
    now: datetime
    items: list[Candidate]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def offline_notes(inp: NotesInputs) -> Notes:
    """Extractive: per item, its sentence sharing most words with the question (none: empty)."""
    q = set(content_words(inp.question))
    notes = []
    for c in inp.items:
        scored = [(len(q & set(content_words(s))), -n, s) for n, s in enumerate(_sentences(c.text))]
        best = max(scored, default=(0, 0, ""))
        notes.append(Note(id=c.id, note=best[2] if best[0] > 0 else ""))
    return Notes(notes=notes)


TAKE_NOTES: TypedStep[NotesInputs, Notes] = TypedStep(
    "rag_notes",
    template="memory/rag_notes.j2",
    inputs=NotesInputs,
    output=Notes,
    offline=offline_notes,
)
