"""What the fake endpoint can do wrong (``Fault``), and the seeded random mix of faults it
draws from once its script is empty (``FaultMix``)."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from io import BufferedIOBase
from typing import Any

FAULT_KINDS = (
    "401",
    "429",
    "500",
    "503",
    "timeout",
    "reset",
    "garbage",
    "truncated",
    "empty",
    "usage",
    "trickle",
    "huge",
)

GARBAGE_BODY = "<html><body><h1>502 Bad Gateway</h1>upstream sent nonsense</body></html>"

# Upper bound on how long one handler may sleep (latency or a "timeout" fault): the server
# never holds a thread longer than this, so it always stops within a bounded time.
MAX_SLEEP_S = 30.0


@dataclass(frozen=True)
class Fault:
    """One misbehaviour of the endpoint.

    kind: "401" (a rejected key), "429" (with ``retry_after`` seconds as a Retry-After header when given), "500",
    "503", "timeout" (wait ``delay`` seconds, longer than the client's timeout, then reply),
    "reset" (close the connection without a response), "garbage" (200 with a non-JSON body,
    served as ``content_type``, or ``body`` when given), "truncated" (200 with JSON cut off half-way), "empty"
    (a well-formed 200 completion whose content is the empty string), "usage" (a well-formed
    completion whose usage fields are overridden by ``usage``, e.g. ``{"prompt_tokens": -1e9}``),
    "trickle" (the completion sent a few bytes at a time over ``delay`` seconds: no single read
    waits long, the whole reply does), "huge" (a well-formed completion whose text is ``size``
    bytes).
    """

    kind: str
    retry_after: float | None = None
    delay: float = 2.0
    content_type: str = "application/json"  # "garbage" only: e.g. "text/html" for a proxy's error page
    body: str | None = None  # "garbage" only: the exact body to send (e.g. '{"choices": []}')
    # "usage" only: the usage fields to report instead (not hashed: a Fault keys a FaultMix)
    usage: Mapping[str, Any] | None = field(default=None, compare=False)
    size: int = 0  # "huge" only: bytes of reply text

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r} (known: {', '.join(FAULT_KINDS)})")
        if self.delay < 0 or self.delay > MAX_SLEEP_S:
            raise ValueError(f"fault delay must be between 0 and {MAX_SLEEP_S} seconds")
        if self.size < 0:
            raise ValueError("fault size must be >= 0")


def with_usage(payload: dict[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    """A completion payload reporting ``usage`` (in its ``usage`` object; Ollama's counts are top-level)."""
    target = payload["usage"] if isinstance(payload.get("usage"), dict) else payload
    target.update(usage)
    return payload


def trickle(out: BufferedIOBase, data: bytes, seconds: float, stop: threading.Event) -> bool:
    """Write ``data`` in about 50 pieces spread over ``seconds``; False when the client left or
    the server is stopping."""
    pieces = max(1, min(50, len(data)))
    step = -(-len(data) // pieces)
    for i in range(0, len(data), step):
        try:
            out.write(data[i : i + step])
            out.flush()
        except OSError:
            return False
        if stop.wait(seconds / pieces):
            return False
    return True


Action = str | Fault  # a scripted action: a reply text or a fault


class FaultMix:
    """``{fault or kind: probability}``, drawn from with a seeded generator: each request gets at
    most one fault, with these probabilities (they may add up to at most 1)."""

    def __init__(self, faults: Mapping[str | Fault, float], seed: int = 0) -> None:
        self.entries: list[tuple[Fault, float]] = []
        for key, p in faults.items():
            fault = key if isinstance(key, Fault) else Fault(str(key))
            if not 0 <= p <= 1:
                raise ValueError(f"fault probability for {fault.kind} must be between 0 and 1")
            self.entries.append((fault, float(p)))
        if sum(p for _, p in self.entries) > 1 + 1e-9:
            raise ValueError("fault probabilities add up to more than 1")
        self._rng = random.Random(seed)

    def clear(self) -> None:
        """No more faults (the endpoint recovers)."""
        self.entries = []

    def draw(self) -> Fault | None:
        if not self.entries:
            return None
        x = self._rng.random()
        for fault, p in self.entries:
            if x < p:
                return fault
            x -= p
        return None
