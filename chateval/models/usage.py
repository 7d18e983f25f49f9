"""Metering: one record per model call, collected per sample and totalled per run."""

from __future__ import annotations

import math
from typing import Iterable

from pydantic import BaseModel


class CallRecord(BaseModel):
    model: str
    step: str | None = None  # e.g. "debate_turn", "summarize_round"
    agent: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_approx: bool = False  # True when counted locally (offline model), not by an endpoint
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 1
    cost_usd: float | None = None


class UsageTotals(BaseModel):
    calls: int = 0  # calls that reached the model (cache hits excluded)
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None as soon as one call had an unknown price
    latency_s: float = 0.0
    tokens_approx: bool = False  # some counts were estimated locally

    def add(self, rec: CallRecord) -> None:
        if rec.cached:
            self.cached_calls += 1
        else:
            self.calls += 1
            self.prompt_tokens += rec.prompt_tokens
            self.completion_tokens += rec.completion_tokens
            self.latency_s += rec.latency_s
            self.tokens_approx = self.tokens_approx or rec.tokens_approx
            if self.cost_usd is not None:
                self.cost_usd = None if rec.cost_usd is None else self.cost_usd + rec.cost_usd

    def merge(self, other: "UsageTotals") -> None:
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.latency_s += other.latency_s
        self.tokens_approx = self.tokens_approx or other.tokens_approx
        if self.cost_usd is not None:
            self.cost_usd = None if other.cost_usd is None else self.cost_usd + other.cost_usd

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> "UsageTotals":
        t = cls()
        for r in records:
            t.add(r)
        return t


class CallLog:
    """Records of the calls made for one unit of work (a sample, a question)."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []
        self.errors: list[str] = []  # clean messages of calls that failed for good

    def add(self, rec: CallRecord) -> None:
        self.records.append(rec)

    def totals(self) -> UsageTotals:
        return UsageTotals.of(self.records)


def approx_tokens(text: str) -> int:
    """Local token estimate (about 4 characters a token); named 'approx' wherever reported."""
    return max(1, math.ceil(len(text) / 4)) if text else 0
