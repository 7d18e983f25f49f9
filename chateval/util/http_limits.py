"""Size caps and deadlines for the HTTP clients chateval runs (model endpoints, remote
embeddings, the HTTP agent), so that an endpoint that trickles its reply or sends one without
end stops at a limit instead of holding a unit for minutes or filling memory (a 200 MB agent
answer once became a 419 MB samples.jsonl and 2.8 GB of memory).

- ``size_cap_hook(limit)``: an httpx response event hook for clients an SDK drives (the openai
  SDK's httpx2 client, anthropic's and ollama's httpx clients): a declared Content-Length over the
  cap is refused before the body is read, and the body stream raises past it.
- ``request_capped(client, ...)``: one request read in full under an overall deadline (connect to
  last byte) and a size cap, for clients chateval drives itself.

Both raise ``ResponseTooLarge``, which is not retried: the same request gets the same reply.
Clients also ask for uncompressed replies (``NO_COMPRESSION``), so the bytes counted are the
bytes kept. httpx is not imported here: both httpx and httpx2 responses are handled as they come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

MIB = 1024 * 1024
MODEL_MAX_RESPONSE_BYTES = 64 * MIB  # a chat reply or an embedding batch (128 texts x 3072 floats ~ 8 MB)
AGENT_MAX_RESPONSE_BYTES = 16 * MIB  # an HTTP agent's answer, context and retrieved list

NO_COMPRESSION = {"Accept-Encoding": "identity"}


class ResponseTooLarge(Exception):
    """A reply passed its size cap (a plain Exception: the model layer does not retry it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the reply is larger than the {limit:,}-byte size cap")
        self.limit = limit


def _declared_too_long(headers: Any, limit: int) -> bool:
    length = str(headers.get("content-length") or "").strip()
    return length.isdigit() and int(length) > limit


_CAPPED: dict[type, type] = {}


def _capped_stream(stream: Any, limit: int) -> Any:
    """``stream`` (an httpx or httpx2 AsyncByteStream) raising ResponseTooLarge past ``limit`` bytes."""
    base = next((c for c in type(stream).__mro__ if c.__name__ == "AsyncByteStream"), None)
    if base is None:
        raise TypeError(f"cannot cap a {type(stream).__name__} (not an async byte stream)")
    cls = _CAPPED.get(base)
    if cls is None:

        class Capped(base):  # type: ignore[valid-type,misc]
            def __init__(self, inner: Any, limit: int) -> None:
                self.inner, self.limit = inner, limit

            async def __aiter__(self) -> Any:
                n = 0
                async for chunk in self.inner:
                    n += len(chunk)
                    if n > self.limit:
                        raise ResponseTooLarge(self.limit)
                    yield chunk

            async def aclose(self) -> None:
                await self.inner.aclose()

        cls = _CAPPED[base] = Capped
    return cls(stream, limit)


def size_cap_hook(limit: int) -> Callable[[Any], Awaitable[None]]:
    """A response event hook (``event_hooks={"response": [size_cap_hook(n)]}``) capping bodies at ``limit`` bytes."""

    async def cap(response: Any) -> None:
        if _declared_too_long(response.headers, limit):
            raise ResponseTooLarge(limit)
        response.stream = _capped_stream(response.stream, limit)

    return cap


async def request_capped(
    client: Any, method: str, url: str, *, deadline_s: float, max_bytes: int, **kwargs: Any
) -> tuple[Any, bytes]:
    """``client.stream(method, url, **kwargs)`` read in full within ``deadline_s`` seconds overall
    and ``max_bytes`` bytes (decoded); returns the (closed) response and its body. Past the
    deadline: TimeoutError; past the cap: ResponseTooLarge, the rest is never read."""
    async with asyncio.timeout(deadline_s):
        async with client.stream(method, url, **kwargs) as response:
            if _declared_too_long(response.headers, max_bytes):
                raise ResponseTooLarge(max_bytes)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise ResponseTooLarge(max_bytes)
    return response, bytes(body)


__all__ = [
    "AGENT_MAX_RESPONSE_BYTES",
    "MODEL_MAX_RESPONSE_BYTES",
    "NO_COMPRESSION",
    "ResponseTooLarge",
    "request_capped",
    "size_cap_hook",
]
