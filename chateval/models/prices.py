"""Price table in USD per million tokens. Unknown models cost ``None``, not 0.

Each entry is input, output, and optionally the cached-input price (tokens read from the
provider's prompt cache) and the cache-write price (Anthropic charges writes above input).
Where a cached price is unknown, cached tokens are charged at the full input price: an upper
bound, never an underestimate. Prices as published by OpenAI for their standard tier; extend
or override with ``register_price`` (the CLI's ``--price MODEL=IN,OUT[,CACHED_IN[,CACHE_WRITE]]``).
"""

from __future__ import annotations

import math
from typing import NamedTuple


class Price(NamedTuple):
    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None


PRICES: dict[str, Price] = {
    "offline": Price(0.0, 0.0, 0.0, 0.0),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-4-turbo": Price(10.00, 30.00),
    "gpt-4": Price(30.00, 60.00),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "text-embedding-3-small": Price(0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0),
}


def register_price(
    model: str,
    input_per_m: float,
    output_per_m: float,
    cached_input_per_m: float | None = None,
    cache_write_per_m: float | None = None,
) -> None:
    PRICES[model] = Price(input_per_m, output_per_m, cached_input_per_m, cache_write_per_m)


def cost_usd(
    model: str, prompt_tokens: int, completion_tokens: int, *, cache_read: int = 0, cache_write: int = 0
) -> float | None:
    """``prompt_tokens`` counts every input token; ``cache_read``/``cache_write`` say how many of
    them the provider's prompt cache served or stored."""
    price = PRICES.get(model)
    if price is None:
        return None
    p = Price(*price)  # entries registered as plain (in, out) tuples still work
    read_price = p.input if p.cached_input is None else p.cached_input
    write_price = p.input if p.cache_write is None else p.cache_write
    fresh = max(0, prompt_tokens - cache_read - cache_write)
    return (
        fresh * p.input + cache_read * read_price + cache_write * write_price + completion_tokens * p.output
    ) / 1_000_000


def apply_price_specs(specs: list[str]) -> None:
    """``MODEL=IN,OUT[,CACHED_IN[,CACHE_WRITE]]`` (USD per million tokens) for models missing
    from the table, or to override it."""
    from ..util.errors import ConfigError

    for spec in specs:
        expected = f"--price '{spec}': expected MODEL=IN,OUT[,CACHED_IN[,CACHE_WRITE]] (USD per million tokens)"
        model, _, nums = spec.partition("=")
        try:
            values = [float(x) for x in nums.split(",")]
        except ValueError:
            raise ConfigError(expected) from None
        if not model.strip() or not 2 <= len(values) <= 4:
            raise ConfigError(expected)
        if min(values) < 0 or not all(math.isfinite(v) for v in values):
            raise ConfigError(f"--price '{spec}': expected MODEL=IN,OUT[,CACHED_IN[,CACHE_WRITE]] with prices >= 0")
        register_price(model.strip(), *values)
