"""Usage an endpoint reports is checked before it is metered or priced.

A reply's token counts set the run's cost and so the ``--max-cost`` cap: a server reporting
``prompt_tokens: -1e9`` once gave a cost of −$1.6M and a cap that never tripped, and 1e300 tokens
were accepted. A count is trusted only if it is a non-negative integer within what the request
could have used:

- input tokens <= the request's UTF-8 bytes (its messages and the response schema: a token
  covers at least one byte in the byte-level tokenizers models use) + PER_MESSAGE_TOKENS per
  message (role and template tokens) + PROMPT_SLACK_TOKENS (what a provider adds: a schema's or
  tool's own prompt);
- output tokens <= max_tokens (NO_LIMIT_TOKENS when the request sets none), or the reply's UTF-8
  bytes if larger (a server that ignored max_tokens), + OUTPUT_SLACK_TOKENS;
- provider prompt-cache reads + writes <= the input tokens.

A count outside these is a bad response (``BadResponse``): retried, then a failed call, as an
HTTP agent's negative usage is (its reply fails validation).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .backends import Completion, GenParams, json_schema
from .usage import reported

PER_MESSAGE_TOKENS = 16
PROMPT_SLACK_TOKENS = 4096
NO_LIMIT_TOKENS = 131_072
OUTPUT_SLACK_TOKENS = 64

BOUND_RULE = (
    "input tokens <= UTF-8 bytes of the request (messages and schema) + "
    f"{PER_MESSAGE_TOKENS} per message + {PROMPT_SLACK_TOKENS}; output tokens <= max(max_tokens "
    f"(or {NO_LIMIT_TOKENS:,} without one), UTF-8 bytes of the reply) + {OUTPUT_SLACK_TOKENS}; "
    "cached input tokens <= input tokens"
)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _content(m: Any) -> str:
    c = getattr(m, "content", m)
    return c if isinstance(c, str) else repr(c)


def max_prompt_tokens(messages: Sequence[Any], response_format: type[BaseModel] | None = None) -> int:
    size = sum(_bytes(_content(m)) for m in messages)
    if response_format is not None:
        size += _bytes(json.dumps(json_schema(response_format)))
    return size + PER_MESSAGE_TOKENS * len(messages) + PROMPT_SLACK_TOKENS


def max_completion_tokens(params: GenParams, reply: str) -> int:
    limit = params.max_tokens if params.max_tokens is not None else NO_LIMIT_TOKENS
    return max(limit, _bytes(reply)) + OUTPUT_SLACK_TOKENS


def usage_problem(
    comp: Completion, messages: Sequence[Any], params: GenParams, response_format: type[BaseModel] | None = None
) -> str | None:
    """Why the usage ``comp`` reports cannot be true of this request, or None when it can."""
    counts = {
        "prompt_tokens": comp.prompt_tokens,
        "completion_tokens": comp.completion_tokens,
        "cache_read_tokens": comp.cache_read_tokens,
        "cache_write_tokens": comp.cache_write_tokens,
    }
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"the endpoint reported impossible usage: {name}={value!r} (expected a non-negative integer)"
    prompt_limit = max_prompt_tokens(messages, response_format)
    if comp.prompt_tokens > prompt_limit:
        return (
            f"the endpoint reported impossible usage: prompt_tokens={comp.prompt_tokens} for a request "
            f"that can use at most {prompt_limit}"
        )
    output_limit = max_completion_tokens(params, comp.text)
    if comp.completion_tokens > output_limit:
        return (
            f"the endpoint reported impossible usage: completion_tokens={comp.completion_tokens} for a "
            f"reply that can use at most {output_limit}"
        )
    if comp.cache_read_tokens + comp.cache_write_tokens > comp.prompt_tokens:
        return (
            "the endpoint reported impossible usage: more cached input tokens "
            f"({comp.cache_read_tokens} read, {comp.cache_write_tokens} written) than prompt_tokens={comp.prompt_tokens}"
        )
    return None


def max_request_tokens(texts: Sequence[str]) -> int:
    """The most input tokens a non-chat request (an embedding batch of ``texts``) can use."""
    return sum(_bytes(t) for t in texts) + PER_MESSAGE_TOKENS * len(texts) + PROMPT_SLACK_TOKENS


__all__ = [
    "BOUND_RULE",
    "max_completion_tokens",
    "max_prompt_tokens",
    "max_request_tokens",
    "reported",
    "usage_problem",
]
