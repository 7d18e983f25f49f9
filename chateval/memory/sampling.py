"""Sampling temperatures of the memory systems' LLM steps (answers and memory steps alike).

The memory benchmarks run deterministic by default (temperature 0 everywhere). That is a
deviation, kept on purpose: with sampling, two runs of one command differ, the completion cache
never repeats a run, and a difference between two systems mixes with sampling noise. THEANINE's
two sources disagree on what they sampled at: the paper (Ong et al. 2025) states 0.75 for
summarisation, memory update and response generation; the official scripts
(kimnamssya/Theanine, ``scripts/theanine.sh``) pass 0.7 to summarising and to refinement +
response, and 0.5 to relation-aware linking. Both are presets: ``theanine-paper``
and ``theanine-code``.

A *sampling preset* names a default temperature and per-step temperatures (keyed by the typed
step's name, e.g. ``theanine_relation_pair``); ``SAMPLING_PRESETS`` holds the built-in ones, and
a YAML file of the same shape is one too.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..util.errors import ConfigError
from ..util.yamlfiles import load_mapping


class Sampling(BaseModel):
    """A default temperature (None: deterministic, 0) and temperatures of named steps."""

    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(None, ge=0)
    steps: dict[str, float] = Field(default_factory=dict)

    def resolved(self) -> tuple[float, dict[str, float]]:
        return (self.temperature or 0.0), dict(self.steps)

    @property
    def deterministic(self) -> bool:
        return not self.temperature and not any(self.steps.values())


# Only THEANINE's own steps are named, so the baselines of the same run keep --temperature.
_THEANINE_STEPS = (
    "theanine_events",
    "theanine_relation_pair",
    "theanine_relation",
    "theanine_refine",
    "theanine_response",
)

SAMPLING_PRESETS: dict[str, Sampling] = {
    # The paper: 0.75 for summarisation (theanine_events), memory update (the relation steps) and
    # response generation. It names no other value, so the refinement step (part of Phase II,
    # before the response) gets 0.75 too.
    "theanine-paper": Sampling(steps=dict.fromkeys(_THEANINE_STEPS, 0.75)),
    # The official scripts (scripts/theanine.sh): summarize.py 0.7, memory_constructor.py
    # (linking) 0.5, theanine.py (refinement and response, one client) 0.7.
    "theanine-code": Sampling(
        steps={
            "theanine_events": 0.7,
            "theanine_relation_pair": 0.5,
            "theanine_relation": 0.5,
            "theanine_refine": 0.7,
            "theanine_response": 0.7,
        }
    ),
}
SAMPLING_PRESETS["theanine"] = SAMPLING_PRESETS["theanine-code"]  # the former name of theanine-code


def load_sampling(spec: str | None) -> Sampling:
    """A built-in preset by name or a YAML file ({temperature: T, steps: {STEP: T, ...}})."""
    if not spec:
        return Sampling()
    if spec in SAMPLING_PRESETS:
        return SAMPLING_PRESETS[spec]
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(
            f"--sampling '{spec}': neither a built-in preset ({', '.join(SAMPLING_PRESETS)}) nor a YAML file"
        )
    try:
        steps = Sampling.model_validate(load_mapping(path, "sampling preset"))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"{path}: field '{where}': {err['msg']}") from None
    for name, t in steps.steps.items():
        if t < 0:
            raise ConfigError(f"{path}: field 'steps.{name}': a temperature cannot be negative")
    return steps


def combine(preset: Sampling, temperature: float | None, step_temperatures: dict[str, float]) -> Sampling:
    """Command line over preset: --temperature replaces the preset's default, --step-temperature
    adds to or replaces its steps."""
    return Sampling(
        temperature=preset.temperature if temperature is None else temperature, steps=preset.steps | step_temperatures
    )
