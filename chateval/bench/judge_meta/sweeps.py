"""``--sweep DIM=V1,V2``: which dimension of the judge benchmarks' multi setting is varied, and
over which values (checked before anything runs)."""

from __future__ import annotations

from typing import Any

from ...debate import STRATEGIES
from ...util.errors import ConfigError

SWEEP_DIMS = ("agents", "turns", "strategy", "personas")
NUMERIC_DIMS = ("agents", "turns")


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    dim, sep, raw = text.partition("=")
    dim = dim.strip()
    if not sep or dim not in SWEEP_DIMS:
        raise ConfigError(f"--sweep '{text}': expected DIM=V1,V2 with DIM one of {', '.join(SWEEP_DIMS)}")
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if not values:
        raise ConfigError(f"--sweep '{text}': no values")
    if len(set(values)) != len(values):
        raise ConfigError(f"--sweep '{text}': a value is repeated")
    if dim in NUMERIC_DIMS:
        try:
            nums = [int(v) for v in values]
        except ValueError:
            raise ConfigError(f"--sweep '{text}': {dim} takes whole numbers") from None
        if min(nums) < 1:
            raise ConfigError(f"--sweep '{text}': {dim} must be at least 1")
        return dim, nums
    if dim == "strategy":
        for v in values:
            STRATEGIES.get(v)  # unknown names: ConfigError listing the known ones
    else:
        bad = [v for v in values if v not in ("diverse", "same")]
        if bad:
            raise ConfigError(f"--sweep '{text}': personas takes diverse and/or same, not {bad[0]!r}")
    return dim, values
