"""Typed data of memory systems: memory items, responses, stats (turns and sessions are the
datasets' types, re-exported here)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..datasets.types import Session, Turn, as_utc
from ..models import UsageTotals

__all__ = ["MemoryItem", "MemoryStats", "Response", "Session", "Turn", "as_utc"]


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
    prompt: str | None = None  # the step that wrote the answer (None: not one of ours, e.g. an HTTP agent)
    trace: dict[str, Any] = Field(default_factory=dict)  # what the system used beyond the context (retrievals, ...)


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
