"""THEANINE (Ong et al., NAACL 2025): timeline-based memory management, as one package — see
README.md here for the method, its steps, settings and deviations. Importing the package
registers ``theanine`` and its ablations (``ablations``).

- ``system``: the memory system (ingest, linking, retrieval, timelines, response)
- ``steps``: its typed LLM steps and their inputs; ``refine``: Phase II-2's refinement
- ``timelines``: the untangled timelines and how they are written; ``trace``: the per-turn trace
- ``settings``: ``TheanineSettings``; ``ablations``: the paper's ablations as registered systems
"""

from .ablations import TheanineDynamicK, TheanineNoLinking, TheanineNoRefine, TheanineShuffled
from .refine import refine_timeline
from .settings import TheanineSettings
from .steps import (
    EXTRACT_EVENTS,
    REFINE_TIMELINE,
    RELATE_MEMORIES,
    RELATE_PAIR,
    RESPOND_AS_SPEAKER,
    EventInputs,
    MemoryRef,
    PairInputs,
    PairRelation,
    RefinedTimeline,
    RefineInputs,
    RelationInputs,
    RelationLabel,
    RelationOutput,
    SpeakerInputs,
    TimelineEvent,
    next_speaker,
    offline_relation,
    session_excerpt,
    topic_words,
)
from .system import Theanine, dialogue_query
from .timelines import Timeline, events_text, timeline_text
from .trace import timeline_trace

# A run's config.json names each system's class (``system_classes``, which --resume compares):
# THEANINE keeps the address it had as one module, which is also its public one.
Theanine.__module__ = __name__

__all__ = [
    "EXTRACT_EVENTS",
    "REFINE_TIMELINE",
    "RELATE_MEMORIES",
    "RELATE_PAIR",
    "RESPOND_AS_SPEAKER",
    "EventInputs",
    "MemoryRef",
    "PairInputs",
    "PairRelation",
    "RefineInputs",
    "RefinedTimeline",
    "RelationInputs",
    "RelationLabel",
    "RelationOutput",
    "SpeakerInputs",
    "Theanine",
    "TheanineDynamicK",
    "TheanineNoLinking",
    "TheanineNoRefine",
    "TheanineSettings",
    "TheanineShuffled",
    "Timeline",
    "TimelineEvent",
    "dialogue_query",
    "events_text",
    "next_speaker",
    "offline_relation",
    "refine_timeline",
    "session_excerpt",
    "timeline_text",
    "timeline_trace",
    "topic_words",
]
