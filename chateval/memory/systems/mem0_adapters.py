"""mem0's LLM and embedder, routed through our model layer and our embedder.

mem0's ``Memory`` is synchronous; the system runs it in a worker thread, and these adapters hand
each call back to the run's event loop, so the model spec, cache, metering, retries, deadlines
and secrets handling are the project's (as for Zep) rather than a second OpenAI client's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from mem0.embeddings.base import EmbeddingBase
from mem0.llms.base import LLMBase
from pydantic import BaseModel

from ...models import CallLog, ModelLayer, StepContext
from ..embeddings import Embedder

CALL_TIMEOUT_S = 600.0  # one mem0 step waits at most this long for the loop (the layer has its own deadline)


class Mem0Message(BaseModel):
    role: str
    content: str


class Mem0StepInputs(BaseModel):
    """What a mem0 step hands us: the messages it built (its prompts are mem0's, not ours)."""

    messages: list[Mem0Message]


def _autogen(messages: list[dict[str, Any]]) -> list[LLMMessage]:
    out: list[LLMMessage] = []
    for m in messages:
        content = str(m.get("content") or "")
        if m.get("role") == "system":
            out.append(SystemMessage(content=content))
        elif m.get("role") == "assistant":
            out.append(AssistantMessage(content=content, source="assistant"))
        else:
            out.append(UserMessage(content=content, source="user"))
    return out


class LayerLLM(LLMBase):
    """mem0's ``LLMBase`` answering through one ``ModelLayer`` into one ``CallLog``."""

    def __init__(self, layer: ModelLayer, log: CallLog, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(None)
        self.layer, self.log, self.loop = layer, log, loop

    def generate_response(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        if tools:  # mem0 2.x's memory pipeline asks for JSON, never for tools
            raise NotImplementedError("mem0 through chateval's model layer: tool calls are not supported")
        step = StepContext(
            name="mem0:json" if kwargs.get("response_format") else "mem0:text",
            inputs=Mem0StepInputs(
                messages=[Mem0Message(role=str(m.get("role")), content=str(m.get("content") or "")) for m in messages]
            ),
        )
        coro = self.layer.complete(_autogen(messages), step=step, log=self.log)
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT_S).text


class LayerEmbedding(EmbeddingBase):
    """mem0's ``EmbeddingBase`` over our ``Embedder`` (same vectors, same cache)."""

    def __init__(self, embedder: Embedder, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(None)
        self.embedder, self.loop = embedder, loop

    def _run(self, texts: list[str]) -> list[list[float]]:
        vectors = asyncio.run_coroutine_threadsafe(self.embedder.embed(texts), self.loop).result(CALL_TIMEOUT_S)
        return [[float(x) for x in v] for v in vectors]

    def embed(self, text: Any, memory_action: Any = None) -> list[float]:
        return self._run([str(text)])[0]

    def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
        return self._run([str(t) for t in texts]) if texts else []
