"""Typed LLM steps: a jinja2 template plus a pydantic output schema (or plain text).

Every LLM step outside the debate (summarise a session, extract facts, rate importance,
answer, ...) is one ``TypedStep``. It renders its template from typed inputs, calls the model
layer (so cache, metering, retries and the concurrency limit apply) and validates the reply.
The offline model implements the same step from the typed inputs alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel, ValidationError

from ..util.errors import ModelCallError
from ..util.prompts import Prompts, get_prompts
from . import CallLog, ModelLayer, StepContext, offline_step, parse_json_reply
from .backends import json_schema

InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound="str | BaseModel")  # plain text, or a pydantic output schema


class StepError(ModelCallError):
    """The model's reply could not be read as the step's output, even after one re-ask."""


def said(text: str) -> str:
    """The first 200 characters of a reply, on one line, for error messages."""
    return " ".join(text.split())[:200]


class TypedStep(Generic[InT, OutT]):
    def __init__(
        self,
        name: str,
        *,
        template: str,
        inputs: type[InT],
        output: type[OutT],
        offline: Callable[[InT], OutT],
        system: str | None = None,
    ) -> None:
        self.name, self.template, self.system = name, template, system
        self.inputs, self.output = inputs, output
        # The output schema a structured step asks for; None for a plain-text step (output=str).
        self.schema: type[BaseModel] | None = (
            output if isinstance(output, type) and issubclass(output, BaseModel) else None
        )
        self.structured = self.schema is not None
        offline_step(name)(lambda inp, fmt: offline(inp))

    def messages(self, inputs: InT, prompts: Prompts) -> list[LLMMessage]:
        variables = inputs.model_dump() | {"inputs": inputs}
        if self.schema is not None:
            variables["schema"] = json_schema(self.schema)
        msgs: list[LLMMessage] = []
        if self.system:
            system = prompts.render(self.system, **variables)
            if system.strip():  # a template may leave the system prompt out (a benchmark's official framing)
                msgs.append(SystemMessage(content=system))
        msgs.append(UserMessage(content=prompts.render(self.template, **variables), source="user"))
        return msgs

    def _read(self, text: str) -> OutT:
        # The casts restate what __init__ established: OutT is str exactly when there is no schema.
        if self.schema is None:
            return cast(OutT, text.strip())
        return cast(OutT, self.schema.model_validate(parse_json_reply(text)))

    async def run(
        self, layer: ModelLayer, inputs: InT, *, log: CallLog | None = None, prompts: Prompts | None = None
    ) -> OutT:
        prompts = prompts or get_prompts()
        msgs = self.messages(inputs, prompts)
        fmt = self.schema
        step = StepContext(name=self.name, inputs=inputs)
        comp = await layer.complete(msgs, step=step, log=log, response_format=fmt)
        try:
            return self._read(comp.text)
        except (ValueError, ValidationError) as first:
            problem = str(first).splitlines()[0][:200]
            layer.forget(msgs, fmt, step=self.name)  # never reuse an unreadable reply
        # One bounded re-ask with the error, as for debate verdicts.
        msgs = msgs + [
            AssistantMessage(content=comp.text, source="assistant"),
            UserMessage(
                content=f"That reply was not valid JSON for the required schema ({problem}). "
                "Reply again with only the JSON object.",
                source="user",
            ),
        ]
        comp = await layer.complete(msgs, step=step, log=log, response_format=fmt)
        try:
            return self._read(comp.text)
        except (ValueError, ValidationError) as second:
            layer.forget(msgs, fmt, step=self.name)
            raise StepError(
                f"step '{self.name}': unreadable reply after one re-ask "
                f"({str(second).splitlines()[0][:200]}); the model said: {said(comp.text)!r}"
            ) from None
