"""theanine: timeline-based memory management (Ong et al., NAACL 2025, arXiv 2406.10996).

Memories are never deleted; they are linked into a graph by time and cause-effect relations,
and the response is conditioned on *timelines* of memories rather than on isolated memories.

- Memory: each session is summarised into memory sentences m = (event, time) with provenance
  (``extract_facts``), embedded into the shared vector store.
- Phase I-1: each new memory's associative memories are the ``j`` most similar memories of
  earlier sessions.
- Phase I-2: one typed step per new memory asks the model for the relation of the new memory to
  each associative memory (``RELATIONS`` or none), from their events, times and the turns they
  come from. In every weakly connected component holding a related memory, the new memory is
  linked to the most recent related one (edge old -> new, labelled with that relation).
- Phase II-1: the current dialogue is the query; the ``k`` most similar memories are retrieved;
  for each, the raw timelines through it (from the oldest memory of its component that leads to
  it, to a memory with no outgoing edge) are untangled and ``n`` are sampled (seeded).
- Phase II-2: one typed step per raw timeline refines it for the current dialogue (drops what is
  redundant, rewrites what helps).
- Phase III: the answer step sees the dialogue and the refined timelines (``context()``).

Ablations (the paper's Table 2): ``relation_aware=False`` links each new memory to its most
similar older memory with no relation and no LLM call; ``refine=False`` gives the raw timelines
to the answer; ``timeline_format="events"`` breaks the retrieved timelines into single events in
a seeded random order (the "top-k" format). ``graph_path`` keeps the user's graph on disk
(node-link JSON, written after every session, read back at start).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...steps import TypedStep
from ...text import content_words
from ..base import memory_system
from ..timeline_graph import RELATIONS, Relation, TimelineGraph, window
from ..types import MemoryItem, Response, Session, Turn
from .retrieval import VectorMemory


class TheanineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    j: int = Field(3, ge=1, le=50)  # associative memories per new memory (Phase I-1)
    k: int = Field(3, ge=1, le=100)  # memories retrieved per response (Phase II-1)
    n: int = Field(1, ge=1, le=20)  # raw timelines sampled per retrieved memory
    max_paths: int = Field(256, ge=1, le=100_000)  # list every timeline up to this many; beyond, sample by walks
    max_events: int = Field(12, ge=2, le=1000)  # a timeline is cut to this many events around the retrieved one
    relation_aware: bool = True  # False: link to the most similar older memory, no relation, no LLM call
    refine: bool = True  # False: raw timelines go to the response (no refinement calls)
    timeline_format: Literal["timeline", "events"] = "timeline"  # events: shuffled single events (top-k format)
    query_turns: int = Field(6, ge=1, le=1000)  # latest dialogue turns that form the retrieval query
    source_chars: int = Field(600, ge=0, le=20_000)  # characters of source conversation per memory in prompts
    seed: int = 0  # timeline sampling and event shuffling
    graph_path: str | None = None  # the user's graph file (node-link JSON); None: in memory only


# --- Phase I-2: relation-aware linking (typed step) -------------------------------------------
class MemoryRef(BaseModel):
    id: str  # the step's alias: "NEW", "M1", "M2", ...
    event: str
    time: datetime
    conversation: str = ""  # the turns the memory was summarised from (cut to source_chars)


class RelationInputs(BaseModel):
    new: MemoryRef
    candidates: list[MemoryRef]
    relations: list[str] = Field(default_factory=lambda: list(RELATIONS))


_RELATION_ALIASES = {r.lower(): r for r in RELATIONS} | {
    "changes": "Changed", "change": "Changed", "causes": "Cause", "caused": "Cause", "xreason": "Reason",
    "hindered": "HinderedBy", "hindered by": "HinderedBy", "hinderedby": "HinderedBy", "xreact": "React",
    "reaction": "React", "xwant": "Want", "wants": "Want", "same topic": "SameTopic", "sametopic": "SameTopic",
    "same_topic": "SameTopic",
}


class RelationLabel(BaseModel):
    memory_id: str = Field(description="id of the earlier memory (M1, M2, ...)")
    relation: Relation | None = Field(description="how the new memory relates to it, or null if unrelated")

    @field_validator("relation", mode="before")
    @classmethod
    def _canonical(cls, v: object) -> object:
        if isinstance(v, str):
            key = v.strip().lower()
            if key in ("", "none", "null", "no relation", "unrelated", "n/a"):
                return None
            return _RELATION_ALIASES.get(key, v.strip())
        return v


class RelationOutput(BaseModel):
    relations: list[RelationLabel]


_SAID = re.compile(r"^[^:]{1,40}\bsaid:\s*")  # the offline extractor writes "<speaker> said: ..."
# Chat filler that two unrelated utterances share all the time: not evidence of a shared topic.
_FILLER = frozenset("""yeah yes oh wow well like really good great nice lot lots thing things know think get got
    going go one much many sure thanks thank maybe actually pretty kind sounds sound fun cool okay ok lol haha
    time way make made said say tell told want would could""".split())
_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("Changed", re.compile(r"\b(now|moved|no longer|anymore|any more|changed|switched|used to|instead|quit|"
                           r"stopped|finally|decided|officially)\b")),
    ("Reason", re.compile(r"\b(because|since|due to|that's why|the reason)\b")),
    ("Cause", re.compile(r"\b(so that|as a result|led to|ended up|caused|therefore|thanks to|helped)\b")),
    ("HinderedBy", re.compile(r"\b(can't|cannot|couldn't|unable|too busy|prevent\w*|hard to|not able|never had)\b")),
    ("Want", re.compile(r"\b(want|wanna|plan|planning|hope|wish|going to|would like|looking forward|"
                        r"thinking of|thinking about)\b")),
    ("React", re.compile(r"\b(feel|felt|happy|sad|excited|glad|proud|worried|upset|nervous|jealous|thrilled|"
                         r"disappointed|love)\b")),
]
OFFLINE_MIN_SHARED = 2  # shared topic words the offline rule needs before it relates two memories


def topic_words(event: str) -> set[str]:
    """Content words of an event without the speaker prefix and chat filler."""
    return {w for w in content_words(_SAID.sub("", event.strip())) if w not in _FILLER}


def offline_relation(new_event: str, old_event: str) -> str | None:
    """Deterministic stand-in for the relation judgement, from the texts alone: no relation
    unless the events share at least two topic words; then the first marker found in the new
    event decides (a change word -> Changed, 'because' -> Reason, 'as a result' -> Cause,
    'can't' -> HinderedBy, 'want'/'plan' -> Want, 'feel'/'glad' -> React), else SameTopic."""
    if len(topic_words(new_event) & topic_words(old_event)) < OFFLINE_MIN_SHARED:
        return None
    low = _SAID.sub("", new_event.strip()).lower()
    for relation, pattern in _MARKERS:
        if pattern.search(low):
            return relation
    return "SameTopic"


def offline_relations(inp: RelationInputs) -> RelationOutput:
    return RelationOutput(relations=[RelationLabel(memory_id=c.id, relation=offline_relation(inp.new.event, c.event))
                                     for c in inp.candidates])


RELATE_MEMORIES: TypedStep[RelationInputs, RelationOutput] = TypedStep(
    "theanine_relation", template="memory/theanine_relation.j2", inputs=RelationInputs, output=RelationOutput,
    offline=offline_relations,
)


# --- Phase II-2: context-aware timeline refinement (typed step) -------------------------------
class TimelineEvent(BaseModel):
    id: str  # "E1", ... oldest first
    event: str
    time: datetime
    relation: str | None = None  # relation of the edge from the previous event of the timeline
    retrieved: bool = False  # the memory the timeline was retrieved for


class RefineInputs(BaseModel):
    dialogue: list[Turn]
    timeline: list[TimelineEvent]
    now: datetime


class RefinedEvent(BaseModel):
    id: str = Field(description="id of the timeline event (E1, E2, ...)")
    text: str = Field(description="the event, rewritten to stress what matters for the current conversation")


class RefinedTimeline(BaseModel):
    events: list[RefinedEvent] = Field(description="the events worth keeping, oldest first")
    note: str = Field("", description="one sentence on how the timeline bears on the current conversation")


def offline_refine(inp: RefineInputs) -> RefinedTimeline:
    """Keep the retrieved event and every event sharing a topic word with the dialogue; events
    are kept verbatim and no note is written."""
    said = set().union(*(topic_words(t.content) for t in inp.dialogue)) if inp.dialogue else set()
    return RefinedTimeline(events=[RefinedEvent(id=e.id, text=e.event) for e in inp.timeline
                                   if e.retrieved or topic_words(e.event) & said])


REFINE_TIMELINE: TypedStep[RefineInputs, RefinedTimeline] = TypedStep(
    "theanine_refine", template="memory/theanine_refine.j2", inputs=RefineInputs, output=RefinedTimeline,
    offline=offline_refine,
)


# --- what one response used -------------------------------------------------------------------
class Timeline(BaseModel):
    """One retrieved timeline: the raw path of memory ids and, if refined, what was kept."""

    retrieved: list[str]  # the retrieved memories on it (one, unless several share the timeline)
    path: list[str]  # raw timeline (memory ids, oldest first; cut to max_events)
    truncated: bool = False
    kept: list[str] | None = None  # refined: the memory ids kept, in order
    texts: dict[str, str] = Field(default_factory=dict)  # refined: memory id -> rewritten text
    note: str = ""


# The dialogue of the respond() call in progress, for the retrieval query and the refinement
# (respond() passes recall() and context() only the last user message).
_DIALOGUE: ContextVar[list[Turn] | None] = ContextVar("theanine_dialogue", default=None)


def dialogue_query(dialogue: list[Turn] | None, question: str, turns: int) -> str:
    """The retrieval query: the latest ``turns`` turns of the dialogue, newest first (so an
    embedder that truncates long inputs keeps the most recent ones), or the question alone."""
    if not dialogue:
        return question
    return "\n".join(f"{t.role}: {t.content}" for t in reversed(dialogue[-turns:]))


@memory_system("theanine")
class Theanine(VectorMemory):
    description = ("memory graph linked by LLM-assigned temporal/causal relations; responses use "
                   "refined timelines of memories (THEANINE)")
    paper = "Ong et al. 2025, Towards Lifelong Dialogue Agents via Timeline-based Memory Management (NAACL)"
    Settings = TheanineSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.graph = TimelineGraph()
        self.last_timelines: list[Timeline] = []  # what the latest context() used, for inspection
        self._restored = True
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
        return MemoryItem(id=mid, text=d["text"], time=d["time"], session_id=d["session_id"],
                          turn_ids=list(d["turn_ids"]), meta=dict(d.get("meta") or {}))

    def save(self) -> None:
        if self.settings.graph_path:
            self.graph.save(self.settings.graph_path)

    # --- Phase I: memory graph construction ---------------------------------------------
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
        assoc = [await self.search(v, self.settings.j) for v in vectors]
        if self.settings.relation_aware:
            labels = await asyncio.gather(*(self._relate(session, item, hits) for item, hits in zip(new, assoc)))
        for n, item in enumerate(new):
            self.graph.add_memory(item.id, text=item.text, time=item.time, session_id=item.session_id,
                                  turn_ids=item.turn_ids, source=self._source(session, item),
                                  meta=item.meta)
            if self.settings.relation_aware:
                for old, relation in self.graph.linking_targets(labels[n]):
                    self.graph.link(old, item.id, relation)
            elif assoc[n]:
                # Ablation: plain similarity edge to the most similar older memory, no relation.
                self.graph.link(assoc[n][0][0].id, item.id, None, kind="similarity")
        await self.add(new, vectors)
        self.save()

    def _source(self, session: Session, item: MemoryItem) -> str:
        """The turns a memory comes from: its 'source conversation' in the relation prompt."""
        cited = set(item.turn_ids)
        text = "\n".join(f"{t.role}: {t.content}" for t in session.turns if t.id in cited)
        cap = self.settings.source_chars
        return text if len(text) <= cap else text[: max(0, cap - 1)] + "…"

    async def _relate(self, session: Session, item: MemoryItem,
                      hits: list[tuple[MemoryItem, float]]) -> dict[str, str]:
        """{associative memory id: relation} for the associative memories the model related."""
        if not hits:
            return {}
        alias = {f"M{i + 1}": m.id for i, (m, _) in enumerate(hits)}
        inputs = RelationInputs(
            new=MemoryRef(id="NEW", event=item.text, time=item.time, conversation=self._source(session, item)),
            candidates=[MemoryRef(id=a, event=self.graph.node(mid)["text"], time=self.graph.node(mid)["time"],
                                  conversation=self.graph.node(mid).get("source", ""))
                        for a, mid in alias.items()],
        )
        out = await RELATE_MEMORIES.run(self.layer, inputs, log=self.log, prompts=self.prompts)
        related: dict[str, str] = {}
        for label in out.relations:
            mid = alias.get(label.memory_id.strip().upper())
            if mid is not None and label.relation is not None:
                related.setdefault(mid, label.relation)  # the first label for a memory counts
        return related

    # --- Phase II: timeline retrieval and refinement ------------------------------------
    async def respond(self, query: str | list[Turn], now: datetime) -> Response:
        token = _DIALOGUE.set(None if isinstance(query, str) else list(query))
        try:
            return await super().respond(query, now)
        finally:
            _DIALOGUE.reset(token)

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        await self._ensure_store()
        if not self._items:
            return []
        text = dialogue_query(_DIALOGUE.get(), query, self.settings.query_turns)
        (qv,) = await self.embedder.embed([text])
        out = []
        for item, score in await self.search(qv, k or self.settings.k):
            timelines = self.raw_timelines(item.id, text)
            meta = {**item.meta, "timelines": [t.path for t in timelines],
                    "timelines_truncated": [t.truncated for t in timelines]}
            out.append(item.model_copy(update={"score": score, "scores": {"relevance": score}, "meta": meta}))
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
            out.setdefault(tuple(cut), Timeline(retrieved=[memory_id], path=cut, truncated=len(cut) < len(path)))
        return list(out.values())

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        dialogue = _DIALOGUE.get() or [Turn(id="q", role="user", content=question)]
        timelines: dict[tuple[str, ...], Timeline] = {}
        for item in items:
            paths = item.meta.get("timelines") or [[item.id]]
            cut = item.meta.get("timelines_truncated") or [False] * len(paths)
            for path, truncated in zip(paths, cut):
                t = timelines.setdefault(tuple(path), Timeline(retrieved=[], path=list(path), truncated=truncated))
                t.retrieved.append(item.id)  # a timeline retrieved through several memories is given once
        chosen = list(timelines.values())
        if self.settings.refine and chosen:
            chosen = list(await asyncio.gather(*(self._refine(t, dialogue, now) for t in chosen)))
        self.last_timelines = chosen
        if self.settings.timeline_format == "events":
            return self._events_text(chosen, question)
        return "\n\n".join(self._timeline_text(n + 1, t) for n, t in enumerate(chosen))

    async def _refine(self, t: Timeline, dialogue: list[Turn], now: datetime) -> Timeline:
        alias = {f"E{i + 1}": mid for i, mid in enumerate(t.path)}
        events = [TimelineEvent(id=a, event=self.graph.node(mid)["text"], time=self.graph.node(mid)["time"],
                                relation=self.graph.relation(t.path[i - 1], mid) if i else None,
                                retrieved=mid in t.retrieved)
                  for i, (a, mid) in enumerate(alias.items())]
        out = await REFINE_TIMELINE.run(self.layer, RefineInputs(dialogue=dialogue, timeline=events, now=now),
                                        log=self.log, prompts=self.prompts)
        kept: dict[str, str] = {}
        for e in out.events:
            mid = alias.get(e.id.strip().upper())
            if mid is not None and mid not in kept and e.text.strip():
                kept[mid] = e.text.strip()
        if not kept:  # the model dropped everything: keep the memories the timeline was retrieved for
            kept = {mid: self.graph.node(mid)["text"] for mid in t.retrieved}
        order = [mid for mid in t.path if mid in kept]  # timeline order, whatever order the reply used
        return t.model_copy(update={"kept": order, "texts": {m: kept[m] for m in order}, "note": out.note.strip()})

    def _events(self, t: Timeline) -> list[str]:
        return t.kept if t.kept is not None else t.path

    def _text(self, t: Timeline, mid: str) -> str:
        return t.texts.get(mid) or self.graph.node(mid)["text"]

    def _timeline_text(self, number: int, t: Timeline) -> str:
        ids = self._events(t)
        times = [self.graph.node(m)["time"] for m in ids]
        head = f"Timeline {number} ({times[0]:%Y-%m-%d} to {times[-1]:%Y-%m-%d}"
        head += ", shortened)" if t.truncated else ")"
        lines = [head + ":"]
        for i, mid in enumerate(ids):
            prev = ids[i - 1] if i else None
            rel = self.graph.relation(prev, mid) if prev and self.graph.g.has_edge(prev, mid) else None
            mark = f"({rel}) " if rel else ""
            lines.append(f"- [{self.graph.node(mid)['time']:%Y-%m-%d}] {mark}{self._text(t, mid)}")
        if t.note:
            lines.append(f"  Note: {t.note}")
        return "\n".join(lines)

    def _events_text(self, timelines: list[Timeline], question: str) -> str:
        """The "top-k" format: the timelines' events as separate memories in a seeded random order."""
        texts: dict[str, str] = {}
        for t in timelines:
            for mid in self._events(t):
                texts.setdefault(mid, self._text(t, mid))
        ids = sorted(texts, key=self.graph.key)
        digest = hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]
        random.Random(f"{self.settings.seed}|events|{digest}").shuffle(ids)
        return "\n".join(f"- [{self.graph.node(m)['time']:%Y-%m-%d}] {texts[m]}" for m in ids)

    # --- MemorySystem -------------------------------------------------------------------
    def item_count(self) -> int:
        return len(self.graph)

    def _reset(self) -> None:
        super()._reset()
        self.graph = TimelineGraph()
        self.last_timelines = []
        self._restored = True
        self.save()  # the file mirrors the memory: an emptied memory is an emptied file
