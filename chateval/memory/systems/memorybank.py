"""memorybank: memories that fade with time and strengthen when recalled (Zhong et al. 2024).

Each session becomes extracted memory sentences plus one session summary, embedded in Qdrant.
Every memory has a strength S (1 when written) and a last-recall time. Retention follows the
Ebbinghaus curve R = exp(-t / S), t the time since the last recall; each recall adds 1 to S and
resets t. ``mode`` says how retention acts at recall time:

- ``forget``: memories whose retention fell below ``forget_threshold`` are deleted for good,
  then the rest are ranked by cosine similarity;
- ``weight``: nothing is deleted; score = cosine * R;
- ``none``: cosine only (retention reported, not used).

``variant="released"`` follows the authors' released code instead of the paper (see
``scoring``): R = exp(-days * S / 5) on whole calendar days, and forgetting is a random draw
(kept with probability R, seeded RNG) that spares session summaries; it runs at most once per
calendar day, as the released code forgets when it loads the memory for the day.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import scoring
from ..base import memory_system
from ..extract import SUMMARIZE_SESSION, session_inputs
from ..types import MemoryItem, Session
from .retrieval import VectorMemory


class MemoryBankSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(10, ge=1, le=1000)  # memories recalled per question
    mode: Literal["forget", "weight", "none"] = "forget"
    # variant="paper": memories with R below this are forgotten (mode="forget").
    forget_threshold: float = Field(0.05, ge=0.0, le=1.0)
    variant: Literal["paper", "released"] = "paper"
    # The paper's t is in days; variant="released" always counts whole calendar days.
    time_unit_s: float = Field(scoring.DAY_S, gt=0)
    summaries: bool = True  # also store one summary memory per session (as MemoryBank does)
    seed: int = 0  # the released variant's forgetting draws


@dataclass
class Strength:
    strength: float
    last_recall: datetime
    recalls: int = 0


@memory_system("memorybank")
class MemoryBank(VectorMemory[MemoryBankSettings]):
    description = (
        "memory sentences + session summaries in Qdrant; Ebbinghaus retention exp(-t/S), "
        "strength grows on recall; forgets or down-weights faded memories"
    )
    paper = "Zhong et al. 2024, MemoryBank: Enhancing Large Language Models with Long-Term Memory (AAAI)"
    Settings = MemoryBankSettings

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.state: dict[str, Strength] = {}
        self.forgotten = 0  # memories deleted by forgetting since the last reset
        self._rng = random.Random(self.settings.seed)
        self._last_sweep: date | None = None

    async def _ingest(self, session: Session) -> None:
        items = await self.extract(session)
        if self.settings.summaries:
            out = await SUMMARIZE_SESSION.run(self.layer, session_inputs(session), log=self.log, prompts=self.prompts)
            if out.summary.strip():
                items.append(
                    MemoryItem(
                        id=f"{session.id}#summary",
                        text=out.summary.strip(),
                        time=session.date,
                        session_id=session.id,
                        turn_ids=[t.id for t in session.turns],
                        meta={"kind": "summary"},
                    )
                )
        await self.add(items)
        self.state.update({i.id: Strength(1.0, session.date) for i in items})

    # --- retention -----------------------------------------------------------------------
    def retention(self, memory_id: str, now: datetime) -> float:
        st = self.state[memory_id]
        if self.settings.variant == "released":
            return scoring.memorybank_retention_released(scoring.whole_days(st.last_recall, now), st.strength)
        t = scoring.elapsed(st.last_recall, now, self.settings.time_unit_s)
        return scoring.memorybank_retention(t, st.strength)

    async def forget(self, now: datetime) -> list[str]:
        """Delete the memories forgotten by ``now``; returns their ids."""
        if self.settings.variant == "released":
            if self._last_sweep == now.date():
                return []
            self._last_sweep = now.date()
            gone = [
                i.id
                for i in self.items
                if i.meta.get("kind") != "summary"
                and scoring.memorybank_released_forgets(
                    scoring.whole_days(self.state[i.id].last_recall, now), self.state[i.id].strength, self._rng
                )
            ]
        else:
            gone = [i.id for i in self.items if self.retention(i.id, now) < self.settings.forget_threshold]
        await self.remove(gone)
        for i in gone:
            del self.state[i]
        self.forgotten += len(gone)
        return gone

    # --- recall --------------------------------------------------------------------------
    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        s = self.settings
        if s.mode == "forget":
            await self.forget(now)
        if not self.items:
            return []
        k = k or s.k
        (qv,) = await self.embedder.embed([query])
        # Retention reorders only in "weight" mode: then every memory is a candidate.
        hits = await self.search(qv, len(self.items) if s.mode == "weight" else k)
        scored = []
        for item, cos in hits:
            r = self.retention(item.id, now)
            score = cos * r if s.mode == "weight" else cos
            scored.append((score, item, {"relevance": cos, "retention": r, "strength": self.state[item.id].strength}))
        scored.sort(key=lambda x: -x[0])  # stable: ties keep Qdrant's order
        out = []
        for score, item, parts in scored[:k]:
            st = self.state[item.id]
            st.strength += 1  # a recall strengthens the memory and resets its clock
            st.last_recall = max(st.last_recall, now)
            st.recalls += 1
            out.append(
                item.model_copy(update={"score": score, "scores": parts, "meta": {**item.meta, "recalls": st.recalls}})
            )
        return out

    def _reset(self) -> None:
        super()._reset()
        self.state.clear()
        self.forgotten = 0
        self._rng = random.Random(self.settings.seed)
        self._last_sweep = None
