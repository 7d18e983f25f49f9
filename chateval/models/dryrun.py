"""``--dry-run``: what a run would send, counted without sending it.

Inside ``with dry_run() as meter:`` every model layer answers each call with the offline model's
reply for that step (the same typed steps the offline model implements) instead of asking its
endpoint, and meters it here: the real prompt, rendered by the real templates and pipeline, is
counted and priced at the configured model's price. The offline replies stand in for the
model's (they feed later prompts, as a real reply would): output tokens are an estimate of the
same kind, usually low for a talkative model.

Tokens are counted by a documented rule, not a tokenizer: no GPT tokenizer ships with the
project (tiktoken downloads its tables at run time, which runs here must not do).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from ..util.errors import ModelCallError
from ..util.text import common_prefix
from .backends import Completion, StepContext
from .budget import current_unit
from .offline import run_offline_step
from .prices import PRICES, cost_usd
from .usage import CallRecord, approx_tokens

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
TOKEN_RULE = (
    f"about {CHARS_PER_TOKEN} characters per token, plus {MESSAGE_OVERHEAD_TOKENS} tokens per message "
    "(a rule, not a tokenizer: tiktoken would fetch its tables from the network; "
    "real counts differ by model and language, often by 10-20%)"
)


def _content(m: Any) -> str:
    c = getattr(m, "content", m)
    return c if isinstance(c, str) else repr(c)


def estimate_prompt_tokens(messages: Sequence[Any]) -> int:
    """Input tokens of a chat request by TOKEN_RULE (the rule the fake servers count by too)."""
    return max(1, sum(MESSAGE_OVERHEAD_TOKENS + approx_tokens(_content(m)) for m in messages))


def _serialized(messages: Sequence[Any]) -> str:
    # Role and content, as a provider's prefix cache sees the request: any difference ends the prefix.
    return "".join(f"\x1e{type(m).__name__}\x1f{_content(m)}" for m in messages)


class ModelEstimate(BaseModel):
    model: str
    price_model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_eligible_tokens: int = 0
    price_known: bool = True
    cost_usd: float | None = 0.0
    # The same if the provider's prompt cache served every cache-eligible token (at the cached
    # price where the table knows it, else at the input price): a lower bound of what caching saves.
    cost_if_cached_usd: float | None = 0.0


class DryRunEstimate(BaseModel):
    """What ``--dry-run`` prints (``--json``: this model as JSON)."""

    units: int = 0  # samples / benchmark units the run would do
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_eligible_tokens: int = 0  # input tokens repeating a prefix of an earlier call of the same unit
    cache_eligible_share: float | None = None
    cost_usd: float | None = 0.0  # None when a model has no known price (give --price)
    cost_if_cached_usd: float | None = 0.0  # every cache-eligible token read from the provider's cache
    failed_units: int = 0  # units the simulation could not complete: the estimate leaves them out
    models: list[ModelEstimate] = []
    token_rule: str = TOKEN_RULE
    notes: list[str] = []


class DryRunMeter:
    """Counts the calls a dry run would make, per model and per unit."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, str], ModelEstimate] = {}
        self._earlier: dict[str | None, list[str]] = {}  # unit -> serialized earlier requests

    @property
    def units(self) -> int:
        """Units (samples) that made at least one call."""
        return sum(1 for u in self._earlier if u is not None)

    def call(
        self,
        model: str,
        price_model: str,
        messages: Sequence[Any],
        step: StepContext | None,
        agent: str | None,
        response_format: type[BaseModel] | None,
    ) -> tuple[Completion, CallRecord]:
        """A dry run's model call (``ModelLayer.complete`` hands it over): the offline model's
        reply for the step stands in for the model's; the real prompt is metered at the model's
        price. No request, no cache read or write."""
        if step is None:
            raise ModelCallError("--dry-run: this call names no step, so it cannot be simulated")
        out = run_offline_step(step.name, step.inputs, response_format)
        text = out.model_dump_json() if isinstance(out, BaseModel) else str(out)
        prompt, done = self.count(
            model=model, price_model=price_model, unit=current_unit(), messages=messages, reply=text
        )
        comp = Completion(text=text, prompt_tokens=prompt, completion_tokens=done, tokens_approx=True)
        return comp, CallRecord(
            model=model,
            step=step.name,
            agent=agent,
            prompt_tokens=prompt,
            completion_tokens=done,
            tokens_approx=True,
            cost_usd=cost_usd(price_model, prompt, done),
        )

    def count(
        self, *, model: str, price_model: str, unit: str | None, messages: Sequence[Any], reply: str
    ) -> tuple[int, int]:
        """Meter one call; returns its (input, output) token estimates."""
        prompt = estimate_prompt_tokens(messages)
        completion = approx_tokens(reply)
        text = _serialized(messages)
        earlier = self._earlier.setdefault(unit, [])
        shared = max((common_prefix(text, e) for e in earlier), default=0)
        earlier.append(text)
        eligible = min(prompt, prompt * shared // max(1, len(text)))
        row = self._models.setdefault(
            (model, price_model), ModelEstimate(model=model, price_model=price_model, price_known=price_model in PRICES)
        )
        row.calls += 1
        row.prompt_tokens += prompt
        row.completion_tokens += completion
        row.cache_eligible_tokens += eligible
        row.cost_usd = cost_usd(price_model, row.prompt_tokens, row.completion_tokens)
        row.cost_if_cached_usd = cost_usd(
            price_model, row.prompt_tokens, row.completion_tokens, cache_read=row.cache_eligible_tokens
        )
        return prompt, completion

    def estimate(self, *, units: int = 0, failed_units: int = 0, notes: Sequence[str] = ()) -> DryRunEstimate:
        rows = sorted(self._models.values(), key=lambda r: r.model)
        est = DryRunEstimate(units=units, failed_units=failed_units, models=rows, notes=list(notes))
        for r in rows:
            est.calls += r.calls
            est.prompt_tokens += r.prompt_tokens
            est.completion_tokens += r.completion_tokens
            est.cache_eligible_tokens += r.cache_eligible_tokens
            est.cost_usd = None if est.cost_usd is None or r.cost_usd is None else est.cost_usd + r.cost_usd
            est.cost_if_cached_usd = (
                None
                if est.cost_if_cached_usd is None or r.cost_if_cached_usd is None
                else est.cost_if_cached_usd + r.cost_if_cached_usd
            )
        est.cache_eligible_share = est.cache_eligible_tokens / est.prompt_tokens if est.prompt_tokens else None
        return est


ADAPTIVE_NOTE = (
    "--escalate / --stop-early: how many items go to the full panel or skip rounds depends on the "
    "judge's verdicts; the estimate counts what the offline model's verdicts lead to"
)


def adaptive_notes(escalate: bool | None, stop_early: bool | None) -> list[str]:
    """Notes for a judge whose number of calls depends on the replies (None: not set)."""
    return [ADAPTIVE_NOTE] if escalate or stop_early else []


_METER: contextvars.ContextVar[DryRunMeter | None] = contextvars.ContextVar("chateval_dry_run", default=None)


def active_dry_run() -> DryRunMeter | None:
    return _METER.get()


@contextlib.contextmanager
def dry_run() -> Iterator[DryRunMeter]:
    meter = DryRunMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


__all__ = [
    "CHARS_PER_TOKEN",
    "DryRunEstimate",
    "DryRunMeter",
    "ModelEstimate",
    "TOKEN_RULE",
    "active_dry_run",
    "common_prefix",
    "dry_run",
    "estimate_prompt_tokens",
]
