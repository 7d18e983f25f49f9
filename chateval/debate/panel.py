"""One debate on one sample: build the debaters, run the strategy, read and combine verdicts."""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..models import ModelLayer, ModelSpec, PromptPrefix, UsageTotals, register_price
from ..models.pool import endpoint_name
from ..util.endpoints import EndpointFields
from ..util.errors import ChatevalError, ConfigError
from ..util.interrupts import UserCodeExit, contain_exits
from ..util.prompts import Prompts
from . import offline_judge  # noqa: F401  (registers the offline model's debate steps)
from .aggregate import Method, aggregate, combine_swapped, unswap
from .consistency import Consistency
from .debaters import MODERATOR
from .parsing import DEFAULT_SCALE
from .personas import NO_PERSONA, Persona
from .run_state import DebateRun, Order, SystemPrompt
from .samples import AgentVerdict, Sample, TaskName, Verdict
from .shortcuts import EarlyStop, Escalation, model_calls
from .strategies import STRATEGIES, Strategy
from .strategies.base import SummaryMode
from .tasks import TaskFormat, get_task
from .transcript import TranscriptTurn

# shared-prefix (default): the task and data first, byte-identical for every debater of a
# sample, then the persona and panel framing, so provider prefix caches reuse the long shared
# part across debaters and rounds. The published ChatEval template does the same (question
# and answers before the role description). persona-first: the persona opens the prompt
# (our layout before issue 26), kept as an option.
PromptLayout = Literal["shared-prefix", "persona-first"]


INPUT_FIELDS = {"question", "answer", "answer_1", "answer_2", "reference", "context", "meta"}


class JudgeResult(BaseModel):
    """Everything about one judged sample: one line of samples.jsonl."""

    id: str
    task: TaskName
    status: Literal["ok", "failed"] = "ok"
    verdict: Verdict | None = None
    agents: list[AgentVerdict] = Field(default_factory=list)
    transcript: list[TranscriptTurn] = Field(default_factory=list)
    orders: dict[str, Verdict | None] | None = None  # with --swap: each order's verdict, original numbering
    order_disagreement: bool | None = None
    usage: UsageTotals = Field(default_factory=UsageTotals)
    # A panel of several endpoints (debaters with models of their own): the usage per endpoint.
    usage_by_endpoint: dict[str, UsageTotals] | None = None
    # --samples N: how the N repeats' verdicts spread (the verdict is their majority)
    consistency: Consistency | None = None
    calls: int = 0  # model calls made for this sample (answered, cached or failed)
    escalation: Escalation | None = None
    stop_early: EarlyStop | None = None
    latency_s: float = 0.0
    error: str | None = None
    label: Any = None
    model: str = ""
    # What was judged (question, answers, reference, context), so a run directory can be read
    # on its own: the viewer shows it next to the debate without the input file.
    inputs: dict[str, Any] = Field(default_factory=dict)


