"""zep: Zep's temporal knowledge graph (Rasmussen et al. 2025) on graphiti-core, Zep's engine.

Each message (the paper's choice; ``episodes="session"``: each session) is a message episode
(reference time = the session date) in one graph group per conversation; graphiti extracts
entities and facts, dedupes them, dates them and invalidates facts that new ones contradict, and,
when asked, builds communities. Extraction sees the ``context_episodes`` (4, the paper's) episodes
before. Recall: top-20 facts and top-20 entities by hybrid search (cosine + BM25 + breadth-first)
reranked with RRF by default; the paper reranked with BGE-m3, which is ``reranker=cross_encoder``
with ``cross_encoder_model`` a local folder of it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import deque
from datetime import datetime
from typing import Any, Literal
from uuid import uuid4

from graphiti_core import Graphiti
from graphiti_core.driver.driver import GraphDriver
from graphiti_core.driver.kuzu_driver import KuzuDriver
from graphiti_core.edges import EntityEdge
from graphiti_core.errors import GroupsEdgesNotFoundError
from graphiti_core.nodes import CommunityNode, EntityNode, EpisodeType, EpisodicNode
from graphiti_core.search.search_config import SearchConfig, SearchResults
from graphiti_core.utils.maintenance.community_operations import update_community
from graphiti_core.utils.maintenance.graph_data_operations import clear_data
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from ...models import ModelLayer
from ...util import secrets
from ...util.errors import ConfigError
from ..base import MemorySystem, memory_system
from ..types import MemoryItem, Session, Turn, as_utc
from . import offline as _offline  # noqa: F401  (registers the offline answers to graphiti's steps)
from .context import format_context
from .cross_encoder import EmbeddingCrossEncoder, ModelCrossEncoder
from .embedder import LayerEmbedder
from .kuzu_fixes import close_kuzu, ensure_fulltext_indexes, fulltext_safe, open_kuzu
from .llm import LayerLLMClient
from .search import SCORE_NAMES, Reranker, center_node, edge_scores, search_config

GRAPHITI_MAX_TOKENS = 16384  # graphiti's own request for fact extraction

SOURCE_PREFIX = "chateval "  # episodes we wrote carry their provenance in source_description


class ZepSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Graph database: embedded Kuzu (in memory, or a file that persists) or a Neo4j server.
    db_path: str | None = None
    neo4j_uri: str | None = None
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr | None = None  # default: the NEO4J_PASSWORD environment variable
    # One graph group per conversation/user; default: a fresh id per system instance.
    group_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]+$", max_length=128)
    facts: int = Field(20, ge=1, le=200)  # facts (edges) recalled, as in the paper
    entities: int = Field(20, ge=0, le=200)  # entities (nodes) in the context
    # graphiti's rerankers; cross_encoder: cross_encoder_model if set, else scored by our embedder
    reranker: Reranker = "rrf"
    cross_encoder_model: str | None = None  # a local sentence-transformers CrossEncoder folder (else the stand-in)
    # The entities' reranker (None: `reranker`). Zep's LongMemEval evaluation: facts by cross_encoder, entities by rrf.
    node_reranker: Reranker | None = None
    max_query_chars: int | None = Field(None, ge=1)  # the search query cut to this (Zep's LongMemEval evaluation: 255)
    center_entity: str | None = None  # node_distance: the entity to measure from (None: the top fact's source)
    sim_min_score: float = Field(0.6, ge=-1.0, le=1.0)  # graphiti's cosine floor for candidates
    mmr_lambda: float = Field(0.5, ge=0.0, le=1.0)
    # graphiti's reranker floor is 0, which drops every negative MMR score (often all of them).
    mmr_min_score: float = -2.0
    bfs_max_depth: int = Field(3, ge=1, le=10)
    episodes: Literal["session", "message"] = "message"  # one episode per message (the paper), or per session
    # Previous episodes shown to extraction as context: the paper's 4 messages; graphiti's own
    # default is RELEVANT_SCHEMA_LIMIT (10).
    context_episodes: int = Field(4, ge=1, le=100)
    communities: bool = False  # build graphiti's communities on ingest (then update them per episode)
    # Not in the paper: among the recalled facts, those valid at question time come first.
    current_first: bool = False
    # Fact dates in the context: auto shows the time of day when the timestamp has one (not 00:00).
    fact_times: Literal["auto", "date", "datetime"] = "auto"
    max_coroutines: int | None = Field(None, ge=1)  # graphiti's own parallelism (None: its default)

    @field_validator("episodes", mode="before")
    @classmethod
    def _turn_is_message(cls, v: Any) -> Any:
        return "message" if v == "turn" else v  # the earlier name of the same choice

    @model_validator(mode="after")
    def _one_database(self) -> ZepSettings:
        if self.db_path and self.neo4j_uri:
            raise ValueError("give db_path (embedded Kuzu) or neo4j_uri (a Neo4j server), not both")
        return self


class Provenance(BaseModel):
    session_id: str
    turn_ids: list[str]
    time: datetime


@memory_system("zep")
class Zep(MemorySystem[ZepSettings]):
    description = (
        "Zep temporal knowledge graph on graphiti-core (Kuzu embedded or Neo4j); facts with validity ranges + entities"
    )
    paper = "Rasmussen et al. 2025, Zep: A Temporal Knowledge Graph Architecture for Agent Memory"
    Settings = ZepSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group_id: str = self.settings.group_id or f"chateval-{uuid4().hex[:12]}"
        self._graphiti: Graphiti | None = None  # connected on first use, inside the event loop
        self._clear_pending = False
        self._provenance: dict[str, Provenance] = {}  # graphiti episode uuid -> our session
        self._edges: set[str] = set()
        self._last_search: tuple[str, list[EntityNode]] | None = None
        self._communities_built = False
        # Message episodes share their session's time, so graphiti's own window of previous
        # episodes (the latest RELEVANT_SCHEMA_LIMIT by time) would pick among equal times at
        # random: we hand it the ``context_episodes`` episodes just before, in ingest order.
        self._recent: deque[str] = deque(maxlen=self.settings.context_episodes)
        self._closing: asyncio.Task | None = None

    # --- the graph ---------------------------------------------------------------------------
    def _graphiti_layer(self) -> ModelLayer:
        # graphiti asks for long JSON outputs (fact extraction up to 16k tokens); the layer's
        # default max_tokens (1024) would cut them off, so its steps get their own budget.
        p = self.layer.params
        if p.max_tokens is not None and p.max_tokens < GRAPHITI_MAX_TOKENS:
            return self.layer.derive(params=p.model_copy(update={"max_tokens": GRAPHITI_MAX_TOKENS}))
        return self.layer

    async def _connect(self) -> GraphDriver:
        s = self.settings
        if not s.neo4j_uri:
            driver = open_kuzu(s.db_path)
            await ensure_fulltext_indexes(driver)
            return driver
        from graphiti_core.driver.neo4j_driver import Neo4jDriver

        secret = s.neo4j_password.get_secret_value() if s.neo4j_password else os.environ.get("NEO4J_PASSWORD")
        secrets.register(secret)  # a driver error may quote it
        secrets.register_url(s.neo4j_uri)
        # Built off the event loop: in a loop, Neo4jDriver schedules its own index build, which
        # retries for ~30 s against a server that is down and cannot be cancelled cleanly.
        # The connection is checked first and the indexes built here instead.
        neo4j = await asyncio.to_thread(Neo4jDriver, s.neo4j_uri, s.neo4j_user, secret)
        try:
            await neo4j.client.verify_connectivity()
            await neo4j.build_indices_and_constraints()
        except Exception as e:  # one line, never the password
            await neo4j.close()
            raise ConfigError(f"cannot reach Neo4j at {s.neo4j_uri}: {type(e).__name__}") from None
        return neo4j

    async def graph(self) -> Graphiti:
        """The graphiti instance, connected (and resumed from a persisted graph) on first use."""
        if self._graphiti is None:
            cross_encoder = self._cross_encoder()  # a bad model folder fails before a database opens
            driver = await self._connect()
            self._graphiti = Graphiti(
                graph_driver=driver,
                llm_client=LayerLLMClient(self._graphiti_layer(), self.log),
                embedder=LayerEmbedder(self.embedder),
                cross_encoder=cross_encoder,
                max_coroutines=self.settings.max_coroutines,
            )
            if not self._clear_pending:
                await self._resume()
        if self._clear_pending:  # reset() is sync; the graph is cleared at the next operation
            await clear_data(self._graphiti.driver, [self.group_id])
            self._clear_pending = False
        return self._graphiti

    def _cross_encoder(self) -> EmbeddingCrossEncoder | ModelCrossEncoder:
        path = self.settings.cross_encoder_model
        return ModelCrossEncoder(path) if path else EmbeddingCrossEncoder(self.embedder)

    def _score_name(self) -> str:
        if self.settings.reranker == "cross_encoder" and self.settings.cross_encoder_model:
            return f"cross_encoder (model: {self.settings.cross_encoder_model})"
        return SCORE_NAMES[self.settings.reranker]

    async def _resume(self) -> None:
        """A persisted graph group continues where it was: its sessions count as ingested."""
        assert self._graphiti is not None
        driver = self._graphiti.driver
        episodes = await EpisodicNode.get_by_group_ids(driver, [self.group_id])
        sessions: dict[str, Session] = {}
        for ep in sorted(episodes, key=lambda e: (e.valid_at, e.created_at)):
            prov = self._remember(ep)
            if prov is None:
                continue  # not written by us
            session = sessions.setdefault(prov.session_id, Session(id=prov.session_id, date=prov.time, turns=[]))
            lines = ep.content.split("\n")
            for turn_id, line in zip(prov.turn_ids, lines):
                role, _, content = line.partition(": ")
                session.turns.append(Turn(id=turn_id, role=role, content=content))
        for session in sorted(sessions.values(), key=lambda s: s.date):
            self._sessions[session.id] = session
            self._last_date = session.date
        try:
            self._edges.update(e.uuid for e in await EntityEdge.get_by_group_ids(driver, [self.group_id]))
        except GroupsEdgesNotFoundError:  # graphiti's answer for a group with no facts yet
            pass
        self._communities_built = bool(await self.community_nodes())

    async def community_nodes(self) -> list[CommunityNode]:
        assert self._graphiti is not None
        return await CommunityNode.get_by_group_ids(self._graphiti.driver, [self.group_id])

    def _remember(self, ep: EpisodicNode) -> Provenance | None:
        if not ep.source_description.startswith(SOURCE_PREFIX):
            return None
        try:
            meta = json.loads(ep.source_description[len(SOURCE_PREFIX) :])
            prov = Provenance(session_id=meta["session"], turn_ids=meta["turns"], time=as_utc(ep.valid_at))
        except (ValueError, KeyError, TypeError):
            return None
        self._provenance[ep.uuid] = prov
        return prov

    # --- ingest --------------------------------------------------------------------------------
    async def ingest(self, session: Session) -> None:
        await self.graph()  # a resumed graph knows its sessions before the duplicate check
        await super().ingest(session)

    async def ingest_all(self, sessions: list[Session]) -> None:
        await self.graph()
        await super().ingest_all(sessions)

    def _episodes(self, session: Session) -> list[tuple[str, list[Turn]]]:
        if self.settings.episodes == "message":
            return [(f"{session.id}/{t.id}", [t]) for t in session.turns]
        return [(session.id, session.turns)]

    async def _ingest(self, session: Session) -> None:
        g = await self.graph()
        self._last_search = None  # its entities may change now
        # Communities: built once there is a graph, then updated by each new episode (graphiti's
        # incremental label propagation); the paper's periodic full refresh is build_communities().
        update = self.settings.communities and self._communities_built
        for name, turns in self._episodes(session):
            # One line per turn ("role: text", graphiti's message format), so a resumed graph
            # gives each line back to its turn id.
            body = "\n".join(f"{t.role}: {' '.join(t.content.split())}" for t in turns)
            meta = json.dumps({"session": session.id, "turns": [t.id for t in turns]})
            result = await g.add_episode(
                name=name,
                episode_body=body,
                source_description=SOURCE_PREFIX + meta,
                reference_time=session.date,
                source=EpisodeType.message,
                group_id=self.group_id,
                # graphiti's own window (None) only for the first episode of a resumed graph
                previous_episode_uuids=list(self._recent) if self._recent else None,
            )
            self._recent.append(result.episode.uuid)
            if update:
                # graphiti 0.30.2's add_episode(update_communities=True) unpacks its per-entity
                # results as two lists (fails unless exactly two entities): same update, here.
                for node in result.nodes:
                    await update_community(g.driver, g.llm_client, g.embedder, node)
            self._provenance[result.episode.uuid] = Provenance(
                session_id=session.id, turn_ids=[t.id for t in turns], time=session.date
            )
            self._edges.update(e.uuid for e in result.edges)  # new, duplicate and invalidated
        if self.settings.communities and not self._communities_built:
            await g.build_communities(group_ids=[self.group_id])
            self._communities_built = True

    # --- recall --------------------------------------------------------------------------------
    def search_config(self, limit: int) -> SearchConfig:
        return search_config(self.settings, limit)

    async def recall(self, query: str, now: datetime, k: int | None = None) -> list[MemoryItem]:
        await self.graph()
        return await super().recall(query, now, k)

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        g = await self.graph()
        n = k or self.settings.facts
        res = await self._search(g, query, self.search_config(max(n, self.settings.entities)))
        self._last_search = (query, res.nodes[: self.settings.entities])
        edges = res.edges[:n]
        missing = {u for e in edges for u in e.episodes if u not in self._provenance}
        if missing:  # written by another instance of this group
            for ep in await EpisodicNode.get_by_uuids(g.driver, sorted(missing)):
                self._remember(ep)
        items = [
            self._item(e, score, now)
            for e, score in zip(edges, edge_scores(self.settings.reranker, edges, res.edge_reranker_scores))
        ]
        if self.settings.current_first:
            items.sort(key=lambda i: not i.meta["current"])  # stable: graphiti's order otherwise
        return items

    async def _search(self, g: Graphiti, query: str, config: SearchConfig) -> SearchResults:
        q = self._query(g, query[: self.settings.max_query_chars])
        center = None
        if "node_distance" in (self.settings.reranker, self.settings.node_reranker):
            center = await center_node(g, self.group_id, q, self.settings.center_entity, config)
            if center is None:
                return SearchResults()  # no fact in the graph: nothing to measure from
        return await g.search_(q, config=config, group_ids=[self.group_id], center_node_uuid=center)

    @staticmethod
    def _query(g: Graphiti, query: str) -> str:
        return fulltext_safe(query) if isinstance(g.driver, KuzuDriver) else query

    def _item(self, edge: EntityEdge, score: float, now: datetime) -> MemoryItem:
        provs = [p for u in edge.episodes if (p := self._provenance.get(u)) is not None]
        first = provs[0] if provs else None
        valid = as_utc(edge.valid_at) if edge.valid_at else None
        invalid = as_utc(edge.invalid_at) if edge.invalid_at else None
        # Valid time (the world), not expired_at: that is when *we* learnt it, i.e. ingest wall-clock.
        current = (valid is None or valid <= now) and (invalid is None or invalid > now)
        return MemoryItem(
            id=edge.uuid,
            text=edge.fact,
            time=valid or (first.time if first else as_utc(edge.created_at)),
            session_id=first.session_id if first else "",
            turn_ids=list(dict.fromkeys(t for p in provs for t in p.turn_ids)),
            score=float(score),
            scores={self._score_name(): float(score)},
            meta={
                "relation": edge.name,
                "valid_at": valid.isoformat() if valid else None,
                "invalid_at": invalid.isoformat() if invalid else None,
                "current": current,
                "session_ids": list(dict.fromkeys(p.session_id for p in provs)),
                # Sessions give whole-session episodes: every turn is cited, as in `retrieval`.
                "turn_ids_inferred": self.settings.episodes == "session",
            },
        )

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        if self._last_search is not None and self._last_search[0] == question:
            nodes = self._last_search[1]
        elif self._sessions and self.settings.entities:
            g = await self.graph()
            config = self.search_config(self.settings.entities).model_copy(update={"edge_config": None})
            nodes = (await self._search(g, question, config)).nodes
        else:
            nodes = []
        return format_context(items, [(n.name, n.summary) for n in nodes], times=self.settings.fact_times)

    def item_count(self) -> int:
        return len(self._edges)

    def _reset(self) -> None:
        self._provenance.clear()
        self._edges.clear()
        self._recent.clear()
        self._last_search = None
        self._clear_pending = True

    # --- closing ---------------------------------------------------------------------------------
    async def aclose(self) -> None:
        g, self._graphiti = self._graphiti, None
        if g is not None:
            if isinstance(g.driver, KuzuDriver):
                close_kuzu(g.driver)
            else:
                await g.driver.close()

    def close(self) -> None:
        g, self._graphiti = self._graphiti, None
        if g is None:
            return
        if isinstance(g.driver, KuzuDriver):
            close_kuzu(g.driver)  # synchronous
            return
        try:  # a server connection closes in the running loop (benchmarks close inside one)
            self._closing = asyncio.get_running_loop().create_task(g.driver.close())
        except RuntimeError:
            asyncio.run(g.driver.close())
