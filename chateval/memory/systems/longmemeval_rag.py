"""longmemeval_rag: the memory design space of LongMemEval (Wu et al. 2025, §5) as settings.

Indexing: each session becomes *values* (the session, its rounds = a user turn with the
assistant's reply, or extracted facts); each value gets *keys* (the value's own text, plus
optional expansions: facts, keyphrases or a session summary, each a typed step). Retrieval
ranks keys by BM25, by dense cosine (a value scores the best of its keys), or their RRF fusion,
maps them back to values, optionally narrows or boosts by the question's time range
(time-aware query expansion) and re-ranks. Reading: the answer step sees the values as plain
lines, as JSON, or as chain-of-note notes.

Dense search is exact (numpy over the question's few thousand keys): no vector index is
needed at this size, and the keys are embedded in one batch once ingest is done, so every
unique text costs one encoding (and none on a warm embedding cache).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..base import MemorySystem, format_items, memory_system, without_blank_turns
from ..extract import EXTRACT_FACTS, SUMMARIZE_SESSION, cited_turns, is_user, session_inputs
from ..fusion import RRF_K, rrf, rrf_scores
from ..lexical import BM25Index
from ..rag_steps import EXTRACT_KEYPHRASES, RERANK, TAKE_NOTES, Candidate, NotesInputs, RerankInputs, offline_rerank
from ..time_range import TIME_RANGE, TimeRange, TimeRangeInputs
from ..types import MemoryItem, Session, Turn


class RagSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    granularity: Literal["session", "round", "fact"] = "round"  # the unit stored and returned (the value)
    # What expands each value's key: facts by default, the paper's fact-augmented key expansion
    # (offline, the facts are extractive; BENCHMARKS.md has the evidence behind the defaults).
    # At granularity=fact the facts are the values themselves, so the default adds nothing there.
    key: Literal["none", "facts", "keyphrases", "summary"] = "facts"
    # The value's own key: its user side (what users ask about; the benchmark's baselines index
    # the same) or all of it, assistant replies included.
    key_roles: Literal["user", "all"] = "user"
    retriever: Literal["bm25", "dense", "hybrid"] = "dense"  # the paper's (a dense retriever); hybrid = RRF, ours
    # Also retrieve whole sessions (same retriever, the session's user side + its expansions as
    # keys) and fuse each value's rank with its session's rank (RRF): local and session evidence.
    session_fusion: bool = False
    # Re-rank the top rerank_depth: coverage = by the distinct question words each contains (no
    # model call); llm = the typed step rag_rerank (whose offline version is that same rule).
    rerank: Literal["none", "coverage", "llm"] = "none"
    rerank_depth: int = Field(20, ge=2, le=200)
    # Use the question's time range, if it names one: filter = the paper's pruning as its
    # official code does it (the values in range first, the rest moved behind them, not dropped);
    # boost = ours (the in-range values fused in as one more ranking).
    time_aware: Literal["boost", "filter", "none"] = "filter"
    # The range is widened by this much on each side (the official code widens it by 2 days).
    time_slack_days: int = Field(2, ge=0, le=365)
    reading: Literal["plain", "json", "chain_of_note"] = "json"
    # Values recalled for an answer: the official generation script's default (run_generation.sh
    # TOPK, 50), which it reads as rounds when the retrieval ran over turns.
    k: int = Field(50, ge=1, le=1000)

    @field_validator("key")
    @classmethod
    def _key_fits(cls, v: str, info: ValidationInfo) -> str:
        if v == "facts" and info.data.get("granularity") == "fact":
            raise ValueError("facts are already the values at granularity=fact; use key=none, keyphrases or summary")
        return v


@dataclass
class Value:
    id: str
    session_id: str
    time: datetime
    text: str  # what is returned and read
    turn_ids: list[str]
    keys: list[str]  # the value's own key first, then its expansions
    meta: dict = field(default_factory=dict)


def _line(t: Turn) -> str:
    return f"{t.role}: {t.content}"


def rounds(session: Session) -> list[list[Turn]]:
    """A round opens at each user turn and takes the replies that follow; replies before the
    first user turn form a round of their own."""
    out: list[list[Turn]] = []
    for t in session.turns:
        if is_user(t) or not out:
            out.append([t])
        else:
            out[-1].append(t)
    return out


def turn_values(session: Session, s: RagSettings) -> list[Value]:
    """The values of a session at granularity session or round (no model call), each with its
    own key only."""
    groups = [session.turns] if s.granularity == "session" else rounds(session)
    values = []
    for n, turns in enumerate(groups):
        user = [t.content for t in turns if is_user(t)]
        # The user side keeps the turns' own text (joined by newlines as the benchmark's
        # baselines do), so a warm embedding cache already holds it.
        own = "\n".join(user) if s.key_roles == "user" and user else "\n".join(map(_line, turns))
        vid = session.id if s.granularity == "session" else f"{session.id}#r{n + 1}"
        values.append(Value(vid, session.id, session.date, "\n".join(map(_line, turns)), [t.id for t in turns], [own]))
    return values


def session_key(session: Session, s: RagSettings) -> str:
    """A whole session's own key for session_fusion."""
    return "\n".join(t.content for t in session.turns if is_user(t) or s.key_roles == "all")


