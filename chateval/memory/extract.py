"""LLM steps shared by several memory systems: summarise a session, extract memory sentences."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ..models.steps import TypedStep
from ..util.text import content_words, first_sentence
from .types import Session, Turn


class SessionInputs(BaseModel):
    session_id: str
    date: datetime
    turns: list[Turn]
    previous: str | None = None  # a running summary to update (rsum)


class Summary(BaseModel):
    summary: str


def turn_refs(value: Any) -> Any:
    """Cited turns as strings: a model may cite a turn's number as a JSON number."""
    if isinstance(value, list):
        return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
    return value


class MemoryFact(BaseModel):
    text: str = Field(description="one self-contained sentence about the user or the conversation")
    turn_ids: list[str] = Field(default_factory=list, description="numbers of the turns it comes from")

    _refs = field_validator("turn_ids", mode="before")(turn_refs)


class MemoryFacts(BaseModel):
    facts: list[MemoryFact]


def cited_turns(session: Session, turn_ids: list[str]) -> tuple[list[str], bool]:
    """The ids of the turns of ``session`` a model cited (in order, once each), and whether they
    had to be inferred. Prompts number a session's turns from 1 (``[3] user: ...``; ids never go
    into a prompt), so a cited number is that turn; a turn's own id is accepted too. Citing no turn of the session (or only invented ones) falls back to the
    whole session, the only provenance that is then true."""
    known = [t.id for t in session.turns]
    ids = set(known)

    def turn(ref: str) -> str | None:
        ref = ref.strip().strip("[]")
        if ref.isdigit():
            n = int(ref)
            return known[n - 1] if 1 <= n <= len(known) else None
        return ref if ref in ids else None

    cited = [t for t in dict.fromkeys(turn(str(r)) for r in turn_ids) if t is not None]
    return (cited, False) if cited else (known, True)


def session_inputs(session: Session, previous: str | None = None) -> SessionInputs:
    return SessionInputs(session_id=session.id, date=session.date, turns=session.turns, previous=previous)


def is_user(t: Turn) -> bool:
    return t.role.lower() not in ("assistant", "system")


def gist(t: Turn, words: int = 40) -> str:
    tokens = t.content.split()
    return " ".join(tokens[:words]) + (" …" if len(tokens) > words else "")


def offline_summary(inp: SessionInputs) -> Summary:
    """Extractive: the first sentence of each substantive user-side turn (at most 8)."""
    lines = [
        f"{t.role}: {first_sentence(t.content, 160)}"
        for t in inp.turns
        if is_user(t) and len(content_words(t.content)) >= 3
    ]
    body = " ".join(lines[:8]) or "(nothing of note)"
    text = f"[{inp.date:%Y-%m-%d}] {body}"
    return Summary(summary=f"{inp.previous}\n{text}" if inp.previous else text)


# A running summary is rewritten, not appended to: the offline stand-in keeps at most this many
# sentences, so after N sessions it is one bounded summary rather than N session summaries.
OFFLINE_RUNNING_SUMMARY_LINES = 16


def offline_update_summary(inp: SessionInputs) -> Summary:
    """Extractive running summary, one dated sentence a line: the new session's sentences (as
    ``offline_summary`` picks them) are added, an older line that a new one repeats or revises
    (most of its content words recur) is dropped, and the oldest lines go first beyond the cap."""
    new = [
        f"[{inp.date:%Y-%m-%d}] {t.role}: {first_sentence(t.content, 160)}"
        for t in inp.turns
        if is_user(t) and len(content_words(t.content)) >= 3
    ][:8]

    def said(line: str) -> set[str]:  # the content words of what was said, without date and speaker
        return set(content_words(line.split("] ", 1)[-1].split(": ", 1)[-1]))

    new_words = [said(line) for line in new]
    kept = []
    for line in (inp.previous or "").splitlines():
        old = said(line)
        if line.strip() and not any(old and len(old & w) >= 0.6 * len(old) for w in new_words):
            kept.append(line)
    lines = (kept + new)[-OFFLINE_RUNNING_SUMMARY_LINES:]
    return Summary(summary="\n".join(lines) or inp.previous or f"[{inp.date:%Y-%m-%d}] (nothing of note)")


def offline_facts(inp: SessionInputs) -> MemoryFacts:
    """One fact per substantive user-side turn: who said it and its gist, citing the turn's
    number as the prompt shows it."""
    return MemoryFacts(
        facts=[
            MemoryFact(text=f"{t.role} said: {gist(t)}", turn_ids=[str(n)])
            for n, t in enumerate(inp.turns, start=1)
            if is_user(t) and len(content_words(t.content)) >= 3
        ]
    )


SUMMARIZE_SESSION: TypedStep[SessionInputs, Summary] = TypedStep(
    "summarize_session",
    template="memory/summarize_session.j2",
    inputs=SessionInputs,
    output=Summary,
    offline=offline_summary,
)
UPDATE_SUMMARY: TypedStep[SessionInputs, Summary] = TypedStep(
    "update_summary",
    template="memory/update_summary.j2",
    inputs=SessionInputs,
    output=Summary,
    offline=offline_update_summary,
)
EXTRACT_FACTS: TypedStep[SessionInputs, MemoryFacts] = TypedStep(
    "extract_facts",
    template="memory/extract_facts.j2",
    inputs=SessionInputs,
    output=MemoryFacts,
    offline=offline_facts,
)
