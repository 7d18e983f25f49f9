"""The state of one debate, handed to the strategy: the debaters, the transcript so far, and
what a strategy calls (``start_round``, ``record``, ``settled``, ``summarize``); the panel reads
the verdicts from it afterwards. Below both the panel (which builds it) and the strategies (which
drive it): it sees its panel only through ``DebatePanel``."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from autogen_agentchat.messages import BaseTextChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel

from ..models import CallLog, CallRecord, ModelLayer, PromptPrefix, StepContext, UsageTotals
from ..util.prompts import Prompts
from .debaters import MODERATOR, SUMMARIZER, Debater
from .offline_judge import SummaryInputs
from .parsing import VerdictParseError
from .personas import Persona, agent_names
from .samples import AgentVerdict, Sample
from .tasks import TaskFormat
from .transcript import TranscriptTurn

Order = Literal["original", "swapped"]


class SystemPrompt(BaseModel):
    """One debater's system message and how much of it opens every debater's message."""

    text: str
    prefix: PromptPrefix | None = None  # None in the persona-first layout: nothing is shared up front


class DebatePanel(Protocol):
    """What a debate reads from its panel (``Panel`` in panel.py)."""

    task: TaskFormat
    personas: list[Persona]
    turns: int
    layer: ModelLayer
    prompts: Prompts
    stop_early: bool
    hold_scores: bool
    plain: bool  # ChatEval's single-agent setting: no panel framing
    opener: str  # who opens each round: the moderator, or the user when plain

    def layer_for(self, persona: Persona | None) -> ModelLayer: ...

    def structured_for(self, persona: Persona | None) -> bool: ...

    def system_prompt(self, sample: Sample, name: str, persona: Persona, names: list[str]) -> SystemPrompt: ...

    def verdict_vars(self, sample: Sample, structured: bool) -> dict[str, Any]: ...


class DebateRun:
    """The state of one debate, handed to the strategy."""

    def __init__(self, panel: DebatePanel, sample: Sample, order: Order) -> None:
        self.panel, self.sample, self.order = panel, sample, order
        self.turns = panel.turns
        self.cancellation = CancellationToken()
        self.transcript: list[TranscriptTurn] = []
        self.summarizer_log = CallLog()
        self.stopped_after: int | None = None  # --stop-early: the round after which all agreed
        names = agent_names(panel.personas)
        roster = dict(zip(names, (p.name for p in panel.personas)))
        prompts = [panel.system_prompt(sample, name, persona, names) for name, persona in zip(names, panel.personas)]
        self.debaters = [
            Debater(
                name=name,
                persona=persona,
                layer=panel.layer_for(persona),
                system_message=prompt.text,
                prefix=prompt.prefix,
                task=panel.task.name,
                sample=sample,
                turns=panel.turns,
                panel=roster,
                structured=panel.structured_for(persona),
                response_schema=panel.task.schema_for(sample),
            )
            for name, persona, prompt in zip(names, panel.personas, prompts)
        ]

    def start_round(self, r: int) -> TextMessage:
        provisional = self.panel.stop_early and r < self.turns
        for d in self.debaters:
            d.round, d.phase, d.provisional = r, "debate_turn", provisional
        verdict_vars = self.panel.verdict_vars(self.sample, self.panel.structured_for(None))
        text = self.panel.prompts.render(
            "round.j2",
            round=r,
            turns=self.turns,
            final=r == self.turns,
            hold_scores=self.panel.hold_scores,
            plain=self.panel.plain,
            **verdict_vars,
        )
        if provisional:
            text = text.rstrip("\n") + "\n" + self.panel.prompts.render("provisional.j2", **verdict_vars)
        return TextMessage(content=text, source=self.panel.opener)

    def settled(self, r: int) -> bool:
        """--stop-early: after round ``r``, does every debater's provisional verdict agree? Then
        the debate ends here (the strategy stops) and those verdicts are the final ones. An
        unreadable provisional verdict never settles a debate."""
        if not self.panel.stop_early or r >= self.turns:
            return False
        keys = set()
        for d in self.debaters:
            text = self._text_of(d, r)
            if text is None:
                return False
            v = AgentVerdict(agent=d.name, persona=d.persona.name)
            try:
                self.panel.task.read(text, self.sample, v)
            except VerdictParseError:
                return False
            keys.add(repr(self.panel.task.verdict_key(v)))
        if len(keys) != 1:
            return False
        self.stopped_after = r
        return True

    @property
    def last_round(self) -> int:
        return self.stopped_after or self.turns

    def _text_of(self, d: Debater, r: int) -> str | None:
        for t in reversed(self.transcript):
            if t.speaker == d.name and t.kind == "debate" and t.round == r:
                return t.text
        return None

    def record(self, debater: Debater, r: int, text: str, kind: str = "debate") -> None:
        self.transcript.append(TranscriptTurn.from_calls(debater.name, r, kind, text, self.order, debater.take_calls()))

    async def summarize(self, r: int, texts: list[str], previous: str | None) -> str:
        messages = [{"speaker": d.name, "text": t} for d, t in zip(self.debaters, texts)]
        p = self.panel.prompts
        llm_messages: list[LLMMessage] = [
            SystemMessage(content=p.render("summarizer_system.j2", task_description=self.panel.task.description)),
            UserMessage(
                content=p.render("summarizer.j2", round=r, messages=messages, previous=previous), source=MODERATOR
            ),
        ]
        comp = await self.panel.layer.complete(
            llm_messages,
            step=StepContext(
                name="summarize_round", inputs=SummaryInputs(round=r, messages=messages, previous=previous)
            ),
            log=self.summarizer_log,
            agent=SUMMARIZER,
        )
        self.transcript.append(
            TranscriptTurn.from_calls(SUMMARIZER, r, "summary", comp.text, self.order, self.summarizer_log.records[-1:])
        )
        return comp.text

    def final_text(self, d: Debater) -> str | None:
        return self._text_of(d, self.last_round)

    async def verdict_of(self, d: Debater) -> AgentVerdict:
        v = AgentVerdict(agent=d.name, persona=d.persona.name)
        text = self.final_text(d)
        if text is None:
            v.parse_error = "the strategy recorded no final-round reply for this debater"
            return v
        try:
            self.panel.task.read(text, self.sample, v)
            return v
        except VerdictParseError as first:
            problem = str(first)
            d.client.forget_last()  # an unreadable reply is never reused from the cache
        # One bounded re-ask, then give up: an unreadable verdict is recorded, never guessed.
        d.phase = "reask"
        v.reasked = True
        msg = TextMessage(
            content=self.panel.prompts.render(
                "reask.j2",
                problem=problem,
                **self.panel.verdict_vars(self.sample, self.panel.structured_for(d.persona)),
            ),
            source=self.panel.opener,
        )
        reply = await d.agent.on_messages([msg], self.cancellation)
        answer = reply.chat_message
        # A tool-less AssistantAgent answers with a text message; other kinds have no plain content.
        text = str(answer.content) if isinstance(answer, BaseTextChatMessage) else answer.to_text()
        self.record(d, self.last_round, text, kind="reask")
        try:
            self.panel.task.read(text, self.sample, v)
        except VerdictParseError as second:
            d.client.forget_last()
            v.parse_error = f"{problem}; after re-ask: {second}"
        return v

    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for log in [d.log for d in self.debaters] + [self.summarizer_log]:
            total.merge(log.totals())
        return total

    def records(self) -> list[CallRecord]:
        """Every call of this debate (debaters' and summarizer's), each under its layer's label."""
        return [r for log in [d.log for d in self.debaters] + [self.summarizer_log] for r in log.records]

    def call_errors(self) -> list[str]:
        return [e for log in [d.log for d in self.debaters] + [self.summarizer_log] for e in log.errors]
