"""The payload of a judged run (``chateval evaluate``, and the sub-runs of calibrate and of the
judge benchmarks): one debate's result per samples.jsonl line, and the run's summary.

Typed leniently: a record is a :class:`~chateval.debate.panel.JudgeResult` as written, but a
reader must load runs of earlier versions too, so the nested shapes stay plain JSON here.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..runs.envelope import SampleRecord, SummaryRecord


class JudgedRecord(SampleRecord):
    """One judged sample (evaluate), or one judged item of a judge benchmark's setting."""

    id: str | int | None = None
    task: str | None = None
    verdict: dict[str, Any] | None = None  # winner / correct / score, the reason
    agents: list[dict[str, Any]] = Field(default_factory=list)  # each debater's final verdict
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    orders: dict[str, Any] | None = None  # with --swap: each order's verdict
    order_disagreement: bool | None = None
    latency_s: float | None = None
    label: Any = None  # the human reference, as the input gave it
    model: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)  # what was judged

    @property
    def winner(self) -> Any:
        """The verdict's answer: a pairwise winner, else correct, else a score (None if none)."""
        v = self.verdict or {}
        return v.get("winner") if v.get("winner") is not None else v.get("correct", v.get("score"))


class EvaluateSummary(SummaryRecord):
    """summary.json of ``chateval evaluate`` (and of each calibrate setting)."""

    model: str | None = None
    task: str | None = None
    strategy: str | None = None
    agents: int | None = None
    turns: int | None = None
    config_hash: str | None = None
    n_samples: int | None = None
    n_ok: int | None = None
    failed_ids: list[Any] = Field(default_factory=list)
    agent_verdicts: int | None = None
    parse_errors: int | None = None
    reasked: int | None = None
    mean_latency_s: float | None = None
    verdicts: dict[str, int] | None = None  # pairwise and correctness: counts per verdict
    mean_score: float | None = None  # score task
    order_disagreement_rate: float | None = None
    label_accuracy: dict[str, Any] | None = None  # {n, accuracy} against the inputs' labels
    agreement: dict[str, Any] | None = None  # accuracy / kappa / spearman with the human reference
