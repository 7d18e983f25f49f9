"""``AuditConfig``: one judge (an ``EvalConfig``, the same settings as ``evaluate``) and what the
audit does with it. The CLI builds the audit's own options from these fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..evaluation.config import EvalConfig
from ..util.options import merge_layers, opt
from . import texts


class AuditConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    input: str = opt(
        ..., "the items to perturb: an evaluate JSONL file, or the FairEval file (or its folder)", cli=False
    )
    out: str = opt(..., "run directory (config.json, samples.jsonl, summary.json, report.md, flip_rates.png)")
    judge: EvalConfig = Field(default_factory=EvalConfig, json_schema_extra={"cli": False})
    perturbations: list[str] | None = opt(
        None,
        "the perturbations to run (see `chateval perturbations`); repeatable or comma-separated. Default: "
        "every registered one that applies to the task",
        flags=["--perturbation"],
        metavar="NAME",
        repeat=True,
    )
    judge_family: str | None = opt(
        None,
        "the judge model's family (e.g. gpt-4o): turns on the self-preference "
        "check, which labels one answer as produced by it",
    )
    other_family: str = opt(texts.OTHER_FAMILY, "self-preference: the label of the other answer's producer")
    score_threshold: float = opt(1.0, "score task: the change of the panel's score that counts as a flip", gt=0)
    length_control: bool = opt(
        True,
        "judge a length-matched control of every variant that adds words (the added words replaced by as "
        "many neutral ones) and report each bias net of it",
    )
    resume: bool = opt(False, "continue an audit: skip finished variants, redo failed ones")
    overwrite: bool = opt(False, "replace an earlier run in --out")
    limit: int | None = opt(None, "audit only the first N items", ge=1)
    workers: int = opt(4, "variants judged concurrently", ge=1)

    @field_validator("perturbations", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        if isinstance(v, (list, tuple)):  # --perturbation a,b --perturbation c
            names = [n.strip() for x in v for n in str(x).split(",")]
            if not all(names):  # '' (or 'a,,b') is not "every perturbation": say so before any judging
                raise ValueError(
                    "an empty name; give perturbation names (see `chateval perturbations`) or leave it out"
                )
            return names
        return v

    @field_validator("judge_family", "other_family", mode="before")
    @classmethod
    def _family(cls, v: Any) -> Any:
        if isinstance(v, str) and not v.strip():
            raise ValueError("empty; give a model family name (e.g. gpt-4o), or leave the option out")
        return v.strip() if isinstance(v, str) else v

    @classmethod
    def merged(cls, *layers: dict[str, Any]) -> AuditConfig:
        return merge_layers(cls, *layers)
