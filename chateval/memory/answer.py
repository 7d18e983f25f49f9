"""The answering step shared by every memory system."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from ..models.steps import TypedStep
from ..util.text import content_words
from .types import Turn

NO_ANSWER = "I don't have that information in our past conversations."

# generic: our concise-answer instruction. locomo: LoCoMo's answer style, a short phrase reusing the
# conversation's own words where possible (what its token-F1 scoring rewards).
AnswerStyle = Literal["generic", "locomo"]

# How the answer step frames the question. chateval: our system prompt (use the memory; say you
# don't know rather than guess), a current-date line, then the style's instruction. longmemeval:
# LongMemEval's generation default, one user message that asks to read step by step (pull out the
# relevant information first, then reason to the answer) with no abstention hint. locomo: LoCoMo's
# QA setting, one user message with the conversations and the question, no system prompt and no
# current-date line. A dialogue to continue is always framed the chateval way.
# zep: Zep's LongMemEval reader (zep-papers): a system prompt naming the assistant an expert that
# answers from the given context, and one message asking for a brief answer, or to abstain when
# the context does not answer, with no current-date line (the question carries its date).
ReaderPrompt = Literal["chateval", "longmemeval", "locomo", "zep"]


class AnswerInputs(BaseModel):
    question: str
    dialogue: list[Turn] = Field(default_factory=list)  # the current session so far, if any
    context: str
    now: datetime
    memories: list[str] = Field(default_factory=list)  # the context's units, for the offline model
    style: AnswerStyle = "generic"
    reader: ReaderPrompt = "chateval"


def offline_answer(inp: AnswerInputs) -> str:
    """Extractive: the memory sharing most content words with the question (ties: latest)."""
    q = set(content_words(inp.question))
    best, best_overlap = None, 0
    for m in inp.memories:
        overlap = len(q & set(content_words(m)))
        if overlap >= best_overlap and overlap > 0:
            best, best_overlap = m, overlap
    return f"[offline] {best}" if best else f"[offline] {NO_ANSWER}"


ANSWER: TypedStep[AnswerInputs, str] = TypedStep(
    "memory_answer",
    system="memory/answer_system.j2",
    template="memory/answer.j2",
    inputs=AnswerInputs,
    output=str,
    offline=offline_answer,
)
