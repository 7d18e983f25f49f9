"""THEANINE's memory graph (Ong et al., NAACL 2025, arXiv 2406.10996): the pure graph logic.

G = (V, E): each node is a memory m = (event, time) with provenance; each edge points from an
older memory to a newer one and carries one relation from ``RELATIONS`` (or none, for the
plain similarity edges of the ``relation_aware=False`` ablation).

- ``linking_targets``: Phase I-2's rule. Given the new memory's associative memories that the
  model related to it, link it to the most recent related memory of each weakly connected
  component (so one edge per component, never to an older memory of a chain it already joins).
  The paper computes it on G_t, the graph before the current session: call it for every new
  memory of a session before linking any of them.
- ``count_timelines`` / ``enumerate_timelines`` / ``sample_timelines``: Phase II-1's raw
  timelines. Start at the oldest memory of the retrieved memory m's component (the paper; if it
  cannot reach m along edges, at the oldest memory that can) and follow directed edges through m
  to a memory with no outgoing edge. Paths are counted by dynamic programming (never listed to
  count them); up to a cap they are listed and sampled, beyond it they are drawn uniformly by
  count-weighted walks, so a query costs O(component) however many paths there are.

Components only ever merge (memories are never deleted), so a union-find keeps them (and each
one's oldest memory) current in near-constant time per link. Times are compared in UTC; ties by
insertion order.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import networkx as nx

from ..util.errors import InputError
from .types import as_utc

Relation = Literal["Changed", "Cause", "Reason", "HinderedBy", "React", "Want", "SameTopic"]
RELATIONS: tuple[str, ...] = ("Changed", "Cause", "Reason", "HinderedBy", "React", "Want", "SameTopic")
GRAPH_FORMAT = 1


class GraphFileError(InputError):
    """A saved memory graph that cannot be read back."""


class TimelineGraph:
    """A directed memory graph with the linking rule and timeline untangling of THEANINE."""

    def __init__(self) -> None:
        self.g = nx.DiGraph()
        self._parent: dict[str, str] = {}  # union-find over weakly connected components
        self._oldest: dict[str, str] = {}  # component root -> its oldest memory
        self._next = 0  # insertion order, the tie-break between memories of the same time
        self.meta: dict[str, Any] = {}  # saved with the graph (e.g. the ingested sessions)
        # Path counts per memory, valid for one version of the graph (every added memory or edge
        # is a new version): a reply samples and lists timelines through the same memories, and
        # replies between two sessions ask again.
        self._version = 0
        self._walks: dict[str, tuple[str, dict[str, int], dict[str, int]]] = {}
        self._walks_version = 0

    # --- nodes and edges ----------------------------------------------------------------
    def add_memory(
        self,
        mid: str,
        *,
        text: str,
        time: datetime,
        session_id: str = "",
        turn_ids: Iterable[str] = (),
        source: str = "",
        **extra: Any,
    ) -> None:
        if mid in self.g:
            raise ValueError(f"memory '{mid}' is already in the graph")
        self.g.add_node(
            mid,
            text=text,
            time=as_utc(time),
            session_id=session_id,
            turn_ids=list(turn_ids),
            source=source,
            order=self._next,
            **extra,
        )
        self._next += 1
        self._version += 1
        self._parent[mid] = mid
        self._oldest[mid] = mid

    def link(self, old: str, new: str, relation: str | None, *, kind: str = "relation", **extra: Any) -> None:
        """An edge old -> new. Edges must go forward in time (older or same time, earlier order).
        ``extra``: more edge attributes (e.g. the model's explanation of the relation)."""
        if self.key(old) >= self.key(new):
            raise ValueError(f"edge {old} -> {new} would point back in time")
        self.g.add_edge(old, new, relation=relation, kind=kind, **extra)
        self._version += 1
        self._union(old, new)

    def key(self, mid: str) -> tuple[datetime, int]:
        """Chronological sort key of a memory: (time, insertion order)."""
        d = self.g.nodes[mid]
        return d["time"], d["order"]

    def __len__(self) -> int:
        return self.g.number_of_nodes()

    def __contains__(self, mid: object) -> bool:
        return mid in self.g

    def node(self, mid: str) -> dict[str, Any]:
        return self.g.nodes[mid]

    def relation(self, old: str, new: str) -> str | None:
        return self.g.edges[old, new].get("relation")

    # --- components (union-find) --------------------------------------------------------
    def component_of(self, mid: str) -> str:
        root = mid
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[mid] != root:  # path compression
            self._parent[mid], mid = root, self._parent[mid]
        return root

    def _union(self, a: str, b: str) -> None:
        ra, rb = self.component_of(a), self.component_of(b)
        if ra != rb:
            self._parent[rb] = ra
            self._oldest[ra] = min(self._oldest[ra], self._oldest.pop(rb), key=self.key)

    def component_oldest(self, mid: str) -> str:
        """The oldest memory of the weakly connected component holding ``mid``."""
        return self._oldest[self.component_of(mid)]

    def components(self) -> list[set[str]]:
        return [set(c) for c in nx.weakly_connected_components(self.g)]

    # --- Phase I-2: the linking rule ----------------------------------------------------
    def linking_targets(self, related: dict[str, str]) -> list[tuple[str, str]]:
        """``related``: associative memory id -> the relation the model gave it (memories with
        no relation are left out). One (memory, relation) per weakly connected component: the
        most recent related memory in it. Ordered oldest first."""
        best: dict[str, str] = {}
        for mid in related:
            if mid not in self.g:
                continue
            comp = self.component_of(mid)
            if comp not in best or self.key(mid) > self.key(best[comp]):
                best[comp] = mid
        return [(m, related[m]) for m in sorted(best.values(), key=self.key)]

    # --- Phase II-1: raw timelines ------------------------------------------------------
    def _regions(self, through: str) -> tuple[str, list[str], list[str]]:
        """(start, prefix nodes in topological order, suffix nodes in reverse topological order).
        Prefix: the memories on some path start -> ``through``; suffix: ``through`` and the
        memories after it. Edges go forward in time, so chronological order is topological."""
        if through not in self.g:
            raise KeyError(through)
        anc = nx.ancestors(self.g, through)
        # The paper starts at the component's oldest memory. Edges point forward in time, so when
        # that memory leads here it is also the oldest ancestor; when it does not (a later memory
        # joined two chains below this one), no path from it passes here, and the timeline starts
        # at the oldest memory that does lead here.
        oldest = self.component_oldest(through)
        start = oldest if oldest in anc or oldest == through else min(anc | {through}, key=self.key)
        # The memories on a path start -> through: those of its ancestors that start reaches. A
        # path from start to an ancestor runs through ancestors only, so the search stays there.
        inside = anc | {through}
        prefix, todo = {start}, [start]
        while todo:
            for w in self.g.successors(todo.pop()):
                if w in inside and w not in prefix:
                    prefix.add(w)
                    todo.append(w)
        suffix = nx.descendants(self.g, through) | {through}
        return start, sorted(prefix, key=self.key), sorted(suffix, key=self.key, reverse=True)

    def _counts(self, through: str) -> tuple[str, dict[str, int], dict[str, int]]:
        """(start, paths start -> v for the prefix, paths v -> an end for the suffix), computed
        once per memory and graph version (callers only read them)."""
        if self._walks_version != self._version:
            self._walks, self._walks_version = {}, self._version
        if through not in self._walks:
            self._walks[through] = self._count_paths(through)
        return self._walks[through]

    def _count_paths(self, through: str) -> tuple[str, dict[str, int], dict[str, int]]:
        start, prefix, suffix = self._regions(through)
        inside = set(prefix)
        p: dict[str, int] = {}  # paths start -> v
        for v in prefix:
            p[v] = 1 if v == start else sum(p[u] for u in self.g.predecessors(v) if u in inside)
        s: dict[str, int] = {}  # paths v -> a memory with no outgoing edge
        for v in suffix:
            succ = list(self.g.successors(v))
            s[v] = 1 if not succ else sum(s[w] for w in succ)
        return start, p, s

    def count_timelines(self, through: str) -> int:
        """The number of raw timelines through a memory (exact; Python ints do not overflow)."""
        _, p, s = self._counts(through)
        return p[through] * s[through]

    def enumerate_timelines(self, through: str, limit: int) -> list[list[str]]:
        """Every raw timeline through ``through``, in a deterministic order, at most ``limit``
        of them (the first ``limit`` of that order)."""
        start, p, s = self._counts(through)
        prefixes = self._paths_back(through, start, p, limit)
        suffixes = self._paths_forward(through, limit)
        out = []
        for a in prefixes:
            for b in suffixes:
                out.append(a + b[1:])
                if len(out) >= limit:
                    return out
        return out

    def _paths_back(self, through: str, start: str, p: dict[str, int], limit: int) -> list[list[str]]:
        """Paths start -> ``through`` (oldest branches first), iteratively: a timeline can be
        thousands of memories long, deeper than Python's recursion limit."""
        out: list[list[str]] = []
        stack: list[tuple[str, Any]] = [(through, (through, None))]  # (node, cons list back to through)
        while stack and len(out) < limit:
            v, acc = stack.pop()
            if v == start:
                out.append(_unroll(acc))
                continue
            for u in sorted((u for u in self.g.predecessors(v) if u in p), key=self.key, reverse=True):
                stack.append((u, (u, acc)))
        return out

    def _paths_forward(self, through: str, limit: int) -> list[list[str]]:
        """Paths ``through`` -> a memory with no outgoing edge (oldest branches first)."""
        out: list[list[str]] = []
        stack: list[tuple[str, Any]] = [(through, (through, None))]
        while stack and len(out) < limit:
            v, acc = stack.pop()
            succ = sorted(self.g.successors(v), key=self.key, reverse=True)
            if not succ:
                out.append(_unroll(acc)[::-1])
                continue
            for w in succ:
                stack.append((w, (w, acc)))
        return out

    def sample_timelines(self, through: str, n: int, rng: random.Random, *, cap: int = 256) -> list[list[str]]:
        """Up to ``n`` distinct raw timelines through ``through``, drawn uniformly at random.
        With at most ``cap`` timelines they are listed and sampled without replacement; beyond
        that, each is one count-weighted walk back to the start and forward to an end (uniform
        over all timelines), repeated until ``n`` distinct ones or ``4n`` draws."""
        start, p, s = self._counts(through)
        total = p[through] * s[through]
        if total <= cap:
            every = self.enumerate_timelines(through, cap)
            return every if len(every) <= n else [every[i] for i in sorted(rng.sample(range(len(every)), n))]
        seen: dict[tuple[str, ...], None] = {}
        for _ in range(4 * n):
            seen.setdefault(tuple(self._walk(through, start, p, s, rng)), None)
            if len(seen) >= n:
                break
        return [list(t) for t in seen]

    def _walk(self, through: str, start: str, p: dict[str, int], s: dict[str, int], rng: random.Random) -> list[str]:
        back = [through]
        v = through
        while v != start:
            preds = sorted((u for u in self.g.predecessors(v) if u in p), key=self.key)
            v = _weighted(preds, [p[u] for u in preds], rng)
            back.append(v)
        path = back[::-1]
        v = through
        while True:
            succ = sorted(self.g.successors(v), key=self.key)
            if not succ:
                return path
            v = _weighted(succ, [s[w] for w in succ], rng)
            path.append(v)

    def is_path(self, path: list[str]) -> bool:
        return all(self.g.has_edge(a, b) for a, b in zip(path, path[1:]))

    # --- persistence --------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        data = nx.node_link_data(self.g, edges="edges")
        for node in data["nodes"]:
            node["time"] = node["time"].isoformat()
        data["graph"] = {"format": GRAPH_FORMAT, **self.meta}
        data["nodes"].sort(key=lambda n: n["order"])
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "graph") -> TimelineGraph:
        try:
            graph = data.get("graph", {})
            if graph.get("format") != GRAPH_FORMAT:
                raise GraphFileError(f"{where}: not a THEANINE memory graph (format {graph.get('format')!r})")
            out = cls()
            out.meta = {k: v for k, v in graph.items() if k != "format"}
            for node in sorted(data["nodes"], key=lambda n: n["order"]):
                attrs = {k: v for k, v in node.items() if k not in ("id", "order", "time", "text")}
                out.add_memory(node["id"], text=node["text"], time=datetime.fromisoformat(node["time"]), **attrs)
            for e in data["edges"]:
                extra = {k: v for k, v in e.items() if k not in ("source", "target", "relation", "kind")}
                out.link(e["source"], e["target"], e.get("relation"), kind=e.get("kind", "relation"), **extra)
        except GraphFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise GraphFileError(f"{where}: malformed memory graph ({type(e).__name__}: {e})") from None
        return out

    def save(self, path: str | Path) -> None:
        from ..runs.files import atomic_write

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(self.to_json(), ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> TimelineGraph:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise GraphFileError(f"{path}: cannot read the memory graph ({e})") from None
        return cls.from_json(data, str(path))


def _unroll(cons: Any) -> list[str]:
    out = []
    while cons is not None:
        out.append(cons[0])
        cons = cons[1]
    return out


def _weighted(items: list[str], weights: list[int], rng: random.Random) -> str:
    """Pick one item with probability weight / sum(weights), in exact integer arithmetic (the
    path counts can be far beyond float range)."""
    r = rng.randrange(sum(weights))
    for item, w in zip(items, weights):
        if r < w:
            return item
        r -= w
    return items[-1]


def window(path: list[str], through: str, max_events: int) -> list[str]:
    """At most ``max_events`` consecutive memories of a path, centred on ``through``."""
    if len(path) <= max_events:
        return path
    i = path.index(through)
    lo = max(0, i - (max_events - 1) // 2)
    hi = min(len(path), lo + max_events)
    lo = max(0, hi - max_events)
    return path[lo:hi]
