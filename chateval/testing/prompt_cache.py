"""The fake endpoint's simulated prompt cache: the cached input tokens each protocol reports.

OpenAI style (automatic prefix caching): the longest prefix a request's prompt shares with a
prompt answered earlier, in tokens (characters / 4), rounded down to ``granularity`` tokens and
0 below ``min_tokens``. Anthropic style (explicit breakpoints): the system text up to the last
``cache_control`` block is read from the cache when an earlier request had the same one, else
written to it."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from . import protocols


class SimulatedPromptCache:
    def __init__(self, min_tokens: int = 1024, granularity: int = 128) -> None:
        self.min_tokens, self.granularity = min_tokens, max(1, granularity)
        self._prompts: deque[str] = deque(maxlen=512)  # prompts answered so far (the prefix cache)
        self._breakpoints: set[str] = set()  # Anthropic: cached prefixes
        self._lock = threading.Lock()  # the server answers requests on many threads

    def clear(self) -> None:
        with self._lock:
            self._prompts.clear()
            self._breakpoints.clear()

    def usage(self, protocol: str, body: dict[str, Any]) -> tuple[int, int]:
        """(tokens read from, tokens written to) the simulated prompt cache by this request."""
        if protocol == protocols.ANTHROPIC:
            mark = protocols.anthropic_breakpoint(body)
            if mark is None:
                return 0, 0
            tokens = protocols.approx_tokens(mark)
            with self._lock:
                hit = mark in self._breakpoints
                self._breakpoints.add(mark)
            return (tokens, 0) if hit else (0, tokens)
        if protocol != protocols.OPENAI:
            return 0, 0
        prompt = protocols.prompt_text(body)
        with self._lock:
            longest = max((protocols.common_prefix(prompt, p) for p in self._prompts), default=0)
            self._prompts.append(prompt)
        tokens = longest // 4 // self.granularity * self.granularity
        return (tokens if tokens >= self.min_tokens else 0), 0
