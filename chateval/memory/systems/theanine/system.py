"""theanine: timeline-based memory management (Ong et al., NAACL 2025, arXiv 2406.10996).

Memories are never deleted; they are linked into a graph by time and cause-effect relations,
and the response is conditioned on *timelines* of memories rather than on isolated memories.

- Memory: each session is summarised into events m = (event, time) about *both* speakers,
  attributed by name, with provenance (``theanine_events``), embedded into the vector store.
- Phase I-1: each new memory's associative memories are the ``j`` most similar memories of
  earlier sessions.
- Phase I-2: the model gives the relation of the new memory to each associative memory
  (``RELATIONS`` or none). ``linking="pair"`` (default, the paper's protocol): one call per
  (earlier, new) pair, explanation before relation, both memories' whole source sessions within
  ``session_tokens``; ``linking="batch"``: one call per new memory for all its candidates with
  ``source_chars`` of cited turns. In every weakly connected component *of G_t, the graph as it
  was before this session*, holding a related memory, the new memory is linked to the most
  recent related one (edge old -> new, labelled with that relation); so the result does not
  depend on the order of memories within a session.
- Phase II-1: the current dialogue (all of it, or its last ``query_turns`` turns; oldest turn
  first as in the original code, or ``query_order="newest_first"``) is the query; the ``k`` most similar memories are retrieved;
  for each, the raw timelines through it (from the oldest memory of its component, to a memory
  with no outgoing edge) are untangled and ``n`` are sampled (seeded).
- Phase II-2: one typed step per raw timeline refines it for the current dialogue (drops what is
  redundant, rewrites what helps).
- Phase III: continuing a dialogue, the next utterance is generated *as the speaker* from the
  dialogue and the refined timelines (``theanine_response``); a question (a plain string) gets
  the shared QA step. ``Response.prompt`` names the step that ran.

Ablations (the paper's Table 2): ``relation_aware=False`` links each new memory to all of its
``j`` associative memories by similarity, with no relation and no LLM call; ``refine=False``
gives the raw timelines to the answer; ``timeline_format="events"`` breaks the retrieved
timelines into single events in a seeded random order (the "top-k" format);
``timeline_format="dynamic_k"`` is the paper's Table 5 baseline: the top-N memories by
similarity alone, N = the number of distinct memories in the timelines, as a plain dated list.
``graph_path`` keeps the user's graph on disk (node-link JSON, written after every session,
read back at start).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ...answer import AnswerInputs
from ...base import format_items, memory_system
from ...cosine_index import CosineIndex
from ...extract import session_inputs
from ...timeline_graph import TimelineGraph, window
from ...types import MemoryItem, Response, Session, Turn
from ...vector import is_server
from ..retrieval import VectorMemory
from .refine import refine_timeline
from .settings import TheanineSettings
from .steps import (
    EXTRACT_EVENTS,
    RELATE_MEMORIES,
    RELATE_PAIR,
    RESPOND_AS_SPEAKER,
    EventInputs,
    MemoryRef,
    PairInputs,
    RelationInputs,
    SpeakerInputs,
    next_speaker,
    session_excerpt,
)
from .timelines import Timeline, events_text, timeline_text
from .trace import timeline_trace

# The dialogue of the respond() call in progress, for the retrieval query and the refinement
# (respond() passes recall() and context() only the last user message).
_DIALOGUE: ContextVar[list[Turn] | None] = ContextVar("theanine_dialogue", default=None)


def dialogue_query(
    dialogue: list[Turn] | None,
    question: str,
    turns: int | None,
    order: Literal["oldest_first", "newest_first"] = "oldest_first",
) -> str:
    """The retrieval query: the whole dialogue (``turns`` None, the original code's query) or its
    latest ``turns`` turns, or the question alone. ``oldest_first`` writes the turns as they were
    said (the original code's query); ``newest_first`` reverses them, so an embedder that cuts
    long inputs to its window (MiniLM: 256 word pieces) keeps the latest turns rather than the
    opening ones."""
    if not dialogue:
        return question
    kept = dialogue if turns is None else dialogue[-turns:]
    if order == "newest_first":
        kept = list(reversed(kept))
    return "\n".join(f"{t.role}: {t.content}" for t in kept)


@memory_system("theanine")
class Theanine(VectorMemory[TheanineSettings]):
    description = (
        "memory graph linked by LLM-assigned temporal/causal relations; responses use "
        "refined timelines of memories (THEANINE)"
    )
    paper = "Ong et al. 2025, Towards Lifelong Dialogue Agents via Timeline-based Memory Management (NAACL)"
    Settings = TheanineSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.graph = TimelineGraph()
        self.last_timelines: list[Timeline] = []  # what the latest context() used, for inspection
        self.last_recalled: list[MemoryItem] = []
        self._restored = True
        # Local Qdrant re-normalises every stored vector per query: the same exact search runs
        # here, a session's queries as one matrix product (a Qdrant server answers its own).
        self._index = None if is_server(self.qdrant) else CosineIndex()
        path = self.settings.graph_path
        if path and Path(path).exists():
            self.graph = TimelineGraph.load(path)
            self._restore_sessions()
            self._restored = False  # the vector store is filled lazily (embedding is async)

    # --- persistence --------------------------------------------------------------------
    def _restore_sessions(self) -> None:
        for s in self.graph.meta.get("sessions", []):
            date = datetime.fromisoformat(s["date"])
            self._sessions[s["id"]] = Session(id=s["id"], date=date, turns=[], meta={"restored": True})
            self._last_date = max(self._last_date or date, date)
            self._stats.sessions += 1

    async def _ensure_store(self) -> None:
        if self._restored:
            return
        self._restored = True
        items = [self._item_of(mid) for mid in sorted(self.graph.g.nodes, key=self.graph.key)]
        await self.add(items)

    def _item_of(self, mid: str) -> MemoryItem:
        d = self.graph.node(mid)
        return MemoryItem(
            id=mid,
            text=d["text"],
            time=d["time"],
            session_id=d["session_id"],
            turn_ids=list(d["turn_ids"]),
            meta=dict(d.get("meta") or {}),
        )

    async def add(self, items: list[MemoryItem], vectors: np.ndarray | None = None) -> None:
        if items and vectors is None:
            vectors = await self.embedder.embed([i.text for i in items])
        await super().add(items, vectors)
        if self._index is not None and items and vectors is not None:
            self._index.add([i.id for i in items], vectors)

    async def search_many(self, vectors: list[np.ndarray], k: int) -> list[list[tuple[MemoryItem, float]]]:
        """``search`` for several queries: one matrix product over the in-memory index."""
        if self._index is None or len(self._index) != len(self._items):  # (a removal: Qdrant answers)
            return [await super(Theanine, self).search(v, k) for v in vectors]
        hits = self._index.search_many(np.asarray(vectors), k)
        return [[(self._items[m], score) for m, score in row if m in self._items] for row in hits]

    async def search(self, vector: np.ndarray, k: int) -> list[tuple[MemoryItem, float]]:
        return (await self.search_many([vector], k))[0]

    def save(self) -> None:
        if self.settings.graph_path:
            self.graph.save(self.settings.graph_path)

    # --- Phase I: memory graph construction ---------------------------------------------
    async def extract(self, session: Session) -> list[MemoryItem]:
        """Events about every speaker of the session, each attributed by name."""
        speakers = list(dict.fromkeys(t.role for t in session.turns))
        inputs = EventInputs(**session_inputs(session).model_dump(), speakers=speakers)
        out = await EXTRACT_EVENTS.run(self.layer, inputs, log=self.log, prompts=self.prompts)
        return [self._item(session, n, f) for n, f in enumerate(f for f in out.facts if f.text.strip())]

    async def _ingest(self, session: Session) -> None:
        await self._ensure_store()
        new = await self.extract(session)
        self.graph.meta.setdefault("sessions", []).append({"id": session.id, "date": session.date.isoformat()})
        if not new:
            self.save()
            return
        vectors = await self.embedder.embed([i.text for i in new])
        # Phase I-1: associative memories come from earlier sessions only (nothing of this
        # session is in the store yet), so every edge points forward in time.
        assoc = await self.search_many(list(vectors), self.settings.j)
        targets: list[list[tuple[str, str | None, str]]]  # (earlier memory, relation, explanation)
        if self.settings.relation_aware:
            labels = await asyncio.gather(*(self._relate(session, item, hits) for item, hits in zip(new, assoc)))
            # Every target is chosen on G_t (no link of this session exists yet), so the memories
            # of one session do not change each other's targets: the order within it is irrelevant.
            targets = [
                [(old, rel, why[old]) for old, rel in self.graph.linking_targets(related)] for related, why in labels
            ]
        else:
            # Ablation "w/o relation-aware linking": an unlabelled edge to each associative memory.
            targets = [[(m.id, None, "") for m, _ in hits] for hits in assoc]
        for item, links in zip(new, targets):
            self.graph.add_memory(
                item.id,
                text=item.text,
                time=item.time,
                session_id=item.session_id,
                turn_ids=item.turn_ids,
                source=self._source(session, item),
                meta=item.meta,
            )
            for old, relation, why in links:
                kind = "relation" if self.settings.relation_aware else "similarity"
                self.graph.link(old, item.id, relation, kind=kind, **({"explanation": why} if why else {}))
        await self.add(new, vectors)
        self.save()

    def _source(self, session: Session, item: MemoryItem) -> str:
        """A memory's source conversation in the relation prompt: its whole session within the
        token budget (pair linking, the paper's protocol), or its cited turns (batch linking)."""
        if self.settings.linking == "pair":
            return session_excerpt(session.turns, item.turn_ids, self.settings.session_tokens)
        cited = set(item.turn_ids)
        text = "\n".join(f"{t.role}: {t.content}" for t in session.turns if t.id in cited)
        cap = self.settings.source_chars
        return text if len(text) <= cap else text[: max(0, cap - 1)] + "…"

    async def _relate(
        self, session: Session, item: MemoryItem, hits: list[tuple[MemoryItem, float]]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """({associative memory id: relation}, {id: the model's explanation}) for the
        associative memories the model related to the new one."""
        if not hits:
            return {}, {}
        new = MemoryRef(id="NEW", event=item.text, time=item.time, conversation=self._source(session, item))

        def ref(alias: str, mid: str) -> MemoryRef:
            d = self.graph.node(mid)
            return MemoryRef(id=alias, event=d["text"], time=d["time"], conversation=d.get("source", ""))

        related: dict[str, str] = {}
        why: dict[str, str] = {}
        if self.settings.linking == "pair":
            outs = await asyncio.gather(
                *(
                    RELATE_PAIR.run(
                        self.layer,
                        PairInputs(earlier=ref("EARLIER", m.id), new=new),
                        log=self.log,
                        prompts=self.prompts,
                    )
                    for m, _ in hits
                )
            )
            for (m, _), out in zip(hits, outs):
                if out.relation is not None:
                    related[m.id], why[m.id] = out.relation, out.explanation.strip()
            return related, why
        alias = {f"M{i + 1}": m.id for i, (m, _) in enumerate(hits)}
        inputs = RelationInputs(new=new, candidates=[ref(a, mid) for a, mid in alias.items()])
        labelled = await RELATE_MEMORIES.run(self.layer, inputs, log=self.log, prompts=self.prompts)
        for label in labelled.relations:
            mid = alias.get(label.memory_id.strip().upper())
            if mid is not None and label.relation is not None:
                related.setdefault(mid, label.relation)  # the first label for a memory counts
        return related, {m: "" for m in related}

    # --- Phase II: timeline retrieval and refinement ------------------------------------
    async def respond(self, query: str | list[Turn], now: datetime) -> Response:
        token = _DIALOGUE.set(None if isinstance(query, str) else list(query))
        try:
            return await super().respond(query, now)
        finally:
            _DIALOGUE.reset(token)

    async def generate(self, inputs: AnswerInputs) -> tuple[str, str]:
        """Phase III. Continuing a dialogue: the next utterance as the speaker (the paper's
        response step); a question: the shared QA step."""
        if not inputs.dialogue or self.settings.dialogue_prompt == "qa":
            return await super().generate(inputs)
        known = [t.role for s in self._sessions.values() for t in s.turns]
        speaker = next_speaker(inputs.dialogue, known)
        units = [line.split("] ", 1)[-1] for line in inputs.context.splitlines() if line.startswith("- [")]
        reply = await RESPOND_AS_SPEAKER.run(
            self.layer,
            SpeakerInputs(
                dialogue=inputs.dialogue, speaker=speaker, memory=inputs.context, now=inputs.now, memories=units
            ),
            log=self.log,
            prompts=self.prompts,
        )
        name = f"{speaker}:"
        reply = reply[len(name) :].strip() if reply.startswith(name) else reply  # a model may echo the name
        return reply, RESPOND_AS_SPEAKER.name

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        await self._ensure_store()
        if not self._items:
            return []
        text = dialogue_query(_DIALOGUE.get(), query, self.settings.query_turns, self.settings.query_order)
        (qv,) = await self.embedder.embed([text])
        out = []
        for item, score in await self.search(qv, k or self.settings.k):
            timelines = self.raw_timelines(item.id, text)
            meta = {
                **item.meta,
                "timelines": [t.path for t in timelines],
                "timelines_truncated": [t.truncated for t in timelines],
                "timelines_start": [t.start for t in timelines],
            }
            out.append(item.model_copy(update={"score": score, "scores": {"relevance": score}, "meta": meta}))
        if self.settings.timeline_format == "dynamic_k":
            # The paper's "dynamic k" retrieval baseline: as many memories, by similarity alone, as
            # the timelines would have held; they are given as a plain list (no timelines).
            n = len({m for item in out for path in item.meta["timelines"] for m in path})
            out = [
                item.model_copy(
                    update={"score": score, "scores": {"relevance": score}, "meta": {**item.meta, "dynamic_k": n}}
                )
                for item, score in await self.search(qv, n)
            ]
        return out

    def raw_timelines(self, memory_id: str, query: str) -> list[Timeline]:
        """Phase II-1 for one retrieved memory: ``n`` sampled raw timelines through it, each cut
        to ``max_events`` around it. Seeded by (seed, memory, query): the same query gives the
        same timelines."""
        s = self.settings
        digest = hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]
        rng = random.Random(f"{s.seed}|{memory_id}|{digest}")
        out: dict[tuple[str, ...], Timeline] = {}
        for path in self.graph.sample_timelines(memory_id, s.n, rng, cap=s.max_paths):
            cut = window(path, memory_id, s.max_events)
            out.setdefault(
                tuple(cut), Timeline(retrieved=[memory_id], path=cut, truncated=len(cut) < len(path), start=path[0])
            )
        return list(out.values())

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        if self.settings.timeline_format == "dynamic_k":
            self.last_timelines, self.last_recalled = [], list(items)
            return format_items(items)
        dialogue = _DIALOGUE.get() or [Turn(id="q", role="user", content=question)]
        timelines: dict[tuple[str, ...], Timeline] = {}
        for item in items:
            paths = item.meta.get("timelines") or [[item.id]]
            cut = item.meta.get("timelines_truncated") or [False] * len(paths)
            starts = item.meta.get("timelines_start") or [None] * len(paths)
            for path, truncated, start in zip(paths, cut, starts):
                t = timelines.setdefault(
                    tuple(path), Timeline(retrieved=[], path=list(path), truncated=truncated, start=start)
                )
                t.retrieved.append(item.id)  # a timeline retrieved through several memories is given once
        chosen = list(timelines.values())
        self.last_recalled = list(items)
        if self.settings.refine and chosen:
            chosen = list(
                await asyncio.gather(
                    *(
                        refine_timeline(self.layer, self.graph, t, dialogue, now, log=self.log, prompts=self.prompts)
                        for t in chosen
                    )
                )
            )
        self.last_timelines = chosen
        if self.settings.timeline_format == "events":
            return events_text(self.graph, chosen, question, self.settings.seed)
        return "\n\n".join(timeline_text(self.graph, n + 1, t) for n, t in enumerate(chosen))

    # --- inspection -------------------------------------------------------------------
    def trace(self) -> dict[str, Any]:
        """What the latest response used, as the original code writes it per turn (see
        ``timeline_trace``)."""
        return timeline_trace(self.graph, self.last_timelines, self.last_recalled)

    def export(self) -> dict[str, Any]:
        """The memory graph as networkx node-link JSON (the format of ``graph_path``)."""
        return self.graph.to_json()

    # --- MemorySystem -------------------------------------------------------------------
    def item_count(self) -> int:
        return len(self.graph)

    def _reset(self) -> None:
        super()._reset()
        self.graph = TimelineGraph()
        self.last_timelines, self.last_recalled = [], []
        self._index = None if is_server(self.qdrant) else CosineIndex()
        self._restored = True
        self.save()  # the file mirrors the memory: an emptied memory is an emptied file
