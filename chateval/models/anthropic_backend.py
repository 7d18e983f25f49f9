"""Anthropic's Messages API, sent with the anthropic SDK directly (autogen-ext's client sends
the system prompt as one string and drops the cache fields of the usage).

With a prompt-cache hint (``StepContext.prefix``) long enough to be cached, the system prompt
goes as two text blocks with a ``cache_control`` breakpoint after the shared one, so every
debater's call of a sample reads the task and data from Anthropic's prompt cache.
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are metered; Anthropic's
``input_tokens`` excludes both, so the metered prompt tokens are their sum (as OpenAI counts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autogen_core.models import AssistantMessage, LLMMessage, ModelInfo, SystemMessage, UserMessage

from .backends import Backend, Completion, GenParams
from .retry import BadResponse
from .usage import reported

# Anthropic caches nothing shorter than this many tokens (2048 for the Haiku models). Tokens
# are estimated as characters / 4 (the project's local rule): a hint below the minimum is
# dropped, since a breakpoint there would only cost the write surcharge for nothing.
MIN_CACHE_TOKENS = 1024
MIN_CACHE_TOKENS_HAIKU = 2048


def min_cache_tokens(model: str) -> int:
    return MIN_CACHE_TOKENS_HAIKU if "haiku" in model.lower() else MIN_CACHE_TOKENS


def request_body(
    model: str, messages: Sequence[LLMMessage], params: GenParams, prefix_chars: int = 0
) -> dict[str, Any]:
    """The Messages API body; ``prefix_chars`` > 0 puts a cache breakpoint after that many
    characters of the system prompt."""
    system = "\n".join(m.content for m in messages if isinstance(m, SystemMessage))
    turns: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if not isinstance(m, (UserMessage, AssistantMessage)) or not isinstance(m.content, str):
            raise BadResponse(f"cannot send a {type(m).__name__} with non-text content")  # never built by chateval
        # Consecutive turns of one role are combined by the API; names travel in the content
        # (the debaters label other speakers' messages themselves).
        turns.append({"role": "user" if isinstance(m, UserMessage) else "assistant", "content": m.content})
    body: dict[str, Any] = {
        "model": model,
        "messages": turns,
        "max_tokens": params.max_tokens or 4096,
        "temperature": params.temperature,
    }
    if system and 0 < prefix_chars < len(system) and prefix_chars // 4 >= min_cache_tokens(model):
        body["system"] = [
            {"type": "text", "text": system[:prefix_chars], "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": system[prefix_chars:]},
        ]
    elif system:
        body["system"] = system
    return body


class AnthropicBackend(Backend):
    sends_schema = False  # no JSON-schema parameter in the Messages API: the prompt describes it

    def __init__(self, client: Any, model: str, model_info: ModelInfo) -> None:
        self.client, self.model, self.model_info = client, model, model_info

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        prefix = step.prefix.chars if step is not None and step.prefix is not None else 0
        body = request_body(self.model, messages, params, prefix)
        try:
            reply = await self.client.messages.create(**body)
            text = "".join(b.text for b in reply.content if getattr(b, "type", None) == "text")
            usage = reply.usage
        except (AttributeError, TypeError) as exc:  # a 200 that is not a message (a proxy's page)
            raise BadResponse(f"the reply is not a message ({type(exc).__name__}: {exc})") from None
        read = reported("cache_read_input_tokens", getattr(usage, "cache_read_input_tokens", None))
        write = reported("cache_creation_input_tokens", getattr(usage, "cache_creation_input_tokens", None))
        return Completion(
            text=text,
            prompt_tokens=reported("input_tokens", usage.input_tokens) + read + write,
            completion_tokens=reported("output_tokens", usage.output_tokens),
            cache_read_tokens=read,
            cache_write_tokens=write,
            finish_reason=str(reply.stop_reason),
        )

    async def close(self) -> None:
        await self.client.close()
