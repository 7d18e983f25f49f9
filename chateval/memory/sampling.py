"""Sampling temperatures of the memory systems' LLM steps (answers and memory steps alike).

The memory benchmarks run deterministic by default (temperature 0 everywhere), which is not what
the papers did: THEANINE's released scripts sample at 0.7 when summarising, refining and
responding and at 0.5 when linking memories. A *sampling preset* names a default temperature
and per-step temperatures (keyed by the typed step's name, e.g. ``theanine_relation_pair``);
``SAMPLING_PRESETS`` holds the built-in ones, and a YAML file of the same shape is one too.
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


# THEANINE's official scripts (kimnamssya/Theanine, scripts/theanine.sh): summarisation 0.7,
# relation-aware linking 0.5, timeline refinement and response generation 0.7. Only THEANINE's
# own steps are named, so the baselines of the same run keep --temperature.
SAMPLING_PRESETS: dict[str, Sampling] = {
    "theanine": Sampling(
        steps={
            "theanine_events": 0.7,
            "theanine_relation_pair": 0.5,
            "theanine_relation": 0.5,
            "theanine_refine": 0.7,
            "theanine_response": 0.7,
        }
    ),
}


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
