"""What one model call leaves in the meters: the record of a completed call, of a reply served
from the cache, or of a call that failed for good (with the one-line error it raises).

``ModelLayer`` makes the calls; building their records here keeps every call path (chat calls,
cache hits, non-chat requests' failures) metered and priced the same way."""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.models import LLMMessage

from ..util.errors import EndpointUnreachable, ModelCallError
from ..util.secrets import redact_url, scrub
from .backends import Completion
from .prices import cost_usd
from .reach import mark_down
from .usage import CallLog, CallRecord, UsageTotals, approx_tokens


def cached_record(model: str, price_model: str, step: str | None, agent: str | None, comp: Completion) -> CallRecord:
    """A reply served from the cache: the tokens it first used, at no cost (unknown without a price),
    and what it cost when answered (``cached_cost_usd``: the cost on a cold cache)."""
    return CallRecord(
        model=model,
        step=step,
        agent=agent,
        cached=True,
        prompt_tokens=comp.prompt_tokens,
        completion_tokens=comp.completion_tokens,
        tokens_approx=comp.tokens_approx,
        cost_usd=cost_usd(price_model, 0, 0),
        cached_cost_usd=cost_usd(
            price_model,
            comp.prompt_tokens,
            comp.completion_tokens,
            cache_read=comp.cache_read_tokens,
            cache_write=comp.cache_write_tokens,
        ),
    )


def completed_record(
    model: str,
    price_model: str,
    step: str | None,
    agent: str | None,
    comp: Completion,
    messages: Sequence[LLMMessage],
    latency: float,
    attempts: int,
) -> CallRecord:
    """A call the endpoint answered; where it reported no usage, ``comp`` gets estimated tokens."""
    if not comp.prompt_tokens and not comp.completion_tokens:
        # Some servers report no usage; estimate rather than report zero, and say so.
        comp.prompt_tokens = sum(approx_tokens(m.content) for m in messages if isinstance(m.content, str))
        comp.completion_tokens = approx_tokens(comp.text)
        comp.tokens_approx = True
    return CallRecord(
        model=model,
        step=step,
        agent=agent,
        prompt_tokens=comp.prompt_tokens,
        completion_tokens=comp.completion_tokens,
        tokens_approx=comp.tokens_approx,
        latency_s=latency,
        attempts=attempts,
        cache_read_tokens=comp.cache_read_tokens,
        cache_write_tokens=comp.cache_write_tokens,
        cost_usd=cost_usd(
            price_model,
            comp.prompt_tokens,
            comp.completion_tokens,
            cache_read=comp.cache_read_tokens,
            cache_write=comp.cache_write_tokens,
        ),
    )


def request_record(
    model: str, price_model: str, step: str, tokens: int | tuple[int, int], latency: float, attempts: int
) -> CallRecord:
    """A request made outside the chat path that succeeded (an embedding batch: its input tokens;
    a library's own chat request, e.g. LangMem's tool calls: input and output tokens) and its cost."""
    input_tokens, output_tokens = tokens if isinstance(tokens, tuple) else (tokens, 0)
    return CallRecord(
        model=model,
        step=step,
        prompt_tokens=input_tokens,
        completion_tokens=output_tokens,
        latency_s=latency,
        attempts=attempts,
        cost_usd=cost_usd(price_model, input_tokens, output_tokens),
    )


def give_up(
    totals: UsageTotals,
    model: str,
    why: str,
    attempts: int,
    step: str | None,
    agent: str | None,
    log: CallLog | None,
    price_model: str,
) -> ModelCallError:
    """Record a call that failed for good; the error to raise (one line, no secrets)."""
    message = scrub(f"model call to {model} failed after {attempts} attempt(s): {why}")
    failed = CallRecord(
        model=model,
        step=step,
        agent=agent,
        failed=True,
        attempts=attempts,  # unknown price:
        cost_usd=cost_usd(price_model, 0, 0),
    )  # unknown cost, not $0
    totals.add(failed)
    if log is not None:
        log.add(failed)
        log.errors.append(message)
    return ModelCallError(message)


def unreachable(
    totals: UsageTotals,
    base_url: str | None,
    model: str,
    attempts: int,
    step: str | None,
    agent: str | None,
    log: CallLog | None,
    price_model: str,
) -> EndpointUnreachable:
    """A call that could not connect after its retries: recorded as failed, and the run
    watching (``reach.watch_endpoints``) is told to stop."""
    where = redact_url(base_url) if base_url else f"of {model} (the provider's default URL)"
    give_up(totals, model, "connection refused", attempts, step, agent, log, price_model)
    error = EndpointUnreachable(
        scrub(
            f"model endpoint {where} cannot be reached (connection refused after {attempts} attempt(s)); is the "
            "server running and the base URL right? Finished samples are kept: rerun with --resume"
        )
    )
    mark_down(error)
    return error