class KeyIndex:
    """Documents (values or sessions) with their keys: BM25 ranks each document by its keys
    joined; dense ranks it by its best-matching key."""

    def __init__(self) -> None:
        self.keys: dict[str, list[str]] = {}
        self.bm25 = BM25Index()

    def add(self, doc: str, keys: list[str]) -> None:
        self.keys[doc] = keys
        self.bm25.add([doc], ["\n".join(keys)])

    def lexical(self, query: str) -> tuple[list[str], dict[str, float]]:
        hits = self.bm25.search(query, len(self.keys))
        seen = {i for i, _ in hits}
        return [i for i, _ in hits] + [i for i in self.keys if i not in seen], dict(hits)  # unmatched last

    def dense(self, q: np.ndarray, vectors: dict[str, np.ndarray]) -> tuple[list[str], dict[str, float]]:
        ids = list(self.keys)
        owners = np.asarray([n for n, d in enumerate(ids) for _ in self.keys[d]])
        keys = np.stack([vectors[k] for d in ids for k in self.keys[d]])
        best = np.full(len(ids), -np.inf, dtype=np.float32)
        np.maximum.at(best, owners, keys @ q)  # a document scores its best-matching key
        order = np.argsort(-best, kind="stable")
        return [ids[j] for j in order], {ids[j]: float(best[j]) for j in order}


