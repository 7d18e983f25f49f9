"""What THEANINE's latest response used, as the original code writes it per turn (the
``trace()`` of the system): the retrieved memories, the raw timelines and the refined ones."""

from __future__ import annotations

from typing import Any

from ...timeline_graph import TimelineGraph
from ...types import MemoryItem
from .timelines import Timeline


def timeline_trace(graph: TimelineGraph, timelines: list[Timeline], recalled: list[MemoryItem]) -> dict[str, Any]:
    """The retrieved memories, the raw timelines (events with the relation of the edge into
    each) and, when refined, the timelines after refinement."""

    def event(mid: str, prev: str | None, text: str | None = None) -> dict[str, Any]:
        d = graph.node(mid)
        rel = graph.relation(prev, mid) if prev and graph.g.has_edge(prev, mid) else None
        return {"id": mid, "time": d["time"].isoformat(), "relation": rel, "text": text or d["text"]}

    out = []
    for t in timelines:
        entry: dict[str, Any] = {
            "retrieved": t.retrieved,
            "start": t.start,
            "truncated": t.truncated,
            "start_is_component_oldest": t.start == graph.component_oldest(t.start) if t.start else None,
            "raw": [event(m, t.path[i - 1] if i else None) for i, m in enumerate(t.path)],
        }
        if t.kept is not None:
            entry["refined"] = [event(m, t.kept[i - 1] if i else None, t.texts.get(m)) for i, m in enumerate(t.kept)]
            entry["note"] = t.note
        out.append(entry)
    return {
        "retrieved": [{"id": i.id, "text": i.text, "time": i.time.isoformat(), "score": i.score} for i in recalled],
        "timelines": out,
    }
