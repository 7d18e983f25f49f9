"""Debaters: one autogen ``AssistantAgent`` per persona, built fresh for every sample.

autogen agents keep their history, so a new set is made per sample (and per presentation
order with --swap); each agent is only ever called by one coroutine at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import LLMMessage, UserMessage
from pydantic import BaseModel, Field

from ..models import CallLog, CallRecord, ModelLayer, PromptPrefix, StepContext
from .personas import Persona
from .samples import Sample

MODERATOR = "moderator"
SUMMARIZER = "summarizer"


class DebateTurnInputs(BaseModel):
    """Typed inputs of one debate turn (what the offline model reads instead of the prompt)."""

    task: str
    sample: Sample
    agent: str
    persona: str
    round: int
    turns: int
    final: bool
    provisional: bool = False  # --stop-early: a non-final round that ends with a provisional verdict
    phase: str = "debate_turn"
    panel: dict[str, str] = Field(default_factory=dict)  # agent name -> persona name
    heard: list[str] = Field(default_factory=list)  # agents whose messages this turn can see
    heard_summary: bool = False


class Debater:
    def __init__(
        self,
        *,
        name: str,
        persona: Persona,
        layer: ModelLayer,
        system_message: str,
        task: str,
        sample: Sample,
        turns: int,
        panel: dict[str, str],
        structured: bool,
        response_schema: type[BaseModel],
        prefix: PromptPrefix | None = None,
    ) -> None:
        self.name = name
        self.persona = persona
        self.log = CallLog()
        self.round = 0
        self.phase = "debate_turn"
        self.provisional = False  # set per round by the debate (--stop-early)
        self._taken = 0
        self._task, self._sample, self._turns, self._panel = task, sample, turns, panel
        self._schema = response_schema if structured else None
        self._prefix = prefix  # the provider cache hint: the shared start of the system message
        self.client = layer.client(
            log=self.log, step=self._step, agent=name, response_format=self._format, prepare=self._attribute
        )
        self.agent = AssistantAgent(name=name, model_client=self.client, system_message=system_message)

    @property
    def final(self) -> bool:
        return self.round >= self._turns

    def _format(self) -> type[BaseModel] | None:
        return self._schema if (self.final or self.provisional or self.phase == "reask") else None

    def _attribute(self, messages: Sequence[LLMMessage]) -> list[LLMMessage]:
        """Put the speaker's persona name into the content of other speakers' messages: many
        open models' chat templates drop the OpenAI ``name`` field, and a debater must know
        who said what (ChatEval's debaters see each message under its speaker's role)."""
        out: list[LLMMessage] = []
        for m in messages:
            label = self._panel.get(m.source) if isinstance(m, UserMessage) else None
            if label is None and isinstance(m, UserMessage) and m.source == SUMMARIZER:
                label = "Summarizer"
            if label is not None and isinstance(m.content, str):
                m = m.model_copy(update={"content": f"[{label}] {m.content}"})
            out.append(m)
        return out

    def _step(self, messages: Sequence[LLMMessage] = ()) -> StepContext:
        sources = [m.source for m in messages if isinstance(m, UserMessage)]
        return StepContext(
            name=self.phase,
            prefix=self._prefix,
            inputs=DebateTurnInputs(
                task=self._task,
                sample=self._sample,
                agent=self.name,
                persona=self.persona.name,
                round=self.round,
                turns=self._turns,
                final=self.final,
                provisional=self.provisional and not self.final,
                phase=self.phase,
                panel=self._panel,
                heard=sorted({s for s in sources if s in self._panel and s != self.name}),
                heard_summary=SUMMARIZER in sources,
            ),
        )

    def take_calls(self) -> list[CallRecord]:
        """Calls made since the last take: the cost of the turn just spoken."""
        new = self.log.records[self._taken :]
        self._taken = len(self.log.records)
        return new
