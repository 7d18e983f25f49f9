"""THEANINE's ablations (the paper's Table 2) and its dynamic-k retrieval baseline (Table 5) as
registered systems, so that one benchmark run can compare them with the full system (each is
``theanine`` with one setting's default changed; any setting can still be given with --set)."""

from __future__ import annotations

from typing import Literal

from ..base import memory_system
from .theanine import Theanine, TheanineSettings


class NoLinkingSettings(TheanineSettings):
    relation_aware: bool = False


class NoRefineSettings(TheanineSettings):
    refine: bool = False


class ShuffledSettings(TheanineSettings):
    timeline_format: Literal["timeline", "events", "dynamic_k"] = "events"


class DynamicKSettings(TheanineSettings):
    timeline_format: Literal["timeline", "events", "dynamic_k"] = "dynamic_k"


@memory_system("theanine_no_linking")
class TheanineNoLinking(Theanine):
    description = "theanine w/o relation-aware linking: each new memory linked to its j most similar, no relations"
    Settings = NoLinkingSettings


@memory_system("theanine_no_refine")
class TheanineNoRefine(Theanine):
    description = "theanine w/o timeline refinement: the raw timelines go to the response"
    Settings = NoRefineSettings


@memory_system("theanine_shuffled")
class TheanineShuffled(Theanine):
    description = "theanine with the timelines' events given as separate memories in random order (top-k format)"
    Settings = ShuffledSettings


@memory_system("theanine_dynamic_k")
class TheanineDynamicK(Theanine):
    description = ("the paper's dynamic-k retrieval baseline (Table 5): top-N memories by similarity, N = the "
                   "memories THEANINE's timelines would hold, as a plain list")
    Settings = DynamicKSettings
