"""Head-to-head's settings (``chateval bench head2head``)."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from ...util.options import check_names, opt
from ..config import MemoryBenchConfig

DESCRIPTION = (
    "two or more memory systems on the same LongMemEval or LoCoMo questions, judged pairwise by the "
    "debate panel in both orders: win/tie/loss of A vs B"
)
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["win_rate"]


class Head2HeadConfig(MemoryBenchConfig):
    data: str = opt(
        ...,
        "a LongMemEval file (S, M or oracle) or a LoCoMo file (locomo10.json format), unchanged; "
        "the format is detected",
    )
    context: Literal["gold", "none"] = opt(
        "gold",
        "gold: the panel sees the gold answer as its reference (when the case has one) and a rule for "
        "checking answers against it; none: only the question and the two answers",
    )
    types: list[str] | None = opt(
        None,
        "only these question types (LongMemEval question_type or 'abstention'; "
        "LoCoMo category number or name, e.g. 1,2,3,4)",
    )
    # The panel always judges here: the single/debate choice does not apply.
    judge: Literal["single", "debate", "both"] | None = opt(None, hidden=True)  # type: ignore[assignment]

    _types = field_validator("types")(check_names)
