"""A pool of endpoints serving one model (e.g. several vLLM servers): each call goes to the
endpoint with the fewest calls in flight, and an endpoint that keeps failing is rested for a
while, so one dead server costs a few retried calls rather than a share of the run."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from .backends import Backend, Completion
from .retry import is_retryable

REST_AFTER = 3  # consecutive failures before an endpoint is rested
REST_S = 30.0  # how long; after that it gets calls again (one more failure rests it again)


@dataclass
class Endpoint:
    name: str  # host:port/path, never credentials
    backend: Backend
    in_flight: int = 0
    calls: int = 0
    failures: int = 0
    consecutive: int = 0
    rested_until: float = 0.0

    def failed(self) -> None:
        self.failures += 1
        self.consecutive += 1
        if self.consecutive >= REST_AFTER:
            self.rested_until = time.monotonic() + REST_S


def endpoint_name(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}{parts.path}" if parts.port else f"{host}{parts.path}"


class EndpointPool(Backend):
    def __init__(self, endpoints: list[Endpoint]) -> None:
        self.endpoints = endpoints
        self.model_info = endpoints[0].backend.model_info

    def pick(self) -> Endpoint:
        now = time.monotonic()
        live = [e for e in self.endpoints if e.rested_until <= now]
        if not live:  # every endpoint rested: the one back soonest
            return min(self.endpoints, key=lambda e: e.rested_until)
        return min(live, key=lambda e: (e.in_flight, e.consecutive, e.calls))

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        ep = self.pick()
        ep.in_flight += 1
        try:
            comp = await ep.backend.complete(messages, step=step, response_format=response_format, params=params)
        except asyncio.CancelledError:  # the layer's per-call timeout
            ep.failed()
            raise
        except Exception as exc:
            if is_retryable(exc):  # a 400 or 401 says nothing about the endpoint's health
                ep.failed()
            raise
        finally:
            ep.in_flight -= 1
        ep.calls += 1
        ep.consecutive = 0
        return comp

    def stats(self) -> dict[str, dict[str, int]]:
        return {e.name: {"calls": e.calls, "failures": e.failures} for e in self.endpoints}

    async def close(self) -> None:
        for e in self.endpoints:
            await e.backend.close()
