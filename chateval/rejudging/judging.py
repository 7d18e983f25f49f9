"""The LLM judges of a rejudge (official, panel / preset:NAME, template:PATH): one judgement of one
answer is one unit of the benchmarks' unit runner (completion cache, --resume, --max-cost, the
local or Ray executor), written to ``OUT/<set>/<judge>/samples.jsonl``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..bench.executor import error_text
from ..bench.judge import OFFICIAL_JUDGE, JudgeInputs, guidelines_for, official_correct
from ..debate.offline_judge import heuristic_correct
from ..debate.samples import Sample
from ..evaluation.config import EvalConfig, find_preset, load_preset
from ..evaluation.evaluator import Evaluator
from ..models import CallLog
from ..models.steps import TypedStep
from ..util.prompts import Prompts
from .judges import JudgeSpec, read_reply
from .sets import GradedItem

TEMPLATE_NAME = "rejudge/user_template.j2"

# A user-supplied judge prompt (a vendor's, which we do not ship): rendered with question, gold,
# response, question_type; its plain-text reply is read by ``read_reply``. Offline: the reference-
# overlap heuristic.
TEMPLATE_JUDGE: TypedStep[JudgeInputs, str] = TypedStep(
    "rejudge_template",
    template=TEMPLATE_NAME,
    inputs=JudgeInputs,
    output=str,
    offline=lambda inp: "yes" if heuristic_correct(inp.response, inp.gold, abstention=inp.abstention) else "no",
)


class LLMJudge:
    """One LLM judge, ready to judge items (bad presets or templates fail when it is built)."""

    def __init__(
        self, spec: JudgeSpec, base: dict[str, Any], layer: Any | None = None, template_source: str | None = None
    ) -> None:
        self.spec, self.base = spec, dict(base)
        settings = dict(base)
        if spec.kind == "panel":
            data = load_preset(find_preset(spec.preset or "chateval_default"))
            self.evaluator = Evaluator(EvalConfig.merged(data, settings, {"task": "correctness"}), layer=layer)
        else:
            single = {"strategy": "one_by_one", "agents": 1, "turns": 1, "task": "correctness"}
            self.evaluator = Evaluator(EvalConfig.merged(settings, single), layer=layer)
        self.layer = self.evaluator.layer
        self.prompts: Prompts | None = None
        self.template_source = template_source
        if spec.kind == "template" and spec.template:
            if self.template_source is None:
                self.template_source = Path(spec.template).read_text(encoding="utf-8")
            self.prompts = self.evaluator.prompts.with_templates({TEMPLATE_NAME: self.template_source})
            self.prompts.template(TEMPLATE_NAME)  # a syntax error: one line, before any call

    def __reduce__(self) -> tuple[Any, ...]:
        # To a Ray worker: its settings, the model layer (pickled as its settings) and the
        # template's text (the file may not exist there); prompts are rebuilt on arrival.
        return (_rebuilt, (self.spec, self.base, self.layer, self.template_source))

    def config(self) -> dict[str, Any]:
        """What changes this judge's verdicts (hashed for --resume)."""
        out: dict[str, Any] = {"judge": self.spec.model_dump(), "model": self.layer.label}
        if self.spec.kind == "panel":
            out["panel"] = self.evaluator.run_config()["judging"]
        return out

    async def judge(self, item: GradedItem, gold: str) -> dict[str, Any]:
        inputs = JudgeInputs(
            question=item.question,
            gold=gold,
            response=item.answer,
            question_type=item.question_type or "single-session-user",
            abstention=item.abstention,
        )
        log = CallLog()
        if self.spec.kind == "official":
            reply = await OFFICIAL_JUDGE.run(self.layer, inputs, log=log, prompts=self.evaluator.prompts)
            return {"accepted": official_correct(reply), "reply": reply[:200], "usage": log.totals().model_dump()}
        if self.spec.kind == "template":
            reply = await TEMPLATE_JUDGE.run(self.layer, inputs, log=log, prompts=self.prompts)
            verdict = read_reply(reply)
            if verdict is None:
                raise ValueError(f"the template judge's reply says neither yes nor no: {reply[:80]!r}")
            return {"accepted": verdict, "reply": reply[:200], "usage": log.totals().model_dump()}
        result = await self.evaluator.judge(
            Sample(
                id=item.id,
                question=item.question,
                answer=item.answer,
                reference=gold,
                guidelines=guidelines_for(inputs.question_type, inputs.abstention) if item.question_type else None,
            ),
            "correctness",
        )
        if result.status != "ok" or result.verdict is None:
            raise ValueError(result.error or "the panel gave no verdict")
        return {
            "accepted": bool(result.verdict.correct),
            "votes": result.verdict.votes,
            "usage": result.usage.model_dump(),
        }


def _rebuilt(spec: JudgeSpec, base: dict[str, Any], layer: Any, source: str | None) -> LLMJudge:
    return LLMJudge(spec, base, layer=layer, template_source=source)


def unit_fn(judge: LLMJudge) -> Callable[[tuple[GradedItem, str, str]], Awaitable[dict[str, Any]]]:
    """The unit function: (item, gold, key) -> a record (failed judgements are recorded as such)."""

    async def unit(u: tuple[GradedItem, str, str]) -> dict[str, Any]:
        item, gold, key = u
        try:
            out = await judge.judge(item, gold)
            return {"key": key, "id": item.id, "status": "ok", **out}
        except Exception as e:  # recorded as failed (redone by --resume); the rejudge goes on
            return {"key": key, "id": item.id, "status": "failed", "error": error_text(e)}

    return unit
