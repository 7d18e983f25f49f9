"""One memory system serving a group of cases (a conversation's questions): built and fed the
group's sessions on first use, then asked one question at a time. Shared by the benchmarks
that ask several questions of one ingested conversation (head-to-head, TeaFarm)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from ..memory import MemorySystem
from ..memory.blind import Blind
from ..memory.types import Session, Turn
from ..models import CallLog, UsageTotals
from ..util.errors import ModelCallError
from ..util.interrupts import contain_exits
from .executor import error_text
from .setup import MemoryBench


class SystemSlot:
    def __init__(self, bench: MemoryBench, name: str, sessions: list[Session], *, export_as: str | None = None) -> None:
        self.bench, self.name, self.sessions = bench, name, sessions
        self.blind = Blind(sessions)  # what the system is given: opaque ids, no gold
        # The run-relative file for the system's memory after ingest (``export()``), if any: it
        # travels in the first answer's ``files`` and the driver writes it (workers may be elsewhere).
        self.export_as = export_as
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
            files: dict[str, Any] = {}
            if self.system is None:
                t0 = time.perf_counter()
                try:
                    with contain_exits():
                        self.system = self.bench.new_system(self.name, self.log)
                        await self.system.ingest_all(self.blind.sessions)
                        memory = self.system.export() if self.export_as is not None else None
                except Exception as exc:
                    self.failed = f"ingest failed: {error_text(exc)}"
                    raise ModelCallError(self.failed) from None
                if memory is not None and self.export_as is not None:
                    files[self.export_as] = memory
                latency["ingest_s"] = time.perf_counter() - t0
            recall_before = self.system.stats().recall_s
            t1 = time.perf_counter()
            with contain_exits():  # its own task (head-to-head gathers several): contained here
                resp = await self.system.respond(query if isinstance(query, str) else Blind.dialogue(query), now)
            total = time.perf_counter() - t1
            recall_s = self.system.stats().recall_s - recall_before
            latency |= {"recall_s": recall_s, "answer_s": total - recall_s}
            return (
                {
                    "answer": resp.answer,
                    "context": resp.context,
                    "context_tokens": resp.context_tokens,
                    "tokens_approx": resp.tokens_approx,
                    "latency": latency,
                    "prompt": resp.prompt,
                    "usage": UsageTotals.of(self.log.records[before:]).model_dump(),
                }
                | ({"trace": resp.trace} if resp.trace else {})
                | ({"files": files} if files else {})
            )

    def close(self) -> None:
        if self.system is not None:
            self.bench.release(self.name, self.system)
            self.system = None


class SlotPool:
    """The slots of a run: one per (group, system), built on first use, closed as soon as the
    last unit that needs it has run (``pending``: the (group, system) of every unit to run)."""

    def __init__(
        self,
        bench: MemoryBench,
        pending: Iterable[tuple[str, str]],
        sessions: Callable[[str], list[Session]],
        export_as: Callable[[str, str], str] | None = None,
    ) -> None:
        self.bench, self.sessions, self.export_as = bench, sessions, export_as
        self.left: dict[tuple[str, str], int] = {}
        for k in pending:
            self.left[k] = self.left.get(k, 0) + 1
        self.slots: dict[tuple[str, str], SystemSlot] = {}

    def get(self, group: str, name: str) -> SystemSlot:
        slot = self.slots.get((group, name))
        if slot is None:
            slot = self.slots[(group, name)] = SystemSlot(
                self.bench,
                name,
                self.sessions(group),
                export_as=self.export_as(group, name) if self.export_as else None,
            )
        return slot

    def done(self, group: str, name: str) -> None:
        """One unit of (group, system) finished (well or not): close its slot after the last."""
        self.left[(group, name)] = self.left.get((group, name), 1) - 1
        if self.left[(group, name)] <= 0 and (group, name) in self.slots:
            # Dropped, not only closed: a run's finished slots (each its blinded sessions and call
            # records) would otherwise stay until the end, memory growing with the run.
            self.slots.pop((group, name)).close()
            del self.left[(group, name)]

    def close(self) -> None:
        for s in self.slots.values():
            s.close()
