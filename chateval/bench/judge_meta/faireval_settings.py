"""FairEval's settings (``chateval bench faireval``)."""

from __future__ import annotations

from typing import Literal

from ...util.options import opt
from ..config import JudgeMetaConfig

DESCRIPTION = (
    "FairEval (ChatGPT vs Vicuna-13B, 80 questions): accuracy and Cohen's kappa of the judge's "
    "verdict against the human label; single vs multi-agent, --sweep"
)
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["accuracy"]
Unreadable = Literal["tie", "exclude"]


class FairEvalConfig(JudgeMetaConfig):
    # Position calibration is on by default here (both answer orders are judged).
    swap: bool | None = opt(
        None, "turn off position calibration (on by default here: both answer orders are judged)", flags=["--no-swap"]
    )
    unreadable: Unreadable = opt(
        "tie",
        "a question whose verdict cannot be read (after the re-ask): counted as a "
        "tie in accuracy and kappa (tie, ChatEval's scoring) or left out (exclude)",
    )
