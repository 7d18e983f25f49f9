"""The autogen view of the model layer: a ``ChatCompletionClient`` bound to one agent's step and
call log, so autogen's agents call through chateval's cache, metering, retries and limits."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from .backends import Completion, StepContext
from .usage import CallLog, approx_tokens


class CompletionLayer(Protocol):
    """What a client needs of the model layer (``layer.ModelLayer`` is one). A protocol, not an
    import: the layer builds its clients, so the client module stays below it."""

    @property
    def model_info(self) -> ModelInfo: ...

    async def complete(
        self,
        messages: Sequence[LLMMessage],
        *,
        step: StepContext | None = None,
        log: CallLog | None = None,
        agent: str | None = None,
        response_format: type[BaseModel] | None = None,
    ) -> Completion: ...

    def forget(
        self, messages: Sequence[LLMMessage], response_format: type[BaseModel] | None = None, *, step: str | None = None
    ) -> None: ...


class LayerClient(ChatCompletionClient):
    """An autogen model client view of the layer, bound to one agent's step and call log."""

    def __init__(
        self,
        layer: CompletionLayer,
        *,
        log: CallLog | None,
        step: StepContext | Callable[[Sequence[LLMMessage]], StepContext] | None,
        agent: str | None,
        response_format: Callable[[], type[BaseModel] | None] | None,
        prepare: Callable[[Sequence[LLMMessage]], list[LLMMessage]] | None = None,
    ) -> None:
        self.layer = layer
        # Rewrites the messages just before they are sent (the step still sees the originals).
        self._prepare = prepare
        self.log = log if log is not None else CallLog()
        self._step = step
        self.agent = agent
        self._response_format = response_format
        self.last_call: tuple[list[LLMMessage], type[BaseModel] | None] | None = None

    def forget_last(self) -> None:
        """Drop the last reply from the cache (its verdict could not be read)."""
        if self.last_call is not None:
            self.layer.forget(*self.last_call)

    def current_step(self, messages: Sequence[LLMMessage] = ()) -> StepContext | None:
        return self._step(messages) if callable(self._step) else self._step

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        fmt = json_output if isinstance(json_output, type) else None
        if fmt is None and self._response_format is not None:
            fmt = self._response_format()
        step = self.current_step(messages)
        sent = self._prepare(messages) if self._prepare is not None else messages
        self.last_call = (list(sent), fmt)
        comp = await self.layer.complete(sent, step=step, log=self.log, agent=self.agent, response_format=fmt)
        return CreateResult(
            finish_reason="stop",
            content=comp.text,
            usage=RequestUsage(prompt_tokens=comp.prompt_tokens, completion_tokens=comp.completion_tokens),
            cached=comp.cached,
        )

    async def create_stream(
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        # Debaters do not stream; yield the whole result so streaming callers still work.
        result = await self.create(messages, **kwargs)
        yield result

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        t = self.log.totals()
        return RequestUsage(prompt_tokens=t.prompt_tokens, completion_tokens=t.completion_tokens)

    def total_usage(self) -> RequestUsage:
        return self.actual_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        # autogen's OpenAI counter needs tiktoken encodings (downloaded at run time): approximate.
        return sum(approx_tokens(m.content) for m in messages if isinstance(m.content, str))

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return 1_000_000 - self.count_tokens(messages)

    @property
    def capabilities(self) -> ModelCapabilities:
        info = self.layer.model_info
        return {
            "vision": info["vision"],
            "function_calling": info["function_calling"],
            "json_output": info["json_output"],
        }

    @property
    def model_info(self) -> ModelInfo:
        return self.layer.model_info
