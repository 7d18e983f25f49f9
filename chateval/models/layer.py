"""The one model layer every LLM call of the project goes through.

``ModelLayer`` owns the backend, the on-disk cache, the shared concurrency limit, retries and
metering. ``LayerClient`` exposes it as an autogen ``ChatCompletionClient`` so autogen agents
use the same path as direct calls.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from autogen_core.models import LLMMessage, ModelInfo
from pydantic import BaseModel

from ..util.errors import ConfigError, EndpointUnreachable, ModelCallError
from ..util.secrets import register, register_url, scrub
from .backends import Backend, Completion, GenParams, StepContext, Structured, json_schema
from .budget import active_cap, charge_unit
from .cache import CompletionCache, cache_key
from .dryrun import active_dry_run
from .layer_client import LayerClient
from .metering import cached_record, completed_record, give_up, request_record, unreachable
from .prices import PRICES, cost_usd
from .providers import build_backend
from .reach import cannot_connect, endpoint_down
from .retry import BadResponse, RetryPolicy, describe, is_retryable, retry_after_seconds, status_code
from .spec import ModelSpec
from .usage import CallLog, CallRecord, UsageTotals
from .usage_check import usage_problem

log = logging.getLogger("chateval.models")
T = TypeVar("T")


CallObserver = Callable[[CallRecord, Sequence[LLMMessage], Completion], None]


def _message_key(m: LLMMessage) -> dict[str, Any]:
    content = m.content if isinstance(m.content, str) else repr(m.content)
    return {"type": type(m).__name__, "source": getattr(m, "source", None), "content": content}


def _rebuilt_layer(
    spec: ModelSpec,
    backend: Backend | None,
    params: GenParams,
    retry: RetryPolicy,
    max_connections: int,
    cache: CompletionCache | None,
    structured: Structured,
    secrets: tuple[str, ...],
    step_temperatures: dict[str, float] | None = None,
) -> ModelLayer:
    return ModelLayer(
        spec,
        backend=backend,
        params=params,
        retry=retry,
        max_connections=max_connections,
        cache=cache,
        structured=structured,
        secrets=secrets,
        step_temperatures=step_temperatures,
    )


class ModelLayer:
    def __init__(
        self,
        spec: ModelSpec,
        *,
        backend: Backend | None = None,
        params: GenParams | None = None,
        retry: RetryPolicy | None = None,
        max_connections: int = 8,
        cache: CompletionCache | None = None,
        structured: Structured = "auto",
        secrets: Sequence[str] = (),
        step_temperatures: Mapping[str, float] | None = None,
    ) -> None:
        self.spec = spec
        self.params = params or GenParams()
        # Sampling temperature per step name (a typed step's name, e.g. theanine_relation_pair),
        # overriding params.temperature for that step's calls (a paper's per-step settings).
        self.step_temperatures: dict[str, float] = dict(step_temperatures or {})
        self.retry = retry or RetryPolicy()
        self.structured = structured
        self.own_backend = backend is None  # built from the spec: a copy builds its own
        self.backend = backend or self._build_backend()
        # Endpoints that answered a JSON-schema request with HTTP 400, shared with derived layers:
        # detected once per run, then every step describes its schema in the prompt instead.
        self.schema_rejected: set[str] = set()
        self.max_connections = max(1, max_connections)
        self.cache = cache
        self.totals = UsageTotals()
        self.observers: list[CallObserver] = []
        # Registered for the whole process (run files, console, logs); kept to travel to Ray workers.
        self._secrets = [s for s in secrets if s]
        register(*self._secrets)
        register_url(spec.base_url)
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self.name: str | None = None  # metered under this instead of the spec's label (derive)
        self.cache_salt: str | None = None  # in the cache key when set: a repeat's own replies (derive)
        self._watch_cap()

    def _build_backend(self) -> Backend:
        try:
            return build_backend(self.spec, self.params, self.retry, self.structured)
        except ConfigError:
            if active_dry_run() is None:
                raise
            # A dry run sends nothing: it needs no API key or provider extra. The real backend
            # is only asked what it supports (prompts describe schemas where it takes none).
            from .backends import OfflineBackend

            return OfflineBackend()

    def _watch_cap(self) -> None:
        """Under a cost cap (``chateval.models.budget``) this layer's meter counts toward it; a model
        without a known price cannot be capped: refused before any call."""
        cap = active_cap()
        if cap is None or active_dry_run() is not None:
            return
        if self.spec.model not in PRICES:
            raise ConfigError(
                f"--max-cost: no price is known for the model '{self.spec.model}', so its cost "
                f"cannot be capped; give one with --price {self.spec.model}=IN,OUT (USD per million "
                "input/output tokens)"
            )
        cap.watch(self.totals)

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent to a Ray worker as its settings: clients, semaphores and meters stay in this
        # process; the copy opens its own (a backend given by the caller travels as it is).
        return (
            _rebuilt_layer,
            (
                self.spec,
                None if self.own_backend else self.backend,
                self.params,
                self.retry,
                self.max_connections,
                self.cache,
                self.structured,
                tuple(self._secrets),
                self.step_temperatures,
            ),
        )

    def derive(
        self,
        spec: ModelSpec | None = None,
        *,
        params: GenParams | None = None,
        step_temperatures: Mapping[str, float] | None = None,
        max_connections: int | None = None,
        name: str | None = None,
        cache_salt: str | None = None,
    ) -> ModelLayer:
        """A layer for another model (a persona's override) or other generation parameters
        (a step that needs longer outputs), sharing this one's cache, concurrency limit,
        totals and observers: still one limit for every call. Per-step temperatures carry
        over unless given. ``max_connections``: a limit of its own instead (a debater on its
        own server); ``name``: what its calls are metered under (default: the spec's label);
        ``cache_salt``: keeps its replies apart in the cache (a repeat of the same judge, --samples)."""
        other = ModelLayer(
            spec or self.spec,
            params=params or self.params,
            retry=self.retry,
            max_connections=self.max_connections,
            cache=self.cache,
            secrets=self._secrets,
            structured=self.structured,
            step_temperatures=self.step_temperatures if step_temperatures is None else step_temperatures,
        )
        if max_connections is None:
            other._semaphores = self._semaphores
        else:
            other.max_connections = max(1, max_connections)
        other.name = name
        other.cache_salt = self.cache_salt if cache_salt is None else cache_salt
        other.schema_rejected = self.schema_rejected
        other.totals = self.totals
        other._watch_cap()  # the shared totals (already watched), after the price check of its model
        other.observers = self.observers
        return other

    @property
    def label(self) -> str:
        return self.name or self.spec.label

    @property
    def model_info(self) -> ModelInfo:
        return self.backend.model_info

    @property
    def _endpoint(self) -> str:
        return f"{self.spec.label}@{self.spec.base_url or ''}"

    @property
    def supports_structured(self) -> bool:
        """Whether calls ask for their schema as a response format (may turn False mid-run)."""
        return bool(self.model_info.get("structured_output")) and self._endpoint not in self.schema_rejected

    def _schema_refused(self, exc: BaseException) -> bool:
        """A 400 to a request that carried a schema: in auto mode, stop sending schemas there."""
        if status_code(exc) != 400 or self.structured != "auto":
            return False
        if self._endpoint not in self.schema_rejected:
            self.schema_rejected.add(self._endpoint)
            log.warning(
                "%s rejected a JSON-schema response_format (HTTP 400); continuing with schemas "
                "described in the prompt (--structured off skips the attempt)",
                self.label,
            )
        return True

    def _semaphore(self) -> asyncio.Semaphore:
        # asyncio primitives bind to one event loop; sync wrappers may run several loops.
        loop_id = id(asyncio.get_running_loop())
        sem = self._semaphores.get(loop_id)
        if sem is None:
            sem = self._semaphores[loop_id] = asyncio.Semaphore(self.max_connections)
        return sem

    def client(
        self,
        *,
        log: CallLog | None = None,
        step: StepContext | Callable[[Sequence[LLMMessage]], StepContext] | None = None,
        agent: str | None = None,
        response_format: Callable[[], type[BaseModel] | None] | None = None,
        prepare: Callable[[Sequence[LLMMessage]], list[LLMMessage]] | None = None,
    ) -> LayerClient:
        return LayerClient(self, log=log, step=step, agent=agent, response_format=response_format, prepare=prepare)

    def params_for(self, step: str | None) -> GenParams:
        """The generation parameters of one call: the layer's, with the step's own temperature."""
        t = self.step_temperatures.get(step) if step else None
        return self.params if t is None else self.params.model_copy(update={"temperature": t})

    def _key(
        self, messages: Sequence[LLMMessage], response_format: type[BaseModel] | None, params: GenParams | None = None
    ) -> str:
        return cache_key(
            {
                "model": self.spec.label,
                "base_url": self.spec.base_url,
                "params": (params or self.params).model_dump(),
                "structured": self.supports_structured,
                "response_format": json_schema(response_format) if response_format else None,
                "messages": [_message_key(m) for m in messages],
                **({"repeat": self.cache_salt} if self.cache_salt else {}),
            }
        )

    async def complete(
        self,
        messages: Sequence[LLMMessage],
        *,
        step: StepContext | None = None,
        log: CallLog | None = None,
        agent: str | None = None,
        response_format: type[BaseModel] | None = None,
    ) -> Completion:
        step_name = step.name if step else None
        meter = active_dry_run()
        if meter is not None:
            comp, rec = meter.call(self.label, self.spec.model, messages, step, agent, response_format)
            self._record(rec, log, messages, comp)
            return comp
        params = self.params_for(step_name)
        key = self._key(messages, response_format, params) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                comp = Completion.model_validate(hit)
                comp.cached = True
                rec = cached_record(self.label, self.spec.model, step_name, agent, comp)
                self._record(rec, log, messages, comp)
                return comp

        attempt = 0
        while True:
            attempt += 1
            if (down := endpoint_down()) is not None:  # the run is stopping: no call, no retries
                raise EndpointUnreachable(str(down))
            t0 = time.perf_counter()
            # The schema goes to the server only while it accepts schemas; typed steps describe it
            # in their prompts too, and their replies are parsed leniently either way.
            send = response_format if (not self.backend.sends_schema or self.supports_structured) else None
            try:
                async with self._semaphore():
                    comp = await asyncio.wait_for(
                        self.backend.complete(messages, step=step, response_format=send, params=params),
                        timeout=self.retry.timeout_s,
                    )
                if not comp.text.strip():  # an HTTP 200 with nothing in it is a failed call, not an answer
                    raise BadResponse("the endpoint returned an empty reply")
                if (bad := usage_problem(comp, messages, params, response_format)) is not None:
                    raise BadResponse(bad)  # negative or absurd usage would be metered and priced
                break
            except ModelCallError as exc:
                if log is not None:
                    log.errors.append(str(exc))
                raise
            except Exception as exc:  # classified below; anything unknown is not retried
                if send is not None and self.backend.sends_schema and self._schema_refused(exc):
                    attempt -= 1  # not the endpoint failing: the same call again, without the schema
                    continue
                if not is_retryable(exc) or attempt > self.retry.max_retries:
                    if cannot_connect(exc):
                        raise unreachable(
                            self.totals, self.spec.base_url, self.label, attempt, step_name, agent, log, self.spec.model
                        ) from None
                    why = describe(exc)
                    if send is not None and self.backend.sends_schema and status_code(exc) == 400:
                        why += " to a request with a JSON-schema response_format (--structured auto falls back)"
                    raise give_up(
                        self.totals, self.label, why, attempt, step_name, agent, log, self.spec.model
                    ) from None
                await asyncio.sleep(self.retry.delay(attempt, retry_after_seconds(exc)))
        latency = time.perf_counter() - t0
        comp.text = scrub(comp.text)  # a reply that echoes an API key must not carry it into any file
        rec = completed_record(self.label, self.spec.model, step_name, agent, comp, messages, latency, attempt)
        self._record(rec, log, messages, comp)
        if self.cache is not None:
            self.cache.set(key, comp.model_dump(exclude={"cached"}))
        return comp

    async def call(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        model: str,
        step: str,
        price_model: str,
        tokens: Callable[[T], int | tuple[int, int]],
        log: CallLog | None = None,
    ) -> T:
        """One non-chat request (an embedding batch) under this layer's concurrency limit, retry
        policy and metering: ``attempt`` makes the request; ``tokens`` reads its (input, output) tokens."""
        if active_dry_run() is not None:  # dry runs embed with the hash embedder: no request may leave
            raise ModelCallError(f"--dry-run: {model} ({step}) would be called; dry runs do not simulate it")
        n = 0
        while True:
            n += 1
            if (down := endpoint_down()) is not None:
                raise EndpointUnreachable(str(down))
            t0 = time.perf_counter()
            try:
                async with self._semaphore():
                    result = await asyncio.wait_for(attempt(), timeout=self.retry.timeout_s)
                break
            except Exception as exc:  # classified as for chat calls
                if not is_retryable(exc) or n > self.retry.max_retries:
                    if cannot_connect(exc):
                        raise unreachable(
                            self.totals, self.spec.base_url, model, n, step, None, log, price_model
                        ) from None
                    raise give_up(self.totals, model, describe(exc), n, step, None, log, price_model) from None
                await asyncio.sleep(self.retry.delay(n, retry_after_seconds(exc)))
        rec = request_record(model, price_model, step, tokens(result), time.perf_counter() - t0, n)
        self.totals.add(rec)
        charge_unit(rec.cost_usd)
        if log is not None:
            log.add(rec)
        return result

    def forget(
        self, messages: Sequence[LLMMessage], response_format: type[BaseModel] | None = None, *, step: str | None = None
    ) -> None:
        """Drop a cached reply its caller could not read, so a rerun asks the model again."""
        if self.cache is not None:
            self.cache.delete(self._key(messages, response_format, self.params_for(step)))

    def _record(self, rec: CallRecord, log: CallLog | None, messages: Sequence[LLMMessage], comp: Completion) -> None:
        self.totals.add(rec)
        # The running unit's share, against its --max-cost reservation (a cache hit at the price
        # it would have had: what the unit tells of the next one's cost).
        full = cost_usd(self.spec.model, rec.prompt_tokens, rec.completion_tokens) if rec.cached else rec.cost_usd
        charge_unit(rec.cost_usd, full)
        if log is not None:
            log.add(rec)
        for obs in self.observers:
            obs(rec, messages, comp)

    async def close(self) -> None:
        await self.backend.close()
        if self.cache is not None:
            self.cache.close()
