"""Zep's search recipes on graphiti-core: hybrid candidates (cosine + BM25 + breadth-first) and
one of graphiti's rerankers, with a score per returned fact.

graphiti 0.30.2 hands back one score per *fact* for RRF, MMR and the cross-encoder, but for
``node_distance`` one per source *entity* (facts grouped by their entity) and for
``episode_mentions`` the RRF scores of the order before it re-sorted by mentions. ``edge_scores``
turns both into one score per fact, so an item's score is the one that ranked it.
"""

from __future__ import annotations

from typing import Any, Literal

from graphiti_core import Graphiti
from graphiti_core.edges import EntityEdge
from graphiti_core.nodes import EntityNode
from graphiti_core.search.search_config import (
    EdgeReranker,
    EdgeSearchConfig,
    EdgeSearchMethod,
    NodeReranker,
    NodeSearchConfig,
    NodeSearchMethod,
    SearchConfig,
)

Reranker = Literal["rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder"]
RERANKERS: dict[str, tuple[EdgeReranker, NodeReranker]] = {
    "rrf": (EdgeReranker.rrf, NodeReranker.rrf),
    "mmr": (EdgeReranker.mmr, NodeReranker.mmr),
    "node_distance": (EdgeReranker.node_distance, NodeReranker.node_distance),
    "episode_mentions": (EdgeReranker.episode_mentions, NodeReranker.episode_mentions),
    "cross_encoder": (EdgeReranker.cross_encoder, NodeReranker.cross_encoder),
}
# What an item's score is, by reranker; the cross-encoder is our embedding stand-in (see
# cross_encoder.py), named so in every output.
SCORE_NAMES = {
    "rrf": "rrf",
    "mmr": "mmr",
    "node_distance": "node_distance (1 / hops to the center entity)",
    "episode_mentions": "episode_mentions (episodes citing the fact)",
    "cross_encoder": "cross_encoder (stand-in: embedding cosine)",
}


def search_config(s: Any, limit: int) -> SearchConfig:
    """graphiti's SearchConfig for the settings ``s`` (ZepSettings): facts and, when asked,
    entities, each from cosine + BM25 + breadth-first candidates and the chosen reranker."""
    edge_reranker = RERANKERS[s.reranker][0]
    node_reranker = RERANKERS[s.node_reranker or s.reranker][1]
    common = {"sim_min_score": s.sim_min_score, "mmr_lambda": s.mmr_lambda, "bfs_max_depth": s.bfs_max_depth}
    return SearchConfig(
        edge_config=EdgeSearchConfig(
            search_methods=[EdgeSearchMethod.cosine_similarity, EdgeSearchMethod.bm25, EdgeSearchMethod.bfs],
            reranker=edge_reranker,
            **common,
        ),
        node_config=NodeSearchConfig(
            search_methods=[NodeSearchMethod.cosine_similarity, NodeSearchMethod.bm25, NodeSearchMethod.bfs],
            reranker=node_reranker,
            **common,
        )
        if s.entities
        else None,
        limit=limit,
        reranker_min_score=s.mmr_min_score if s.reranker == "mmr" else 0.0,
    )


def edge_scores(reranker: str, edges: list[EntityEdge], scores: list[float]) -> list[float]:
    """One score per returned fact (see the module note)."""
    if reranker == "episode_mentions":
        return [float(len(e.episodes)) for e in edges]
    if reranker == "node_distance":
        by_node: dict[str, float] = {}
        for e in edges:  # facts come grouped by source entity, in the entities' reranked order
            if e.source_node_uuid not in by_node and len(by_node) < len(scores):
                by_node[e.source_node_uuid] = float(scores[len(by_node)])
        return [by_node.get(e.source_node_uuid, 0.0) for e in edges]
    return [float(x) for x in scores[: len(edges)]]


async def center_node(g: Graphiti, group_id: str, query: str, name: str | None, fallback: SearchConfig) -> str | None:
    """The entity node_distance measures from: the entity called ``name`` (case-insensitive; e.g.
    the user), else the source entity of the top fact by RRF, as graphiti's own examples do."""
    if name:
        nodes = await EntityNode.get_by_group_ids(g.driver, [group_id])
        hit = next((n for n in nodes if n.name.lower() == name.lower()), None)
        if hit is not None:
            return hit.uuid
    assert fallback.edge_config is not None  # search_config always searches facts
    cfg = fallback.model_copy(
        update={
            "node_config": None,
            "limit": 1,
            "reranker_min_score": 0.0,
            "edge_config": fallback.edge_config.model_copy(update={"reranker": EdgeReranker.rrf}),
        }
    )
    res = await g.search_(query, config=cfg, group_ids=[group_id])
    return res.edges[0].source_node_uuid if res.edges else None
