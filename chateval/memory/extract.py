"""LLM steps shared by several memory systems: summarise a session, extract memory sentences."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ..steps import TypedStep
from ..text import content_words, first_sentence
from .types import Session, Turn


class SessionInputs(BaseModel):
    session_id: str
    date: datetime
    turns: list[Turn]
    previous: str | None = None  # a running summary to update (rsum)


class Summary(BaseModel):
    summary: str


class MemoryFact(BaseModel):
    text: str = Field(description="one self-contained sentence about the user or the conversation")
    turn_ids: list[str] = Field(default_factory=list, description="ids of the turns it comes from")


class MemoryFacts(BaseModel):
    facts: list[MemoryFact]


def session_inputs(session: Session, previous: str | None = None) -> SessionInputs:
    return SessionInputs(session_id=session.id, date=session.date, turns=session.turns, previous=previous)


def _is_user(t: Turn) -> bool:
    return t.role.lower() not in ("assistant", "system")


def _gist(t: Turn, words: int = 40) -> str:
    tokens = t.content.split()
    return " ".join(tokens[:words]) + (" …" if len(tokens) > words else "")


def offline_summary(inp: SessionInputs) -> Summary:
    """Extractive: the first sentence of each substantive user-side turn (at most 8)."""
    lines = [f"{t.role}: {first_sentence(t.content, 160)}" for t in inp.turns if _is_user(t) and len(content_words(t.content)) >= 3]
    body = " ".join(lines[:8]) or "(nothing of note)"
    text = f"[{inp.date:%Y-%m-%d}] {body}"
    return Summary(summary=f"{inp.previous}\n{text}" if inp.previous else text)


def offline_facts(inp: SessionInputs) -> MemoryFacts:
    """One fact per substantive user-side turn: who said it and its gist, with its turn id."""
    return MemoryFacts(facts=[
        MemoryFact(text=f"{t.role} said: {_gist(t)}", turn_ids=[t.id])
        for t in inp.turns if _is_user(t) and len(content_words(t.content)) >= 3
    ])


SUMMARIZE_SESSION: TypedStep[SessionInputs, Summary] = TypedStep(
    "summarize_session", template="memory/summarize_session.j2", inputs=SessionInputs, output=Summary,
    offline=offline_summary,
)
UPDATE_SUMMARY: TypedStep[SessionInputs, Summary] = TypedStep(
    "update_summary", template="memory/update_summary.j2", inputs=SessionInputs, output=Summary,
    offline=offline_summary,
)
EXTRACT_FACTS: TypedStep[SessionInputs, MemoryFacts] = TypedStep(
    "extract_facts", template="memory/extract_facts.j2", inputs=SessionInputs, output=MemoryFacts,
    offline=offline_facts,
)
