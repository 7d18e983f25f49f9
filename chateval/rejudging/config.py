"""``RejudgeConfig``: the graded sets, the judges and where to write (the CLI builds its options
from these fields)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from ..evaluation.config import LayerSettings
from ..util.options import merge_layers, opt

DEFAULT_JUDGES = ["recorded", "f1"]


class RejudgeConfig(LayerSettings):
    """``chateval rejudge``: score graded answer sets under several judges and compare them."""

    inputs: list[str] = opt(
        ...,
        "graded answer sets: FILE[:LABEL][:wrong]; FILE a path, or a data set's name (NAME, NAME/FILE)",
        cli=False,
    )
    out: str = opt(
        ...,
        "output directory (summary.json, report.md, samples.jsonl for `chateval view`, a sub-run per set and LLM judge)",
    )
    judges: list[str] = opt(
        lambda: list(DEFAULT_JUDGES),
        "comma-separated judges: recorded, recorded:NAME, f1, official, panel, preset:NAME, template:PATH",
        metavar="J1,J2,...",
        repeat=True,
    )
    format: Literal["auto", "evermemos", "zep", "longmemeval", "run", "jsonl"] = opt(
        "auto", "the inputs' format (auto: detected per file)"
    )
    lme_data: str | None = opt(
        None,
        "LongMemEval hypotheses: the data file they answer (questions, gold answers; a path or, as --data, a name)",
    )
    errata: str | None = opt(
        None,
        "gold errata (locomo-audit errors.json format: a path, or the data set's name, locomo-audit): "
        "score on raw and corrected gold side by side",
    )
    model: str = opt("offline", "model of the LLM judges (official, panel, preset:, template:)")
    temperature: float = opt(0.0, "LLM judges' sampling temperature", ge=0)
    f1_threshold: float = opt(0.5, "f1 judge: an answer counts as accepted when its F1 is at least this", ge=0, le=1)
    limit: int | None = opt(None, "score only the first N items of each set", ge=1)
    resume: bool = opt(False, "continue an interrupted rejudge: finished judgements are kept")
    overwrite: bool = opt(False, "replace an earlier rejudge in --out")
    workers: int | None = opt(None, "items judged at once per judge (default: twice --max-connections)", ge=1)
    executor: Literal["local", "ray"] = opt("local", "where LLM judgements run: local, or ray (tasks on Ray workers)")
    ray_address: str | None = opt(None, "--executor ray: the cluster to join (default: a local Ray instance)")
    resamples: int = opt(2000, "bootstrap resamples behind every interval", ge=100)
    bootstrap_seed: int = opt(0, "seed of the bootstrap draws")
    price: list[str] = opt(
        list,
        "USD per million input/output tokens for a model missing from the price table",
        metavar="MODEL=IN,OUT",
        repeat=True,
    )

    @field_validator("judges", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        if isinstance(v, (list, tuple)):
            return [n.strip() for x in v for n in str(x).split(",") if n.strip()] or list(DEFAULT_JUDGES)
        return v

    @classmethod
    def merged(cls, *layers: dict[str, Any]) -> RejudgeConfig:
        return merge_layers(cls, *layers)
