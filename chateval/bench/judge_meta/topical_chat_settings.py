"""Topical-Chat's settings (``chateval bench topical-chat``)."""

from __future__ import annotations

from typing import Literal

from ...util.options import opt
from ..config import JudgeMetaConfig
from ..text_metrics import ALL_METRICS

DESCRIPTION = (
    "Topical-Chat (USR, 360 responses): turn-level Spearman/Kendall of judges and non-LLM "
    "baselines (ROUGE-L, BLEU-4, MiniLM) with human aspect scores; --sweep"
)
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["spearman"]


class TopicalChatConfig(JudgeMetaConfig):
    aspect_mode: Literal["per-aspect", "joint"] = opt(
        "per-aspect",
        "per-aspect: one debate per aspect on its USR scale (1-3; groundedness 0-1; our protocol: "
        "ChatEval's code has per-aspect configs for SummEval only); joint: all aspects rated 1-10 "
        "in one debate",
    )
    baselines: list[str] | None = opt(
        None, f"non-LLM baselines to compute (default all: {','.join(ALL_METRICS)}; '' for none)"
    )
    baselines_only: bool = opt(False, "compute the baselines only, no judge")
    gt_reference: Literal["exclude", "new-human"] = opt(
        "exclude",
        "reference for the Original Ground Truth row itself: leave it out of the reference-based metrics, "
        "or use the New Human Generated response",
    )
