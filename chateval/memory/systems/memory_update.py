"""memory_update: retrieval memory that is kept up to date (Bae et al. 2022, "Keep Me Updated!").

Each new memory sentence of a session is compared with its most similar old memories; one LLM
step per session decides, per new fact, ADD (keep both), REPLACE (the old memories give way to
the new sentence), DELETE (the old memories no longer hold and the new sentence only says so:
both dropped) or SKIP (already known). Facts with no similar old memory are added without asking.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from ...models.steps import TypedStep
from ...util.text import content_words, words
from ..base import memory_system
from ..types import Session
from .retrieval import RetrievalSettings, VectorMemory

Operation = Literal["ADD", "REPLACE", "DELETE", "SKIP"]
# Names other papers and models use for the same operations (Bae et al.: PASS / APPEND).
_ALIASES = {"UPDATE": "REPLACE", "APPEND": "ADD", "PASS": "SKIP", "NONE": "SKIP", "NOOP": "SKIP", "KEEP": "SKIP"}


class MemoryUpdateSettings(RetrievalSettings):
    candidates: int = Field(3, ge=1, le=20)  # old memories compared with each new fact
    # Only old memories at least this similar (cosine) to a new fact are candidates; a fact
    # with none is added without an LLM call.
    match_threshold: float = Field(0.4, ge=-1.0, le=1.0)


# --- the typed step -------------------------------------------------------------------------
class OldMemory(BaseModel):
    id: str  # the step's alias ("M1"); the system maps it back to the memory's id
    text: str
    date: datetime
    similarity: float


class NewFact(BaseModel):
    id: str  # "F1", ...
    text: str
    candidates: list[OldMemory]


class UpdateInputs(BaseModel):
    session_id: str
    date: datetime
    facts: list[NewFact]


class MemoryOperation(BaseModel):
    fact_id: str = Field(description="id of the new fact (F1, F2, ...)")
    operation: Operation = Field(description="ADD, REPLACE, DELETE or SKIP")
    targets: list[str] = Field(
        default_factory=list, description="ids of existing memories (M1, ...) it replaces, deletes or repeats"
    )

    @field_validator("operation", mode="before")
    @classmethod
    def _canonical(cls, v: object) -> object:
        if isinstance(v, str):
            v = v.strip().upper()
            return _ALIASES.get(v, v)
        return v


class MemoryOperations(BaseModel):
    operations: list[MemoryOperation]


_SAID = re.compile(r"^[^:]{1,40}\bsaid:\s*")  # the offline extractor writes "<speaker> said: ..."
_NEGATION = frozenset(
    {
        "no",
        "not",
        "never",
        "longer",
        "anymore",
        "don't",
        "doesn't",
        "didn't",
        "isn't",
        "aren't",
        "wasn't",
        "stopped",
        "quit",
        "gave",
    }
)


def _parts(text: str) -> tuple[set[str], set[str], set[str]]:
    """(content words, value words, all words): values are names and numbers, i.e. capitalised
    words inside a sentence and digits, the part of a fact that changes when the fact is updated."""
    body = _SAID.sub("", text.strip())
    values: set[str] = set()
    for sentence in re.split(r"(?<=[.!?:;])\s+", body):
        tokens = re.findall(r"[A-Za-z0-9]+", sentence)
        values |= {t.lower() for n, t in enumerate(tokens) if t.isdigit() or (n > 0 and t[0].isupper() and t != "I")}
    content = set(content_words(body)) | {v for v in values if v.isdigit()}
    return content, values & content, set(words(body))


def offline_decide(fact: NewFact) -> MemoryOperation:
    """Deterministic stand-in for the update judgement, from the texts alone:
    near-identical -> SKIP; the old fact negated and nothing else -> DELETE; the same predicate
    words with a different name or number -> REPLACE; otherwise ADD."""
    new, new_values, new_all = _parts(fact.text)
    replace: list[str] = []
    for c in fact.candidates:
        old, old_values, old_all = _parts(c.text)
        if not new or not old:
            continue
        if new <= old or len(new & old) / len(new | old) >= 0.8:
            return MemoryOperation(fact_id=fact.id, operation="SKIP", targets=[c.id])
        if (new_all & _NEGATION) - old_all and new <= old | _NEGATION:
            return MemoryOperation(fact_id=fact.id, operation="DELETE", targets=[c.id])
        shared = (new - new_values) & (old - old_values)
        smaller = min(len(new - new_values), len(old - old_values))
        if shared and len(shared) >= 0.5 * smaller and new_values - old_values and old_values - new_values:
            replace.append(c.id)
    if replace:
        return MemoryOperation(fact_id=fact.id, operation="REPLACE", targets=replace)
    return MemoryOperation(fact_id=fact.id, operation="ADD")


def offline_operations(inp: UpdateInputs) -> MemoryOperations:
    return MemoryOperations(operations=[offline_decide(f) for f in inp.facts])


UPDATE_MEMORY: TypedStep[UpdateInputs, MemoryOperations] = TypedStep(
    "update_memory",
    template="memory/update_memory.j2",
    inputs=UpdateInputs,
    output=MemoryOperations,
    offline=offline_operations,
)


class OperationRecord(BaseModel):
    """One applied decision, for inspection and tests."""

    session_id: str
    memory_id: str  # the new fact's id (stored unless SKIP/DELETE)
    text: str
    operation: Operation  # as applied (a REPLACE whose targets are gone is applied as ADD)
    targets: list[str] = Field(default_factory=list)  # memory ids removed (REPLACE/DELETE) or repeated (SKIP)
    decided_by: Literal["model", "no_candidates"] = "model"


# --- the system -----------------------------------------------------------------------------
@memory_system("memory_update")
class MemoryUpdate(VectorMemory[MemoryUpdateSettings]):
    description = "retrieval memory kept current: each new fact is added, replaces, deletes or skips similar old ones"
    paper = "Bae et al. 2022, Keep Me Updated! Memory Management in Long-term Conversations"
    Settings = MemoryUpdateSettings

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.operations: list[OperationRecord] = []

    def operation_counts(self) -> dict[str, int]:
        return dict(Counter(r.operation for r in self.operations))

    async def _ingest(self, session: Session) -> None:
        new = await self.extract(session)
        if not new:
            return
        vectors = await self.embedder.embed([i.text for i in new])
        # Candidates are old memories only (from earlier sessions): nothing of this session is stored yet.
        facts: list[NewFact] = []
        aliases: dict[str, str] = {}  # "M1" -> memory id
        alias_of: dict[str, str] = {}
        for n, (item, vector) in enumerate(zip(new, vectors)):
            hits = [
                (m, s)
                for m, s in await self.search(vector, self.settings.candidates)
                if s >= self.settings.match_threshold
            ]
            cands = []
            for m, s in hits:
                if m.id not in alias_of:
                    alias_of[m.id] = f"M{len(alias_of) + 1}"
                    aliases[alias_of[m.id]] = m.id
                cands.append(OldMemory(id=alias_of[m.id], text=m.text, date=m.time, similarity=round(s, 4)))
            facts.append(NewFact(id=f"F{n + 1}", text=item.text, candidates=cands))

        decisions: dict[str, MemoryOperation] = {}
        asked = [f for f in facts if f.candidates]
        if asked:
            out = await UPDATE_MEMORY.run(
                self.layer,
                UpdateInputs(session_id=session.id, date=session.date, facts=asked),
                log=self.log,
                prompts=self.prompts,
            )
            for decided in out.operations:
                decisions.setdefault(decided.fact_id.strip().upper(), decided)

        keep: list[int] = []
        for n, (fact, item) in enumerate(zip(facts, new)):
            op = decisions.get(fact.id)
            allowed = {c.id for c in fact.candidates}
            # Targets must be this fact's candidates and still in memory (an earlier fact of the
            # session may have replaced them already).
            targets = [aliases[t] for t in dict.fromkeys(op.targets if op else []) if t in allowed]
            targets = [t for t in targets if t in self._items]
            operation: Operation = op.operation if op else "ADD"
            if operation in ("REPLACE", "DELETE") and not targets:
                operation = "ADD"  # nothing (left) to replace: keep the new information
            if operation == "REPLACE":
                new[n] = item = item.model_copy(
                    update={
                        "meta": {
                            **item.meta,
                            "replaced": targets,
                            "replaced_texts": [self._items[t].text for t in targets],
                        }
                    }
                )
            if operation in ("REPLACE", "DELETE"):
                await self.remove(targets)
            if operation in ("ADD", "REPLACE"):
                keep.append(n)
            self.operations.append(
                OperationRecord(
                    session_id=session.id,
                    memory_id=item.id,
                    text=item.text,
                    operation=operation,
                    targets=targets,
                    decided_by="model" if fact.candidates else "no_candidates",
                )
            )
        await self.add([new[n] for n in keep], vectors[keep] if keep else None)

    def _reset(self) -> None:
        super()._reset()
        self.operations.clear()
