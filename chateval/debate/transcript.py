"""Transcript entries: who said what, in which round, at what cost."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class TranscriptTurn(BaseModel):
    speaker: str
    round: int  # 1-based; the re-ask after the last round keeps the last round's number
    kind: Literal["debate", "summary", "reask"] = "debate"
    text: str
    order: Literal["original", "swapped"] = "original"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_approx: bool = False
    cached: bool = False
    latency_s: float = 0.0