class Panel:
    """A configured judge: task format, personas, strategy, rounds, aggregation, model."""

    def __init__(
        self,
        *,
        task: str,
        personas: list[Persona],
        strategy: str,
        turns: int,
        aggregate: Method,
        layer: ModelLayer,
        prompts: Prompts,
        swap: bool = False,
        keep_raw_history: bool = False,
        structured: Literal["auto", "on", "off"] = "auto",
        summary_mode: SummaryMode = "append",
        hold_scores: bool = False,
        framing: Literal["panel", "none"] = "panel",
        layout: PromptLayout = "shared-prefix",
        escalate: bool = False,
        stop_early: bool = False,
    ) -> None:
        if not personas:
            raise ConfigError("the panel needs at least one persona")
        if turns < 1:
            raise ConfigError(f"--turns must be at least 1 (got {turns})")
        self.task: TaskFormat = get_task(task)
        self.task.check_aggregate(aggregate)
        if swap and self.task.name != "pairwise":
            raise ConfigError("--swap applies only to the pairwise task")
        self.personas, self.turns, self.aggregate = personas, turns, aggregate
        self.strategy_cls: type[Strategy] = STRATEGIES.get(strategy)
        self.strategy_name = strategy
        self.layer, self.swap = layer, swap
        self.prompts = prompts.with_templates(self.task.prompts) if self.task.prompts else prompts
        self.keep_raw_history, self.structured = keep_raw_history, structured
        self.summary_mode: SummaryMode = "append" if keep_raw_history else summary_mode
        # ChatEval puts no restriction on the discussion rounds; hold_scores asks debaters to
        # keep scores for the last round (our earlier default).
        self.hold_scores = hold_scores
        # none: ChatEval's single-agent setting: no persona, no panel framing, and the user (not a
        # moderator: the wire's ``name``) asks for the verdict.
        if framing == "none" and (len(personas) != 1 or turns != 1):
            raise ConfigError("framing 'none' (the single-agent setting) takes one agent for one turn")
        self.plain, self.opener = framing == "none", ("user" if framing == "none" else MODERATOR)
        if layout not in ("shared-prefix", "persona-first"):
            raise ConfigError(f"--prompt-layout must be shared-prefix or persona-first (got {layout!r})")
        self.layout: PromptLayout = layout
        self.stop_early = stop_early
        # --escalate: ChatEval's single judge (one agent, one turn, no persona or panel framing)
        # in both orders screens each item; the panel debates only those where its two verdicts differ.
        self.screen: Panel | None = None
        if escalate:
            if self.task.name != "pairwise":
                raise ConfigError(f"--escalate applies only to the pairwise task (not {self.task.name})")
            self.screen = Panel(
                task=task,
                personas=[NO_PERSONA],
                strategy="one_by_one",
                turns=1,
                aggregate=aggregate,
                layer=layer,
                prompts=prompts,
                swap=True,
                structured=structured,
                layout=layout,
                framing="none",
            )
        self._layers: dict[str, ModelLayer] = {}
        for p in personas:  # fail early on a bad per-persona model spec
            self.layer_for(p)

    def layer_for(self, persona: Persona | None) -> ModelLayer:
        """The model layer of a debater: the panel's, or one for its own model spec (persona
        file, preset's ``debater_models``, ``--debater-model``), sharing the panel's cache and
        meter. Its calls are metered under ``provider/model@host:port`` when it has an
        endpoint of its own, so usage, cost and dry runs show each endpoint apart."""
        own = persona.endpoint() if persona is not None else None
        if own is None:
            return self.layer
        key = own.model_dump_json()
        if key not in self._layers:
            self._layers[key] = debater_layer(self.layer, own)
        return self._layers[key]

    def endpoints(self) -> list[str]:
        """What the panel's calls are metered under: the panel's label, then each debater's own."""
        names = [self.layer.label] + [self.layer_for(p).label for p in self.personas]
        return list(dict.fromkeys(names))

    def structured_for(self, persona: Persona | None) -> bool:
        if self.structured == "auto":
            return self.layer_for(persona).supports_structured
        return self.structured == "on"

    def template_vars(self, sample: Sample) -> dict[str, Any]:
        return {
            "n_agents": len(self.personas),
            "turns": self.turns,
            "plain": self.plain,
            "summarized": self.strategy_cls.uses_summarizer,
            "question": sample.question,
            "answer": sample.answer,
            "answer_1": sample.answer_1,
            "answer_2": sample.answer_2,
            "reference": sample.reference,
            "context": sample.context,
            "aspects": sample.aspects or [],
            "guidelines": sample.guidelines,
        } | self._scale_vars(sample)

    def system_prompt(self, sample: Sample, name: str, persona: Persona, names: list[str]) -> SystemPrompt:
        """The system message of debater ``name``: the task and data (identical for every
        debater of the sample), and the persona with the panel framing, in the panel's layout."""
        variables = self.template_vars(sample)
        shared = self.prompts.render(self.task.system_template, **variables)
        if self.plain:  # ChatEval's single-agent setting: the task and data only
            return SystemPrompt(text=shared)
        framing = self.prompts.render("_panel_framing.j2", **variables)
        own = self.prompts.render(
            "_panel.j2", **variables, agent_name=name, persona_role=persona.role, others=[n for n in names if n != name]
        )
        if self.layout == "persona-first":
            return SystemPrompt(text=f"{own}\n{framing}\n\n{shared}")
        head = f"{shared}\n\n{framing}\n\n"
        key = hashlib.sha256(f"{sample.id}\0{shared}".encode()).hexdigest()[:32]
        return SystemPrompt(text=head + own, prefix=PromptPrefix(chars=len(head), key=f"chateval-{key}"))

    @staticmethod
    def _scale_vars(sample: Sample) -> dict[str, int]:
        low, high = sample.scale or DEFAULT_SCALE
        return {"scale_min": low, "scale_max": high}

    def verdict_vars(self, sample: Sample, structured: bool) -> dict[str, Any]:
        return {"task": self.task.name, "aspects": sample.aspects or [], "structured": structured} | self._scale_vars(
            sample
        )

    def templates(self) -> list[str]:
        names = self.task.templates + [
            "round.j2",
            "reask.j2",
            "_panel.j2",
            "_data_blocks.j2",
            "_fences_note.j2",
            "_panel_framing.j2",
        ]
        if self.strategy_cls.uses_summarizer:
            names += ["summarizer.j2", "summarizer_system.j2"]
        if self.stop_early:
            names.append("provisional.j2")
        return names

    def calls_per_round(self) -> int:
        """One order's calls per round: each debater once, plus the summary that follows every
        round but the last (counted with the round it follows)."""
        return len(self.personas) + (1 if self.strategy_cls.uses_summarizer else 0)

    def planned_calls(self) -> int:
        """The panel's calls per item with every round run and no re-ask."""
        per_order = self.calls_per_round() * self.turns - (1 if self.strategy_cls.uses_summarizer else 0)
        return per_order * (2 if self.swap else 1)

    async def _debate(self, sample: Sample, order: Order) -> tuple[DebateRun, list[AgentVerdict]]:
        run = DebateRun(self, sample, order)
        strategy = self.strategy_cls(summary_mode=self.summary_mode)
        try:
            with contain_exits():  # a strategy's or task's sys.exit() fails this sample only
                await strategy.run(run)
                verdicts = list(await asyncio.gather(*(run.verdict_of(d) for d in run.debaters)))
        except UserCodeExit as exc:
            raise DebateFailed(str(exc), run) from None
        except Exception as exc:
            errors = run.call_errors()
            # autogen re-wraps agent errors in its own text; prefer our clean message.
            raise DebateFailed(errors[-1] if errors else _short(exc), run) from None
        return run, verdicts

    async def judge(self, sample: Sample) -> JudgeResult:
        missing = self.task.missing(sample)
        if missing:
            raise ConfigError(f"sample '{sample.id}': the {self.task.name} task needs {', '.join(missing)}")
        if self.screen is None:
            return await self._judge(sample)
        t0 = time.perf_counter()
        first = await self.screen._judge(sample)
        for t in first.transcript:
            t.stage = "screen"
        screen_calls = model_calls(first.usage)
        planned = self.planned_calls()
        mixed = len(self.endpoints()) > 1
        if mixed:
            first.usage_by_endpoint = {self.layer.label: first.usage.model_copy()}
        if first.status == "ok" and first.order_disagreement is False:
            first.escalation = Escalation(
                escalated=False, screen=first.orders or {}, screen_calls=screen_calls, panel_calls_planned=planned
            )
            return first
        result = await self._judge(sample)
        result.escalation = Escalation(
            escalated=True,
            screen=first.orders or {},
            screen_calls=screen_calls,
            panel_calls=result.calls,
            panel_calls_planned=planned,
        )
        result.transcript = first.transcript + result.transcript
        result.usage.merge(first.usage)
        if mixed and result.usage_by_endpoint is not None:
            result.usage_by_endpoint.setdefault(self.layer.label, UsageTotals()).merge(first.usage)
        result.calls += screen_calls
        result.latency_s = time.perf_counter() - t0
        return result

    async def _judge(self, sample: Sample) -> JudgeResult:
        t0 = time.perf_counter()
        result = JudgeResult(
            id=sample.id,
            task=self.task.name,
            label=sample.label,
            model=self.layer.label,
            inputs=sample.model_dump(include=INPUT_FIELDS, exclude_none=True),
        )
        runs: list[DebateRun] = []
        try:
            run, verdicts = await self._debate(sample, "original")
            runs.append(run)
            if self.swap:
                srun, sverdicts = await self._debate(sample.swapped(), "swapped")
                runs.append(srun)
                v_orig = aggregate(self.task.name, self.aggregate, verdicts)
                v_swap = aggregate(self.task.name, self.aggregate, sverdicts)
                v_swap = unswap(v_swap) if v_swap else None
                result.orders = {"original": v_orig, "swapped": v_swap}
                if v_orig and v_swap:
                    result.order_disagreement = v_orig.winner != v_swap.winner
                verdicts = [combine_swapped(a, b) for a, b in zip(verdicts, sverdicts)]
            result.agents = verdicts
            result.verdict = aggregate(self.task.name, self.aggregate, verdicts)
            if result.verdict is None:
                result.status = "failed"
                result.error = f"no readable verdict from any of the {len(verdicts)} debaters"
        except DebateFailed as f:
            runs.append(f.run)
            result.status, result.error = "failed", str(f)
        result.transcript = [t for r in runs for t in r.transcript]
        for r in runs:
            result.usage.merge(r.usage())
        result.calls = model_calls(result.usage)
        if len(self.endpoints()) > 1:
            result.usage_by_endpoint = {name: UsageTotals() for name in self.endpoints()}
            for r in runs:
                for rec in r.records():
                    result.usage_by_endpoint.setdefault(rec.model, UsageTotals()).add(rec)
        if self.stop_early and self.turns > 1:
            rounds = {r.order: r.last_round for r in runs}
            skipped = sum(self.turns - n for n in rounds.values())
            result.stop_early = EarlyStop(
                planned_rounds=self.turns,
                rounds=rounds,
                rounds_skipped=skipped,
                calls_skipped=skipped * self.calls_per_round(),
            )
        result.latency_s = time.perf_counter() - t0
        return result


def debater_layer(panel: ModelLayer, own: EndpointFields) -> ModelLayer:
    """A layer for one debater's model spec, derived from the panel's. The panel's base URL
    carries over only to a model of the panel's provider (another provider has its own)."""
    spec_text = own.model or panel.spec.label
    provider = spec_text.partition("/")[0]
    url = own.base_url or (panel.spec.base_url if provider == panel.spec.provider else None)
    spec = ModelSpec.parse(spec_text, url, own.api_key_env)
    if own.price is not None:  # before the layer is built: a cost cap asks for the price
        register_price(spec.model, *own.price)
    name = None
    if spec.base_url and spec.base_url != panel.spec.base_url:
        name = f"{spec.label}@{','.join(endpoint_name(u.strip()) for u in spec.base_url.split(','))}"
    return panel.derive(spec, max_connections=own.max_connections, name=name)


class DebateFailed(ChatevalError):
    def __init__(self, message: str, run: DebateRun) -> None:
        super().__init__(message)
        self.run = run


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"[:300]
