"""The dataset-facing types every loader produces and every memory system consumes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator


def as_utc(dt: datetime) -> datetime:
    """Naive datetimes are taken to be UTC; aware ones are converted to UTC. So naive and
    aware inputs can be mixed and still compare (the defined behaviour for bad input)."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


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
