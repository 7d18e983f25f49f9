"""Bounded retries with exponential backoff and jitter; which errors are worth retrying."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pydantic import BaseModel, Field

from ..util.http_limits import MODEL_MAX_RESPONSE_BYTES, ResponseTooLarge


class RetryPolicy(BaseModel):
    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    timeout_s: float = 120.0  # per call (one attempt), overall: connecting to the reply's last byte
    # The largest reply body one attempt may receive (chateval.util.http_limits); past it the
    # call fails without a retry.
    max_response_bytes: int = Field(MODEL_MAX_RESPONSE_BYTES, gt=0)

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
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            return None


# Exception classes by name, so every SDK is classified without importing the optional ones:
# openai's and anthropic's share these names; httpx's are what the ollama client raises.
_TIMEOUTS = {"APITimeoutError", "TimeoutException"}
_CONNECTION = {"APIConnectionError", "TransportError"}
_UNREADABLE = {"APIResponseValidationError"}


def _kinds(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an SDK's status error (openai, anthropic, ollama), else None."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and status >= 400 else None


def too_large(exc: BaseException) -> ResponseTooLarge | None:
    """The size cap's error where an SDK wrapped it (anthropic's as a connection error)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, ResponseTooLarge):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def is_retryable(exc: BaseException) -> bool:
    if too_large(exc) is not None:
        return False  # the same request would get the same reply
    kinds = _kinds(exc)
    if kinds & (_TIMEOUTS | _CONNECTION):
        return True
    status = status_code(exc)
    if status is not None:
        return status == 429 or status >= 500 or status in (408, 409)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, BadResponse)):
        return True
    # A body that is not valid JSON or not a completion: often a proxy hiccup.
    return bool(kinds & _UNREADABLE) or isinstance(exc, ValueError)


def describe(exc: BaseException) -> str:
    """A short, secret-free description of a failed call."""
    if (big := too_large(exc)) is not None:
        return str(big)
    kinds = _kinds(exc)
    if kinds & _TIMEOUTS or isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    if kinds & _CONNECTION:
        return "connection to the model endpoint failed (refused, reset or unreachable)"
    status = status_code(exc)
    if status is not None:
        return f"HTTP {status} from the model endpoint"
    if isinstance(exc, BadResponse):
        return f"bad response: {exc}"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
