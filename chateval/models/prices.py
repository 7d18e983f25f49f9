"""Price table in USD per million tokens (input, output). Unknown models cost ``None``, not 0.

Prices as published by OpenAI for their standard tier; extend or override with
``register_price`` (the CLI's ``--price MODEL=IN,OUT``).
"""

from __future__ import annotations

import math

PRICES: dict[str, tuple[float, float]] = {
    "offline": (0.0, 0.0),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
}


def register_price(model: str, input_per_m: float, output_per_m: float) -> None:
    PRICES[model] = (input_per_m, output_per_m)


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    price = PRICES.get(model)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def apply_price_specs(specs: list[str]) -> None:
    """``MODEL=IN,OUT`` (USD per million input/output tokens) for models missing from the table."""
    from ..errors import ConfigError

    for spec in specs:
        try:
            model, _, nums = spec.partition("=")
            inp, out = (float(x) for x in nums.split(","))
        except ValueError:
            raise ConfigError(f"--price '{spec}': expected MODEL=IN,OUT (USD per million tokens)") from None
        if not model.strip() or min(inp, out) < 0 or not (math.isfinite(inp) and math.isfinite(out)):
            raise ConfigError(f"--price '{spec}': expected MODEL=IN,OUT with prices >= 0")
        register_price(model.strip(), inp, out)
