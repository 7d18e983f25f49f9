"""OpenAI's Chat Completions API (OpenAI and every OpenAI-compatible server), lean.

The request body is built here as plain JSON and sent with the openai SDK's low-level ``post``:
the SDK still owns the connection pool, authentication, timeouts and error types (which the
layer's retry policy classifies), but the typed request transform it runs in
``chat.completions.create`` — a recursive walk over every message of a debate's growing
history, which profiling showed to be the largest share of the client's CPU per call — is
skipped. Messages go on the wire as autogen's OpenAI client would send them (speaker in
``name``), so what a server receives does not change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autogen_core.models import AssistantMessage, LLMMessage, ModelInfo, SystemMessage, UserMessage

from .backends import Backend, Completion, GenParams, response_format_arg
from .retry import BadResponse
from .usage import reported


def wire_message(m: LLMMessage) -> dict[str, Any]:
    if isinstance(m, SystemMessage):
        return {"role": "system", "content": m.content}
    if isinstance(m, (UserMessage, AssistantMessage)) and isinstance(m.content, str):
        return {"role": "user" if isinstance(m, UserMessage) else "assistant", "content": m.content, "name": m.source}
    raise BadResponse(f"cannot send a {type(m).__name__} with non-text content")  # never built by chateval


def cached_tokens(usage: Any) -> int:
    """Input tokens served from the provider's prompt cache: OpenAI's (and vLLM's, when its
    prefix caching and usage details are on) ``usage.prompt_tokens_details.cached_tokens``
    (``usage`` as the reply's JSON object, or as the SDK's typed model)."""
    if isinstance(usage, dict):
        details = usage.get("prompt_tokens_details")
    else:
        details = getattr(usage, "prompt_tokens_details", None)
        if details is None and isinstance(getattr(usage, "model_extra", None), dict):
            details = usage.model_extra.get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, dict) else getattr(details, "cached_tokens", None)
    return int(value) if isinstance(value, (int, float)) and value > 0 else 0


class OpenAIBackend(Backend):
    def __init__(self, client: Any, model: str, model_info: ModelInfo, cache_key_param: bool = False) -> None:
        self.client, self.model, self.model_info = client, model, model_info
        # prompt_cache_key routes a sample's calls to the same cache machine (OpenAI's API);
        # sent only where the API is known to take it: other servers may reject unknown fields.
        self.cache_key_param = cache_key_param

    async def complete(self, messages: Sequence[LLMMessage], *, step, response_format, params: GenParams) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(m) for m in messages],
            "temperature": params.temperature,
        }
        if params.max_tokens is not None:
            body["max_tokens"] = params.max_tokens
        if params.seed is not None:
            body["seed"] = params.seed
        if response_format is not None:
            body["response_format"] = response_format_arg(response_format)
        if self.cache_key_param and step is not None and step.prefix is not None:
            body["prompt_cache_key"] = step.prefix.key
        # The reply's JSON as it came (cast_to=object): building the SDK's typed ChatCompletion
        # (openai's recursive construct_type) was ~6% of a simultaneous batch's CPU, for the four
        # fields read here.
        reply = await self.client.post("/chat/completions", cast_to=object, body=body)
        if not isinstance(reply, dict):  # a 200 whose body is not JSON (a proxy's page)
            raise BadResponse("the reply is not a chat completion (not JSON)")
        choices = reply.get("choices")  # JSON without them: an error object
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise BadResponse("the reply is not a chat completion (no choices)")
        content = message.get("content")
        if not isinstance(content, str):
            raise BadResponse(
                "the model returned a tool call instead of text"
                if message.get("tool_calls")
                else "the endpoint returned an empty reply"
            )
        usage = reply.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            text=content,
            prompt_tokens=reported("prompt_tokens", usage.get("prompt_tokens")),
            completion_tokens=reported("completion_tokens", usage.get("completion_tokens")),
            cache_read_tokens=cached_tokens(usage),
            finish_reason=str(choice.get("finish_reason")),  # type: ignore[union-attr]
        )

    async def close(self) -> None:
        await self.client.close()
