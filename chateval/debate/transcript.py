"""Transcript entries: who said what, in which round, at what cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from ..models import CallRecord


class TranscriptTurn(BaseModel):
    speaker: str
    round: int  # 1-based; the re-ask after the last round keeps the last round's number
    kind: Literal["debate", "summary", "reask"] = "debate"
    text: str
    order: Literal["original", "swapped"] = "original"
    stage: Literal["screen"] | None = None  # --escalate: the single judge's turns before the panel's
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_approx: bool = False
    cached: bool = False
    latency_s: float = 0.0

    @classmethod
    def from_calls(
        cls, speaker: str, round: int, kind: str, text: str, order: str, calls: Sequence[CallRecord]
    ) -> TranscriptTurn:
        """A turn with the usage of the model calls that produced it (a re-ask may add one)."""
        return cls(
            speaker=speaker,
            round=round,
            kind=kind,
            text=text,
            order=order,
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            tokens_approx=any(c.tokens_approx for c in calls),
            cached=bool(calls) and all(c.cached for c in calls),
            latency_s=sum(c.latency_s for c in calls),
        )


def turn_records(turns: Sequence[TranscriptTurn]) -> list[dict[str, object]]:
    """The turns as a benchmark records them: who said what, when; usage is counted elsewhere.
    Kept in samples.jsonl so the viewer can show a judge's debate from the run directory alone."""
    return [{"speaker": t.speaker, "round": t.round, "kind": t.kind, "order": t.order, "text": t.text} for t in turns]
