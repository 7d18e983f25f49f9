"""One memory system serving a group of cases (a conversation's questions): built and fed the
group's sessions on first use, then asked one question at a time. Shared by the benchmarks
that ask several questions of one ingested conversation (head-to-head, TeaFarm)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from ..errors import ModelCallError
from ..memory import MemorySystem
from ..memory.types import Session, Turn
from ..models import CallLog, UsageTotals
from .base import _error_text
from .setup import MemoryBench


class SystemSlot:
    def __init__(self, bench: MemoryBench, name: str, sessions: list[Session]) -> None:
        self.bench, self.name, self.sessions = bench, name, sessions
        self.lock = asyncio.Lock()  # ingest once, then one respond at a time (systems are stateful)
        self.log = CallLog()
        self.system: MemorySystem | None = None
        self.failed: str | None = None  # an ingest failure fails every later case of the group too

    async def respond(self, query: str | list[Turn], now: datetime) -> dict[str, Any]:
        """The answer, its context, latencies (ingest only on the first call) and this call's usage."""
        async with self.lock:
            if self.failed:
                raise ModelCallError(self.failed)
            before = len(self.log.records)
            latency: dict[str, float] = {}
            if self.system is None:
                t0 = time.perf_counter()
                try:
                    self.system = self.bench.new_system(self.name, self.log)
                    await self.system.ingest_all(self.sessions)
                except Exception as exc:
                    self.failed = f"ingest failed: {_error_text(exc)}"
                    raise ModelCallError(self.failed) from None
                latency["ingest_s"] = time.perf_counter() - t0
            recall_before = self.system.stats().recall_s
            t1 = time.perf_counter()
            resp = await self.system.respond(query, now)
            total = time.perf_counter() - t1
            recall_s = self.system.stats().recall_s - recall_before
            latency |= {"recall_s": recall_s, "answer_s": total - recall_s}
            return {"answer": resp.answer, "context": resp.context, "context_tokens": resp.context_tokens,
                    "tokens_approx": resp.tokens_approx, "latency": latency,
                    "usage": UsageTotals.of(self.log.records[before:]).model_dump()}

    def close(self) -> None:
        if self.system is not None:
            self.bench.release(self.name, self.system)
            self.system = None
