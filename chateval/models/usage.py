"""Metering: one record per model call, collected per sample and totalled per run."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from .retry import BadResponse


class CallRecord(BaseModel):
    model: str
    step: str | None = None  # e.g. "debate_turn", "summarize_round"
    agent: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_approx: bool = False  # True when counted locally (offline model), not by an endpoint
    latency_s: float = 0.0
    cached: bool = False
    failed: bool = False  # gave up after ``attempts`` tries: no reply, no tokens
    attempts: int = 1
    cost_usd: float | None = None  # a cache hit costs 0 if the model's price is known, else None
    cached_cost_usd: float | None = 0.0  # a cache hit: what it cost when answered (None: price unknown)
    # The provider's prompt cache (not our on-disk reply cache, which is ``cached``): input
    # tokens of this call read from it and written to it, both part of ``prompt_tokens``.
    # OpenAI and vLLM report reads (prompt_tokens_details.cached_tokens), Anthropic both;
    # Ollama reports neither (0).
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class UsageTotals(BaseModel):
    calls: int = 0  # calls answered by the model (cache hits and failed calls excluded)
    cached_calls: int = 0
    failed_calls: int = 0  # calls that failed for good, after their retries
    retries: int = 0  # extra attempts after a fault, over answered and failed calls
    prompt_tokens: int = 0  # of answered calls: what this run consumed
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of cache hits: what the cache saved
    cached_completion_tokens: int = 0
    # Of prompt_tokens: read from / written to the provider's prompt cache (priced accordingly).
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0  # None as soon as one call (cache hits too) had an unknown price
    # The priced calls' part of the cost (equal to cost_usd while every price is known), and the
    # models whose calls had no price: a total shows what is known and names what is not.
    known_cost_usd: float = 0.0
    unpriced: list[str] = []
    # Of cache hits: what they cost when first answered (the cost on a cold cache is
    # cost_usd + cached_cost_usd); None as soon as one hit had an unknown price.
    cached_cost_usd: float | None = 0.0
    latency_s: float = 0.0
    tokens_approx: bool = False  # some counts were estimated locally

    def add(self, rec: CallRecord) -> None:
        self.merge(
            UsageTotals(
                calls=int(not rec.cached and not rec.failed),
                cached_calls=int(rec.cached),
                failed_calls=int(rec.failed),
                retries=0 if rec.cached else rec.attempts - 1,
                prompt_tokens=0 if rec.cached else rec.prompt_tokens,
                completion_tokens=0 if rec.cached else rec.completion_tokens,
                cached_prompt_tokens=rec.prompt_tokens if rec.cached else 0,
                cached_completion_tokens=rec.completion_tokens if rec.cached else 0,
                cache_read_tokens=0 if rec.cached else rec.cache_read_tokens,
                cache_write_tokens=0 if rec.cached else rec.cache_write_tokens,
                cost_usd=rec.cost_usd,
                known_cost_usd=rec.cost_usd or 0.0,
                unpriced=[] if rec.cost_usd is not None else [rec.model],
                cached_cost_usd=rec.cached_cost_usd if rec.cached else 0.0,
                latency_s=0.0 if rec.cached else rec.latency_s,
                tokens_approx=rec.tokens_approx,
            )
        )

    def merge(self, other: UsageTotals) -> None:
        for name in (
            "calls",
            "cached_calls",
            "failed_calls",
            "retries",
            "prompt_tokens",
            "completion_tokens",
            "cached_prompt_tokens",
            "cached_completion_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "latency_s",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.tokens_approx = self.tokens_approx or other.tokens_approx
        if self.cost_usd is not None:
            self.cost_usd = None if other.cost_usd is None else self.cost_usd + other.cost_usd
        self.known_cost_usd += other.known_cost_usd
        self.unpriced = sorted(set(self.unpriced) | set(other.unpriced))
        if self.cached_cost_usd is not None:
            self.cached_cost_usd = (
                None if other.cached_cost_usd is None else self.cached_cost_usd + other.cached_cost_usd
            )

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> UsageTotals:
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


def reported(name: str, value: Any) -> int:
    """A token count as a backend reads it from a reply: missing is 0; anything but a non-negative
    integer (or a float with an integral value) is a bad response."""
    if value is None:
        return 0
    integral = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not integral or value < 0:
        raise BadResponse(f"the endpoint reported impossible usage: {name}={value!r} (expected a non-negative integer)")
    return int(value)


def approx_tokens(text: str) -> int:
    """Local token estimate (about 4 characters a token); named 'approx' wherever reported."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def cost_text(usage: UsageTotals | dict) -> str:
    """'$0.0123', or, when some calls had no price, the known part and the unpriced models:
    '$0.0123 for the priced calls; no price for my-model (give --price)'."""
    u = usage.model_dump() if isinstance(usage, UsageTotals) else usage
    if u.get("cost_usd") is not None:
        return f"${u['cost_usd']:.4f}"
    unpriced = u.get("unpriced") or []
    if not unpriced:  # a summary written before the known part was recorded
        return "unknown (a price is not known; give --price)"
    known = u.get("known_cost_usd") or 0.0
    what = f"no price for {', '.join(unpriced)} (give --price)"
    # Nothing priced was spent: a "$0.0000" would read as a free run.
    return f"${known:.4f} for the priced calls; {what}" if known else f"unknown: {what}"


def prompt_cache_text(usage: UsageTotals | dict) -> str:
    """'N read from the provider's prompt cache (P% of prompt tokens), M written', or '' when the
    provider reported none (Ollama never reports any; OpenAI only from 1,024-token prompts)."""
    u = usage.model_dump() if isinstance(usage, UsageTotals) else usage
    read, write, prompt = u.get("cache_read_tokens", 0), u.get("cache_write_tokens", 0), u.get("prompt_tokens", 0)
    if not read and not write:
        return ""
    text = f"{read:,} read from the provider's prompt cache" + (
        f" ({read / prompt:.0%} of prompt tokens)" if prompt else ""
    )
    return text + (f", {write:,} written to it" if write else "")


def endpoint_usage_rows(by_endpoint: dict[str, dict] | None) -> list[tuple[str, str]]:
    """One row per endpoint of a mixed panel: (endpoint, 'calls, tokens, cost'), for summaries."""
    rows = []
    for name, u in sorted((by_endpoint or {}).items()):
        cost = u.get("cost_usd")
        rows.append(
            (
                f"  {name}",
                f"{u.get('calls', 0)} calls (+{u.get('cached_calls', 0)} from cache, {u.get('failed_calls', 0)} failed); "
                f"{u.get('prompt_tokens', 0):,} + {u.get('completion_tokens', 0):,} tokens; "
                + ("cost unknown" if cost is None else f"${cost:.4f}"),
            )
        )
    return rows
