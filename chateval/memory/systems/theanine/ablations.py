"""THEANINE's ablations (the paper's Table 2) and its dynamic-k retrieval baseline (Table 5) as
registered systems, so that one benchmark run can compare them with the full system (each is
``theanine`` with one setting's default changed; any setting can still be given with --set)."""

from __future__ import annotations

from typing import Any

from pydantic import create_model

from ...base import memory_system
from .settings import TheanineSettings
from .system import Theanine


def _variant(cls_name: str, name: str, description: str, **defaults: Any) -> type[Theanine]:
    fields: Any = {k: (TheanineSettings.model_fields[k].annotation, v) for k, v in defaults.items()}
    settings = create_model(f"{cls_name}Settings", __base__=TheanineSettings, **fields)
    cls = type(cls_name, (Theanine,), {"description": description, "Settings": settings, "__module__": __name__})
    return memory_system(name)(cls)


TheanineNoLinking = _variant(
    "TheanineNoLinking",
    "theanine_no_linking",
    "theanine w/o relation-aware linking: each new memory linked to its j most similar, no relations",
    relation_aware=False,
)
TheanineNoRefine = _variant(
    "TheanineNoRefine",
    "theanine_no_refine",
    "theanine w/o timeline refinement: the raw timelines go to the response",
    refine=False,
)
TheanineShuffled = _variant(
    "TheanineShuffled",
    "theanine_shuffled",
    "theanine with the timelines' events given as separate memories in random order (top-k format)",
    timeline_format="events",
)
TheanineDynamicK = _variant(
    "TheanineDynamicK",
    "theanine_dynamic_k",
    "the paper's dynamic-k retrieval baseline (Table 5): top-N memories by similarity, N = the memories "
    "THEANINE's timelines would hold, as a plain list",
    timeline_format="dynamic_k",
)
