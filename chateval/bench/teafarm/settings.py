"""TeaFarm's settings (``chateval bench teafarm``)."""

from __future__ import annotations

from typing import Literal

from ...datasets.teabag import TEABAG_FILE
from ...util.options import opt
from ..config import MemoryBenchConfig

DESCRIPTION = (
    "TeaFarm (THEANINE): counterfactual questions about the past in a simulated new session; "
    "success rate = not fooled / all questions (single judge, the panel, or both)"
)
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["success_rate"]


class TeaFarmConfig(MemoryBenchConfig):
    data: str = opt(
        ...,
        "a LoCoMo file (locomo10.json format) or a Multi-Session Chat file (THEANINE / msc-raw "
        "columns: first_session_dialogue, ...); the format is detected",
    )
    questions: str | None = opt(
        None,
        f"a {TEABAG_FILE} of an earlier run: reuse its summaries, questions and "
        "simulated sessions (every selected conversation must be in it; a file of another "
        "shape is an error, never regenerated)",
    )
    per_speaker: int = opt(
        1,
        "counterfactual questions per speaker (as the one asking) and conversation; 1 "
        "follows TeaBag (two questions per episode, one per speaker)",
        ge=1,
    )
    generator_model: str | None = opt(
        None, "model that summarises, writes questions and simulates sessions; unset: the answer model"
    )
    judge: Literal["single", "debate", "both"] = opt(
        "single",
        "single: one LLM judge, as in the paper; debate: the panel's correctness task (also sees the "
        "past summaries); both: single scores, the panel's agreement is reported",
    )
