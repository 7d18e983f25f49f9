"""THEANINE's Phase II-2: one typed step refines a raw timeline for the current dialogue
(drops what is redundant, rewrites what helps)."""

from __future__ import annotations

from datetime import datetime

from ....models import CallLog, ModelLayer
from ....util.prompts import Prompts
from ...timeline_graph import TimelineGraph
from ...types import Turn
from .steps import REFINE_TIMELINE, RefineInputs, TimelineEvent
from .timelines import Timeline


async def refine_timeline(
    layer: ModelLayer,
    graph: TimelineGraph,
    t: Timeline,
    dialogue: list[Turn],
    now: datetime,
    *,
    log: CallLog,
    prompts: Prompts,
) -> Timeline:
    """The timeline with what the model kept (in timeline order) and its rewritten texts."""
    alias = {f"E{i + 1}": mid for i, mid in enumerate(t.path)}
    events = [
        TimelineEvent(
            id=a,
            event=graph.node(mid)["text"],
            time=graph.node(mid)["time"],
            relation=graph.relation(t.path[i - 1], mid) if i else None,
            retrieved=mid in t.retrieved,
        )
        for i, (a, mid) in enumerate(alias.items())
    ]
    out = await REFINE_TIMELINE.run(
        layer, RefineInputs(dialogue=dialogue, timeline=events, now=now), log=log, prompts=prompts
    )
    kept: dict[str, str] = {}
    for e in out.events:
        mid = alias.get(e.id.strip().upper())
        if mid is not None and mid not in kept and e.text.strip():
            kept[mid] = e.text.strip()
    if not kept:  # the model dropped everything: keep the memories the timeline was retrieved for
        kept = {mid: graph.node(mid)["text"] for mid in t.retrieved}
    order = [mid for mid in t.path if mid in kept]  # timeline order, whatever order the reply used
    return t.model_copy(update={"kept": order, "texts": {m: kept[m] for m in order}, "note": out.note.strip()})
