"""The typed settings of a calibration (the CLI builds its options from these fields)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, create_model, field_validator

from ..evaluation.config import EvalConfig, LayerSettings
from ..util.options import check_base_url, check_dir, merge_layers, opt
from .records import CalibrationSetting

# The judge settings every setting starts from (a setting's preset and values override them).
BASE_FIELDS = (
    "model",
    "temperature",
    "max_tokens",
    "seed",
    "swap",
    "aspects",
    "persona_dirs",
    "prompt_dirs",
    "plugins",
)


def _copied(name: str) -> tuple[Any, Any]:
    f = EvalConfig.model_fields[name]
    default = f.get_default(call_default_factory=True)  # a fresh list from a default_factory
    if name == "swap":
        default = None  # not given: the input's format decides (FairEval judges both orders)
    extra = dict(f.json_schema_extra) if isinstance(f.json_schema_extra, dict) else {}  # opt() gives a dict
    annotation: Any = f.annotation
    return (
        annotation | None if name == "swap" else annotation,
        Field(default, description=f.description, json_schema_extra=extra),
    )


_Base = create_model(
    "_CalibrateBase",
    __base__=LayerSettings,  # type: ignore[call-overload]
    **{n: _copied(n) for n in BASE_FIELDS},
)


class CalibrateConfig(_Base):
    """``chateval calibrate``: a labelled file, a grid of judge settings, where to write."""

    if TYPE_CHECKING:  # the BASE_FIELDS copied from EvalConfig above, which a type checker cannot see
        model: str
        temperature: float
        max_tokens: int | None
        seed: int | None
        swap: bool | None
        aspects: list[str] | None
        persona_dirs: list[str]
        prompt_dirs: list[str]
        plugins: list[str]

    input: str = opt(
        ...,
        "labelled JSONL (the evaluate format with a human 'label'), or a FairEval / Topical-Chat file or folder",
        cli=False,
    )
    out: str = opt(..., "calibration directory (one sub-run per setting, summary.json, report.md, plots)")
    settings: list[CalibrationSetting] = opt(
        list, "the grid (default: single, chateval_default and the three strategies at 3 agents x 2 turns)", cli=False
    )
    grid: str | None = opt(
        None,
        "a YAML/JSON grid file: settings as a list of {name, preset, key: value} or a "
        "mapping name -> {preset, key: value}",
        metavar="FILE.yaml",
    )
    baseline: str = opt("single", "the setting every other one is compared with (paired)")
    task: str | None = opt(
        None,
        "the task (default: inferred from the first record: answer_1/answer_2 pairwise; a number label score; "
        "a true/false label correctness); a task a plugin registers is given here",
    )
    format: Literal["auto", "evaluate", "faireval", "topical-chat"] = opt(
        "auto",
        "the input's format (auto: a FairEval or Topical-Chat file or folder is recognised)",
        flags=["--input-format"],
    )
    resume: bool = opt(False, "continue an interrupted calibration: finished items of every setting are kept")
    overwrite: bool = opt(False, "replace an earlier calibration in --out")
    limit: int | None = opt(None, "judge only the first N items", ge=1)
    workers: int | None = opt(None, "items judged at once per setting (default: twice --max-connections)", ge=1)
    executor: Literal["local", "ray"] = opt("local", "where items are judged: local, or ray (tasks on Ray workers)")
    ray_address: str | None = opt(None, "--executor ray: the cluster to join (default: a local Ray instance)")
    write_preset: str | None = opt(
        None, "write the best setting as a preset YAML that `evaluate --preset` takes", metavar="NAME.yaml"
    )
    # at most 20,000 (checked before any judging): each bootstrap draws a chunk of resamples at a time
    resamples: int = opt(
        2000, "bootstrap resamples behind every interval and paired test (100 to 20,000)", ge=100, le=20_000
    )
    bootstrap_seed: int = opt(0, "seed of the bootstrap and permutation draws (0 or more)", ge=0, le=2**63 - 1)
    price: list[str] = opt(
        list,
        "USD per million input/output tokens for a model missing from the price table",
        metavar="MODEL=IN,OUT",
        repeat=True,
    )

    _base_url = field_validator("base_url", mode="before")(check_base_url)
    _cache_dir = field_validator("cache_dir")(check_dir)

    @classmethod
    def merged_from(cls, *layers: dict[str, Any]) -> CalibrateConfig:
        """Later layers win; None means 'not given'; errors name the field in one line."""
        return merge_layers(cls, *layers)

    def base_settings(self) -> dict[str, Any]:
        """The judge settings given here, for EvalConfig (None: not given)."""
        keys = set(BASE_FIELDS) | set(LayerSettings.model_fields)
        return {k: getattr(self, k) for k in keys}
