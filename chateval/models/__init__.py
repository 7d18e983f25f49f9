"""Model layer: spec strings -> clients, with cache, metering, retries and one concurrency limit."""

from .backends import (
    AutogenBackend,
    Backend,
    Completion,
    GenParams,
    OfflineBackend,
    PromptPrefix,
    StepContext,
    parse_json_reply,
)
from .cache import CompletionCache, default_cache_dir
from .layer import LayerClient, ModelLayer
from .offline import offline_step, offline_steps
from .prices import PRICES, cost_usd, register_price
from .retry import RetryPolicy
from .spec import ModelSpec
from .usage import CallLog, CallRecord, UsageTotals, approx_tokens, cost_text, prompt_cache_text

__all__ = [
    "AutogenBackend",
    "Backend",
    "CallLog",
    "CallRecord",
    "Completion",
    "CompletionCache",
    "GenParams",
    "LayerClient",
    "ModelLayer",
    "ModelSpec",
    "OfflineBackend",
    "PRICES",
    "PromptPrefix",
    "RetryPolicy",
    "StepContext",
    "UsageTotals",
    "approx_tokens",
    "cost_usd",
    "default_cache_dir",
    "offline_step",
    "offline_steps",
    "parse_json_reply",
    "prompt_cache_text",
    "cost_text",
    "register_price",
]
