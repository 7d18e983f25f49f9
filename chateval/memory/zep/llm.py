"""graphiti-core's LLM client, routed through our model layer.

Every structured step graphiti takes (extract entities, extract facts, dedupe, dates, summaries)
becomes one ``ModelLayer.complete`` call named ``graphiti:<ResponseModel>``, so the model spec,
cache, metering, retries and the concurrency limit are the project's, and the offline model
answers it (``zep.offline``) like any other typed step.
"""

from __future__ import annotations

import json
from typing import Any

from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from graphiti_core.llm_client.client import LLMClient
from graphiti_core.llm_client.config import DEFAULT_MAX_TOKENS, LLMConfig, ModelSize
from graphiti_core.prompts.models import Message
from pydantic import BaseModel, ValidationError

from ...models import CallLog, ModelLayer, StepContext, parse_json_reply
from ...models.steps import StepError, said


class GraphitiMessage(BaseModel):
    role: str
    content: str


class GraphitiStepInputs(BaseModel):
    """What a graphiti step hands us: its response model's name and the messages it built.
    graphiti's steps are not ours, so these messages are all the typed input there is."""

    response_model: str
    messages: list[GraphitiMessage]


def step_name(response_model: type[BaseModel] | None) -> str:
    return f"graphiti:{response_model.__name__ if response_model is not None else 'text'}"


def _autogen(messages: list[Message]) -> list[LLMMessage]:
    out: list[LLMMessage] = []
    for m in messages:
        if m.role == "system":
            out.append(SystemMessage(content=m.content))
        elif m.role == "assistant":
            out.append(AssistantMessage(content=m.content, source="assistant"))
        else:
            out.append(UserMessage(content=m.content, source="user"))
    return out


class LayerLLMClient(LLMClient):
    """An ``LLMClient`` whose calls go through one ``ModelLayer`` into one ``CallLog``.

    graphiti's small/medium model split and its max_tokens are not used: the layer's one model
    spec and generation parameters apply to every step, as for the rest of the project."""

    def __init__(self, layer: ModelLayer, log: CallLog) -> None:
        super().__init__(LLMConfig(model=layer.label, small_model=layer.label), cache=False)  # our layer caches
        self.layer = layer
        self.log = log

    async def _generate_response(
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        model_size: ModelSize = ModelSize.medium,
    ) -> dict[str, Any]:
        msgs = _autogen(messages)
        step = StepContext(
            name=step_name(response_model),
            inputs=GraphitiStepInputs(
                response_model=response_model.__name__ if response_model else "text",
                messages=[GraphitiMessage(role=m.role, content=m.content) for m in messages],
            ),
        )
        comp = await self.layer.complete(msgs, step=step, log=self.log, response_format=response_model)
        try:
            return self._read(comp.text, response_model)
        except (ValueError, ValidationError) as first:
            problem = str(first).splitlines()[0][:200]
        # One bounded re-ask, as for our own typed steps. A JSONDecodeError must not escape:
        # graphiti's tenacity wrapper would retry it with waits of up to two minutes.
        msgs = msgs + [
            AssistantMessage(content=comp.text, source="assistant"),
            UserMessage(
                content=f"That reply was not valid JSON for the required schema ({problem}). "
                "Reply again with only the JSON object.",
                source="user",
            ),
        ]
        comp = await self.layer.complete(msgs, step=step, log=self.log, response_format=response_model)
        try:
            return self._read(comp.text, response_model)
        except (ValueError, ValidationError) as second:
            raise StepError(
                f"step '{step.name}': unreadable reply after one re-ask "
                f"({str(second).splitlines()[0][:200]}); the model said: {said(comp.text)!r}"
            ) from None

    @staticmethod
    def _read(text: str, response_model: type[BaseModel] | None) -> dict[str, Any]:
        if response_model is None:
            try:
                data = parse_json_reply(text)
            except json.JSONDecodeError:
                return {"content": text}
            return data if isinstance(data, dict) else {"content": text}
        data = parse_json_reply(text)
        # Validated here so a malformed reply is re-asked, but the reply's own dict is returned:
        # a model_dump() would add defaults for omitted fields, and graphiti merges attribute
        # replies field by field (an omitted field keeps its old value).
        response_model.model_validate(data)
        return data