@memory_system("longmemeval_rag")
class LongMemEvalRAG(MemorySystem[RagSettings]):
    description = (
        "LongMemEval's memory design: session/round/fact values, key expansion (facts, keyphrases, "
        "summary), BM25/dense/RRF retrieval, time-aware query expansion, JSON or chain-of-note reading"
    )
    paper = "Wu et al. 2025, LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory (ICLR)"
    Settings = RagSettings

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._values: dict[str, Value] = {}
        self._index = KeyIndex()  # the values
        self._session_index = KeyIndex()  # whole sessions, for session_fusion
        self._vectors: dict[str, np.ndarray] = {}  # key text -> unit vector

    @classmethod
    def texts_to_embed(cls, settings: BaseModel, sessions: list[Session], question: str) -> list[str]:
        """The values' own keys and the question (the sessions' own keys too with
        session_fusion); key expansions and facts need model calls, so they are left to ingest."""
        s = cls.parse_settings(settings)
        assert isinstance(s, RagSettings)
        if s.retriever == "bm25":
            return []
        kept = [without_blank_turns(x) for x in sessions]
        texts = [] if s.granularity == "fact" else [v.keys[0] for x in kept for v in turn_values(x, s)]
        if s.session_fusion and s.granularity != "session":
            texts += [session_key(x, s) for x in kept if x.turns]
        return [t for t in texts if t.strip()] + [question]

    # --- indexing ----------------------------------------------------------------------
    async def _ingest(self, session: Session) -> None:
        values = await self._make_values(session)
        expansions = await self._expansions(session)
        for v in values:
            for text, turns in expansions:
                if not turns or set(turns) & set(v.turn_ids):
                    v.keys.append(text)
            v.keys = list(dict.fromkeys(k for k in v.keys if k.strip()))
        self._values.update({v.id: v for v in values})
        for v in values:
            self._index.add(v.id, v.keys)
        if self.settings.session_fusion and self.settings.granularity != "session":
            own = session_key(session, self.settings)
            self._session_index.add(
                session.id, list(dict.fromkeys(k for k in [own] + [e for e, _ in expansions] if k.strip()))
            )

    async def ingest_all(self, sessions: list[Session]) -> None:
        await super().ingest_all(sessions)
        await self._embed_keys()  # one batch for the whole history (part of ingest time)

    async def _make_values(self, session: Session) -> list[Value]:
        s = self.settings
        if s.granularity == "fact":
            out = await EXTRACT_FACTS.run(self.layer, session_inputs(session), log=self.log, prompts=self.prompts)
            values = []
            for n, f in enumerate(f for f in out.facts if f.text.strip()):
                turns, inferred = cited_turns(session, f.turn_ids)
                values.append(
                    Value(
                        f"{session.id}#f{n + 1}",
                        session.id,
                        session.date,
                        f.text.strip(),
                        turns,
                        [f.text.strip()],
                        {"turn_ids_inferred": True} if inferred else {},
                    )
                )
            return values
        return turn_values(session, s)

    async def _expansions(self, session: Session) -> list[tuple[str, list[str]]]:
        """Key expansions of this session with the turns each comes from ([] = the whole session)."""
        key, inp = self.settings.key, session_inputs(session)
        if key == "facts" and self.settings.granularity == "fact":
            return []  # the default key at fact granularity: the facts are already the values
        if key == "facts":
            out = await EXTRACT_FACTS.run(self.layer, inp, log=self.log, prompts=self.prompts)
            return [(f.text.strip(), cited_turns(session, f.turn_ids)[0]) for f in out.facts]
        if key == "keyphrases":
            kp = await EXTRACT_KEYPHRASES.run(self.layer, inp, log=self.log, prompts=self.prompts)
            return [(p.text.strip(), cited_turns(session, p.turn_ids)[0]) for p in kp.keyphrases]
        if key == "summary":
            summ = await SUMMARIZE_SESSION.run(self.layer, inp, log=self.log, prompts=self.prompts)
            return [(summ.summary.strip(), [])]
        return []

    async def _embed_keys(self) -> None:
        if self.settings.retriever == "bm25":
            return
        texts = (k for index in (self._index, self._session_index) for ks in index.keys.values() for k in ks)
        missing = list(dict.fromkeys(k for k in texts if k not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, await self.embedder.embed(missing)))

    # --- retrieval ---------------------------------------------------------------------
    async def _retrieve(self, index: KeyIndex, query: str) -> tuple[list[str], dict[str, dict[str, float]]]:
        """The documents of ``index`` best first with their component scores."""
        s = self.settings
        scores: dict[str, dict[str, float]] = {d: {} for d in index.keys}
        runs: list[list[str]] = []
        if s.retriever in ("bm25", "hybrid"):
            ranking, bm25 = index.lexical(query)
            runs.append(ranking)
            for d, x in bm25.items():
                scores[d]["bm25"] = x
        if s.retriever in ("dense", "hybrid"):
            await self._embed_keys()
            (q,) = await self.embedder.embed([query])
            ranking, dense = index.dense(q, self._vectors)
            runs.append(ranking)
            for d, x in dense.items():
                scores[d]["dense"] = x
        return (rrf(runs) if len(runs) > 1 else runs[0]), scores

    async def rank(self, query: str, now: datetime) -> tuple[list[str], dict[str, dict[str, float]], TimeRange | None]:
        """Every value, best first, with the scores behind the order and the time range used."""
        s = self.settings
        ranking, scores = await self._retrieve(self._index, query)
        if self._session_index.keys:
            sessions, _ = await self._retrieve(self._session_index, query)
            place = {sid: n for n, sid in enumerate(sessions)}
            for v in ranking:
                scores[v]["session_rank"] = place[self._values[v].session_id] + 1
            # RRF of the value's rank and its session's rank (each ranking counts from 1).
            fused = rrf_scores([ranking])
            fused = {v: x + 1.0 / (RRF_K + scores[v]["session_rank"]) for v, x in fused.items()}
            ranking = sorted(ranking, key=lambda v: -fused[v])  # stable: ties keep the value order
        window = None
        if s.time_aware != "none":
            window = await TIME_RANGE.run(
                self.layer, TimeRangeInputs(question=query, now=now), log=self.log, prompts=self.prompts
            )
            inside = [v for v in ranking if window.contains(self._values[v].time.date(), s.time_slack_days)]
            if window.empty or not inside:
                window = None  # no range, or nothing in it: the plain ranking stands
            elif s.time_aware == "filter":  # in range first; the rest keep their order behind
                chosen = set(inside)
                ranking = inside + [v for v in ranking if v not in chosen]
            else:  # boost: the in-range values as one more ranking to fuse with
                fused = rrf_scores([ranking, inside])
                ranking = sorted(ranking, key=lambda v: -fused[v])  # stable: ties keep their order
        if s.rerank != "none":
            ranking = await self._rerank(query, now, ranking)
        return ranking, scores, window

    async def _rerank(self, query: str, now: datetime, ranking: list[str]) -> list[str]:
        top = ranking[: self.settings.rerank_depth]
        cands = [Candidate(id=n + 1, date=self._values[v].time, text=self._values[v].text) for n, v in enumerate(top)]
        inputs = RerankInputs(question=query, now=now, candidates=cands)
        out = (
            offline_rerank(inputs)
            if self.settings.rerank == "coverage"
            else await RERANK.run(self.layer, inputs, log=self.log, prompts=self.prompts)
        )
        picked = [top[i - 1] for i in dict.fromkeys(out.order) if 1 <= i <= len(top)]
        chosen = set(picked)
        return picked + [v for v in top if v not in chosen] + ranking[len(top) :]  # nothing is lost

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        if not self._values:
            return []
        ranking, scores, window = await self.rank(query, now)
        meta: dict[str, Any] = {"granularity": self.settings.granularity}
        if window is not None:
            meta["time_range"] = window.model_dump(mode="json")
        out = []
        for pos, vid in enumerate(ranking[: k or self.settings.k]):
            v = self._values[vid]
            out.append(
                MemoryItem(
                    id=v.id,
                    text=v.text,
                    time=v.time,
                    session_id=v.session_id,
                    turn_ids=v.turn_ids,
                    score=1.0 / (pos + 1),
                    scores=scores[vid],
                    meta=meta | v.meta,
                )
            )
        return out

    # --- reading -----------------------------------------------------------------------
    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        reading = self.settings.reading
        ordered = sorted(items, key=lambda i: i.time)
        if reading == "plain":
            return format_items(items)
        if reading == "json":
            number = self.session_numbers()  # a session by its position, never its id
            return "\n".join(
                json.dumps(
                    {"date": f"{i.time:%Y-%m-%d}", "session": number.get(i.session_id), "content": i.text},
                    ensure_ascii=False,
                )
                for i in ordered
            )
        cands = [Candidate(id=n + 1, date=i.time, text=i.text) for n, i in enumerate(ordered)]
        out = await TAKE_NOTES.run(
            self.layer, NotesInputs(question=question, now=now, items=cands), log=self.log, prompts=self.prompts
        )
        notes = {n.id: n.note.strip() for n in out.notes}
        lines = [
            json.dumps({"date": f"{c.date:%Y-%m-%d}", "note": notes[c.id]}, ensure_ascii=False)
            for c in cands
            if notes.get(c.id)
        ]
        return "\n".join(lines) or "(no retrieved item bears on the question)"

    def item_count(self) -> int:
        return len(self._values)

    def _reset(self) -> None:
        self._values.clear()
        self._index, self._session_index = KeyIndex(), KeyIndex()
        self._vectors.clear()
