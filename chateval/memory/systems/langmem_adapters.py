"""LangMem's chat model and its store's embedding function, on the run's model layer and embedder.

LangMem extracts memories by tool calls (trustcall over a LangChain chat model); the project's
chat path sends no tools, so the model here is LangChain's ``ChatOpenAI`` on the layer's own
OpenAI client (its endpoint, key, deadline and size cap; the SDK retries nothing), and each of its
requests runs through ``ModelLayer.call``: the layer's concurrency limit, retry policy, metering
and endpoint-down stop, as the embedder's requests do. Not the layer's reply cache: a rerun asks
again (docs/memory.md says so).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import openai
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from pydantic import Field

from ...models import CallLog, ModelLayer
from ...util.errors import ConfigError
from ..embeddings import Embedder

# ChatOpenAI builds a synchronous client too; it is never used (LangMem runs async here), so it
# gets a placeholder key and a loopback address it never calls.
_PLACEHOLDER_URL = "http://127.0.0.1:9/v1"


def _usage(result: ChatResult) -> tuple[int, int]:
    """A reply's (input, output) tokens as the endpoint reported them (0 when it reported none)."""
    usage = getattr(result.generations[0].message, "usage_metadata", None) if result.generations else None
    return (int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))) if usage else (0, 0)


class LayerChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose every request goes through one ``ModelLayer`` into one ``CallLog``."""

    layer: Any = Field(default=None, exclude=True)
    call_log: Any = Field(default=None, exclude=True)

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        parent = super()._agenerate

        def attempt() -> Awaitable[ChatResult]:
            return parent(messages, stop=stop, run_manager=run_manager, **kwargs)

        # "langmem:tools": an extraction or update by tool calls; "langmem:text" anything else.
        step = "langmem:tools" if kwargs.get("tools") else "langmem:text"
        layer: ModelLayer = self.layer
        result: ChatResult = await layer.call(
            attempt, model=layer.label, step=step, price_model=layer.spec.model, tokens=_usage, log=self.call_log
        )
        return result

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("LangMem through chateval's model layer runs async only")


def openai_client(layer: ModelLayer) -> openai.AsyncOpenAI:
    """The layer's OpenAI client, or a one-line error: LangMem needs tool calls on the OpenAI wire."""
    client = getattr(layer.backend, "client", None)
    if not isinstance(client, openai.AsyncOpenAI):
        raise ConfigError(
            f"langmem: LangMem extracts memories by tool calls, which chateval sends over the OpenAI wire "
            f"format only; {layer.spec.label} is not an openai/, openai-compatible/, azure/ or gemini/ model"
        )
    return client


def chat_model(layer: ModelLayer, log: CallLog) -> LayerChatOpenAI:
    """The run's answer model as LangMem's LLM."""
    client = openai_client(layer)
    return LayerChatOpenAI(
        model=layer.spec.model,
        api_key="unused",
        base_url=_PLACEHOLDER_URL,
        root_async_client=client,
        async_client=client.chat.completions,
        max_retries=0,
        temperature=layer.params.temperature,
        max_tokens=layer.params.max_tokens,
        seed=layer.params.seed,
        layer=layer,
        call_log=log,
    )


def embed_function(embedder: Embedder) -> Callable[[Sequence[str]], Awaitable[list[list[float]]]]:
    """The LangGraph store's ``embed``: our embedder (same vectors, same cache)."""

    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in await embedder.embed(list(texts))]

    return embed
