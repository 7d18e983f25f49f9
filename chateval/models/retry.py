"""Bounded retries with exponential backoff and jitter; which errors are worth retrying."""

from __future__ import annotations

import asyncio
import random
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone

import openai
from pydantic import BaseModel


class RetryPolicy(BaseModel):
    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    timeout_s: float = 120.0  # per call (one attempt)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Delay before retry number ``attempt`` (1-based). Retry-After wins when given."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay_s)
        exp = min(self.base_delay_s * (2 ** (attempt - 1)), self.max_delay_s)
        return exp * (0.5 + random.random() / 2)  # "equal jitter": never less than half


class BadResponse(Exception):
    """The endpoint answered, but not with a usable completion (garbage body, no choices)."""


def retry_after_seconds(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    if value is None:
        ms = headers.get("retry-after-ms")
        try:
            return float(ms) / 1000 if ms is not None else None
        except ValueError:
            return None
    try:
        return float(value)
    except ValueError:
        try:  # HTTP-date form
            when = parsedate_to_datetime(value)
            return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
        except (TypeError, ValueError):
            return None


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in (408, 409)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, BadResponse)):
        return True
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        # A body that is not valid JSON or not a completion: often a proxy hiccup.
        return True
    return False


def describe(exc: BaseException) -> str:
    """A short, secret-free description of a failed call."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} from the model endpoint"
    if isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection to the model endpoint failed (refused, reset or unreachable)"
    if isinstance(exc, BadResponse):
        return f"bad response: {exc}"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
