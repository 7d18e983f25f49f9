"""THEANINE's retrieved timelines (``Timeline``: what one response used) and how they are
written into the prompt: as timelines, or (the "top-k" format) as single events in a seeded
random order."""

from __future__ import annotations

import hashlib
import random

from pydantic import BaseModel, Field

from ...timeline_graph import TimelineGraph


class Timeline(BaseModel):
    """One retrieved timeline: the raw path of memory ids and, if refined, what was kept."""

    retrieved: list[str]  # the retrieved memories on it (one, unless several share the timeline)
    path: list[str]  # raw timeline (memory ids, oldest first; cut to max_events)
    truncated: bool = False
    start: str | None = None  # where the untruncated timeline starts (the component's oldest memory, if it leads here)
    kept: list[str] | None = None  # refined: the memory ids kept, in order
    texts: dict[str, str] = Field(default_factory=dict)  # refined: memory id -> rewritten text
    note: str = ""


def timeline_events(t: Timeline) -> list[str]:
    """The memory ids a timeline gives: the refined ones when it was refined."""
    return t.kept if t.kept is not None else t.path


def event_text(graph: TimelineGraph, t: Timeline, mid: str) -> str:
    return t.texts.get(mid) or graph.node(mid)["text"]


def timeline_text(graph: TimelineGraph, number: int, t: Timeline) -> str:
    """A timeline in the prompt: its dates, then one dated event a line (with the relation of the
    edge into it)."""
    ids = timeline_events(t)
    times = [graph.node(m)["time"] for m in ids]
    head = f"Timeline {number} ({times[0]:%Y-%m-%d} to {times[-1]:%Y-%m-%d}"
    head += ", shortened)" if t.truncated else ")"
    lines = [head + ":"]
    for i, mid in enumerate(ids):
        prev = ids[i - 1] if i else None
        rel = graph.relation(prev, mid) if prev and graph.g.has_edge(prev, mid) else None
        mark = f"({rel}) " if rel else ""
        lines.append(f"- [{graph.node(mid)['time']:%Y-%m-%d}] {mark}{event_text(graph, t, mid)}")
    if t.note:
        lines.append(f"  Note: {t.note}")
    return "\n".join(lines)


def events_text(graph: TimelineGraph, timelines: list[Timeline], question: str, seed: int) -> str:
    """The "top-k" format: the timelines' events as separate memories in a seeded random order."""
    texts: dict[str, str] = {}
    for t in timelines:
        for mid in timeline_events(t):
            texts.setdefault(mid, event_text(graph, t, mid))
    ids = sorted(texts, key=graph.key)
    digest = hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]
    random.Random(f"{seed}|events|{digest}").shuffle(ids)
    return "\n".join(f"- [{graph.node(m)['time']:%Y-%m-%d}] {texts[m]}" for m in ids)
