"""THEANINE's timeline walks are computed once per memory and graph version (issue 38): a reply
that samples and lists the timelines through a memory, and later replies, reuse them; a new
memory or edge makes them stale."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from chateval.memory.timeline_graph import TimelineGraph

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def diamond() -> TimelineGraph:
    g = TimelineGraph()
    for mid, d in {"a": 0, "b": 1, "c": 1, "d": 2, "x": 0}.items():
        g.add_memory(mid, text=mid, time=T0 + timedelta(days=d))
    for old, new in [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]:
        g.link(old, new, "SameTopic")
    return g


def test_walks_are_computed_once_per_graph_version(monkeypatch):
    g = diamond()
    calls: list[str] = []
    regions = g._regions
    monkeypatch.setattr(g, "_regions", lambda m: calls.append(m) or regions(m))
    first = g.sample_timelines("b", 2, random.Random(0))
    assert first == [["a", "b", "d"]]
    assert g.enumerate_timelines("b", 10) == first and g.count_timelines("b") == 1
    assert calls == ["b"]  # sampling, listing and counting: one walk
    assert g.count_timelines("d") == 2 and calls == ["b", "d"]
    # A new memory and edge: the stored walks are stale.
    g.add_memory("e", text="e", time=T0 + timedelta(days=3))
    g.link("b", "e", "Cause")
    assert g.count_timelines("b") == 2 and calls == ["b", "d", "b"]
    assert sorted(g.enumerate_timelines("b", 10)) == [["a", "b", "d"], ["a", "b", "e"]]
    g.link("x", "e", "Cause")  # an edge alone is a new version too
    # (e's timelines start at the component's oldest memory, a: x starts none of them)
    assert g.count_timelines("e") == 1 and g.count_timelines("b") == 2 and calls[-2:] == ["e", "b"]


def test_prefix_holds_only_memories_on_a_path_from_the_start():
    # c is an ancestor of d but the start (a) cannot reach it: it is no part of d's timelines.
    g = TimelineGraph()
    for mid, day in {"a": 0, "c": 1, "b": 2, "d": 3}.items():
        g.add_memory(mid, text=mid, time=T0 + timedelta(days=day))
    for old, new in [("a", "b"), ("c", "d"), ("b", "d")]:
        g.link(old, new, "SameTopic")
    start, prefix, suffix = g._regions("d")
    assert (start, prefix, suffix) == ("a", ["a", "b", "d"], ["d"])
    assert g.enumerate_timelines("d", 10) == [["a", "b", "d"]]
