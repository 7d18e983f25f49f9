"""Typed samples and verdicts for the three task formats."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

# A registered task format (chateval.debate.tasks.TASKS): the built-ins or one a plugin adds.
TaskName = str
Winner = Literal["1", "2", "tie"]
Method = Literal["vote", "mean"]


def context_text(context: Any) -> str | None:
    """Normalise a context (string, list of strings, or list of {role/speaker, content/text})."""
    if context is None:
        return None
    if isinstance(context, str):
        return context
    lines = []
    for item in context:
        if isinstance(item, str):
            lines.append(item)
        elif isinstance(item, dict):
            who = item.get("role") or item.get("speaker") or ""
            text = item.get("content", item.get("text", ""))
            lines.append(f"{who}: {text}" if who else str(text))
        else:
            lines.append(str(item))
    return "\n".join(lines)


class Sample(BaseModel):
    """One item to judge. ``answer`` for score/correctness, ``answer_1``/``answer_2`` for pairwise."""

    model_config = ConfigDict(extra="forbid")

    id: str
    question: str
    answer: str | None = None
    answer_1: str | None = None
    answer_2: str | None = None
    reference: str | None = None
    context: str | None = None
    label: Any = None
    aspects: list[str] | None = None
    guidelines: str | None = None  # extra judging instructions, e.g. per benchmark question type
    # score task: the rating scale (lowest, highest); None = 1-10. Topical-Chat's per-aspect
    # protocol rates each aspect on its USR scale (1-3, or 0-1 for groundedness).
    scale: tuple[int, int] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("context", mode="before")
    @classmethod
    def _ctx(cls, v: Any) -> Any:
        return context_text(v)

    @field_validator("scale")
    @classmethod
    def _scale(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not v[0] < v[1]:
            raise ValueError(f"scale {v[0]}-{v[1]}: the lowest score must be below the highest")
        return v

    def swapped(self) -> Sample:
        return self.model_copy(update={"answer_1": self.answer_2, "answer_2": self.answer_1})


class _ChoiceWhenSet(BaseModel):
    """``choice`` is written only when a task sets it, so the built-in tasks' records keep their shape."""

    @model_serializer(mode="wrap")
    def _without_empty_choice(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("choice", 0) is None:
            del data["choice"]
        return data


class AgentVerdict(_ChoiceWhenSet):
    agent: str
    persona: str
    winner: Winner | None = None  # pairwise
    scores: dict[str, float] = Field(default_factory=dict)  # pairwise: answer_1/answer_2; score: aspects
    correct: bool | None = None  # correctness
    choice: str | None = None  # a task that names one of its classes (a plugin's yes/no task)
    parse_error: str | None = None
    reasked: bool = False

    @property
    def ok(self) -> bool:
        return self.parse_error is None


class Verdict(_ChoiceWhenSet):
    """The panel's aggregated verdict."""

    task: TaskName
    method: Method
    winner: Winner | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    score: float | None = None  # score task: mean over aspects
    correct: bool | None = None  # correctness; None with tie=True on a split panel
    choice: str | None = None  # a task naming one of its classes; None with tie=True on a split panel
    tie: bool = False
    votes: dict[str, int] = Field(default_factory=dict)
    n_agents: int = 0
    n_valid: int = 0
    note: str | None = None
