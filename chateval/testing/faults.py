"""What the fake endpoint can do wrong (``Fault``), and the seeded random mix of faults it
draws from once its script is empty (``FaultMix``)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

FAULT_KINDS = ("401", "429", "500", "503", "timeout", "reset", "garbage", "truncated", "empty")

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
    (a well-formed 200 completion whose content is the empty string).
    """

    kind: str
    retry_after: float | None = None
    delay: float = 2.0
    content_type: str = "application/json"  # "garbage" only: e.g. "text/html" for a proxy's error page
    body: str | None = None  # "garbage" only: the exact body to send (e.g. '{"choices": []}')

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r} (known: {', '.join(FAULT_KINDS)})")
        if self.delay < 0 or self.delay > MAX_SLEEP_S:
            raise ValueError(f"fault delay must be between 0 and {MAX_SLEEP_S} seconds")


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
