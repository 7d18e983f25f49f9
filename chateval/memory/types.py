"""Typed data of memory systems: turns, sessions, memory items, responses, stats."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ..models import UsageTotals


def as_utc(dt: datetime) -> datetime:
    """Naive datetimes are taken to be UTC; aware ones are converted to UTC. So naive and
    aware inputs can be mixed and still compare (the defined behaviour for bad input)."""
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


class Turn(BaseModel):
    id: str
    role: str  # "user" / "assistant", or a speaker name
    content: str
    meta: dict[str, Any] = Field(default_factory=dict)  # e.g. has_answer, dataset ids


class Session(BaseModel):
    id: str
    date: datetime
    turns: list[Turn]
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("date")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return as_utc(v)

    def transcript(self) -> str:
        return "\n".join(f"{t.role}: {t.content}" for t in self.turns)


class MemoryItem(BaseModel):
    """One ranked memory with provenance back to its session and turns."""

    id: str
    text: str
    time: datetime
    session_id: str
    turn_ids: list[str] = Field(default_factory=list)
    score: float | None = None  # the system's final ranking score
    scores: dict[str, float] = Field(default_factory=dict)  # its components
    meta: dict[str, Any] = Field(default_factory=dict)


class Response(BaseModel):
    answer: str
    context: str  # exactly what the answering model was given besides the question
    context_tokens: int
    tokens_approx: bool = True  # context_tokens is a local estimate (no tokenizer download)
    recalled: list[MemoryItem] = Field(default_factory=list)
    usage: UsageTotals = Field(default_factory=UsageTotals)
    latency_s: float = 0.0


class MemoryStats(BaseModel):
    sessions: int = 0
    empty_sessions: int = 0
    items: int = 0
    llm_calls: int = 0
    cached_calls: int = 0
    ingest_s: float = 0.0
    recall_s: float = 0.0
    recalls: int = 0
    respond_s: float = 0.0
