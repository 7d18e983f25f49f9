"""The offline model's debate steps: deterministic heuristics (offline_heuristics), never LLM
judgements. The verdict itself comes from the task format (``TaskFormat.offline_verdict``), so a
plugin task is judged offline too."""

from __future__ import annotations

from pydantic import BaseModel

from ..models import offline_step
from ..util.text import first_sentence
from .debaters import DebateTurnInputs
from .offline_heuristics import describe, heard_personas, heuristic_correct, quality
from .tasks import get_task

__all__ = ["SummaryInputs", "debate_turn", "heuristic_correct", "quality", "reask", "summarize_round"]


def _verdict_text(inp: DebateTurnInputs, fmt: type[BaseModel] | None, reasoning: str | None = None) -> str | BaseModel:
    task = get_task(inp.task)
    reasoning = reasoning or f"[offline heuristic] {inp.persona}: {describe(inp, task.offline_answers(inp.sample))}"
    return task.offline_verdict(inp, fmt, reasoning)


@offline_step("debate_turn")
def debate_turn(inp: DebateTurnInputs, fmt: type[BaseModel] | None) -> str | BaseModel:
    if inp.final:
        return _verdict_text(inp, fmt)
    task = get_task(inp.task)
    lean = task.offline_lean(inp)
    heard = heard_personas(inp)
    after = f" Having heard {', '.join(sorted(set(heard)))}, I adjust my view halfway towards theirs." if heard else ""
    text = (
        f"[offline heuristic] {inp.persona}, round {inp.round}: {describe(inp, task.offline_answers(inp.sample))} "
        f"{lean}{after}"
    ).strip()
    # --stop-early asks for a provisional verdict at the end of every non-final round.
    return _verdict_text(inp, fmt, reasoning=text) if inp.provisional else text


@offline_step("reask")
def reask(inp: DebateTurnInputs, fmt: type[BaseModel] | None) -> str | BaseModel:
    return _verdict_text(inp, fmt)


class SummaryInputs(BaseModel):
    round: int
    messages: list[dict[str, str]]  # {"speaker", "text"}
    previous: str | None = None


@offline_step("summarize_round")
def summarize_round(inp: SummaryInputs, fmt: type[BaseModel] | None) -> str:
    lines = [f"[offline summary] Round {inp.round}:"]
    lines += [
        f"- {m['speaker']}: {first_sentence(m['text'].replace('[offline heuristic] ', ''))}" for m in inp.messages
    ]
    return "\n".join(([inp.previous] if inp.previous else []) + lines)
