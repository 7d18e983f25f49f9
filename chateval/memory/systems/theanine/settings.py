"""THEANINE's settings: the paper's j, k and n, the linking protocol, and the ablations (see
``theanine``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class TheanineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    j: int = Field(3, ge=1, le=50)  # associative memories per new memory (Phase I-1)
    k: int = Field(3, ge=1, le=100)  # memories retrieved per response (Phase II-1)
    n: int = Field(1, ge=1, le=20)  # raw timelines sampled per retrieved memory
    max_paths: int = Field(256, ge=1, le=100_000)  # list every timeline up to this many; beyond, sample by walks
    max_events: int = Field(12, ge=2, le=1000)  # a timeline is cut to this many events around the retrieved one
    relation_aware: bool = True  # False: link to all j associative memories by similarity, no LLM call
    linking: Literal["pair", "batch"] = "pair"  # pair: one call per (earlier, new) pair (paper); batch: one per memory
    session_tokens: int = Field(1500, ge=50, le=100_000)  # pair linking: ~tokens of each source session shown
    refine: bool = True  # False: raw timelines go to the response (no refinement calls)
    # events: shuffled single events (top-k format); dynamic_k: the paper's Table 5 retrieval baseline
    timeline_format: Literal["timeline", "events", "dynamic_k"] = "timeline"
    # Latest dialogue turns that form the retrieval query; None: the whole current dialogue (the
    # original code's query)
    query_turns: int | None = Field(None, ge=1, le=1000)
    # The query's turn order: oldest_first (the original code's: the dialogue as written) or
    # newest_first (ours). An embedder reads only its window (all-MiniLM-L6-v2: 256 word pieces),
    # so on a long dialogue oldest_first keeps its opening turns and newest_first its latest ones.
    query_order: Literal["oldest_first", "newest_first"] = "oldest_first"
    source_chars: int = Field(600, ge=0, le=20_000)  # batch linking: characters of cited turns per memory
    dialogue_prompt: Literal["speaker", "qa"] = "speaker"  # dialogue continuation: as the speaker, or the QA prompt
    seed: int = 0  # timeline sampling and event shuffling
    graph_path: str | None = None  # the user's graph file (node-link JSON); None: in memory only
