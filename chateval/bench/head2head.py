"""`chateval bench head2head`: two memory systems answer the same questions; the debate panel
judges each pair of answers in both presentation orders; win / tie / loss rates of A vs B.

Data is auto-detected: a LongMemEval file (S, M or oracle; entries with 'haystack_sessions') or a
LoCoMo file (locomo10.json format; entries with 'conversation' and 'qa'). A *case* is one
LongMemEval question (both systems ingest its sessions and answer at question_date) or one LoCoMo
QA (each system ingests the conversation's sessions once and answers every QA of it, at the date
of the conversation's last session).

Judging is pairwise with position calibration, always on: each case is debated with A's answer
shown first ("original") and with B's answer shown first ("swapped"); each debater's scores are
averaged over the two orders (FairEval's balanced position calibration) and the panel combines
the calibrated debaters' verdicts with the preset's aggregation (majority vote by default; a
split vote is a tie). The combined verdict is the unit's winner: 'A' (a win for A), 'B' (a loss)
or 'tie'. The share of cases whose two order verdicts differ is the judge's order disagreement.

With ``--context gold`` (the default) the panel sees the gold answer as its reference and a rule
for checking each response against it (question-type aware), so it can check facts; questions
without a gold answer (LoCoMo adversarial) get a rule instead. ``--context none`` shows only the
question and the two answers: the panel then judges plausibility and helpfulness, not facts.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


from ..evaluation.config import EvalConfig, find_preset, load_preset
from ..datasets.common import DatasetError, read_json
from ..datasets.locomo import CATEGORIES, locomo_conversations
from ..datasets.longmemeval import lme_questions
from ..debate.panel import JudgeResult
from ..debate.samples import Sample, Verdict
from ..debate.transcript import turn_records
from ..util.errors import ConfigError
from ..evaluation.evaluator import Evaluator
from ..memory.types import Session
from ..runs.progress import RunProgress
from .base import Benchmark, _error_text, benchmark, open_run, run_units
from .lme_judge import ABSTENTION, GUIDELINES
from .head2head_report import SIDES, summarize_head2head, write_head2head_report
from .head2head_multi import multi_case, summarize_multi, write_multi_report
from .selection import select
from .settings.head2head import DESCRIPTION, Head2HeadConfig
from .setup import MemoryBench, resolve_system
from .slot import SlotPool, SystemSlot

_TO_SIDE = {"1": "A", "2": "B", "tie": "tie"}

# --- what the panel is told with --context gold -------------------------------------------
_PAIR_RULE = ("Check each response against the reference answer with this rule: {rule} Prefer the response "
              "that is correct by this rule. If both or neither are, prefer the one that is more accurate, then "
              "the more helpful one. Length and style do not outweigh facts.")
_CHECK = GUIDELINES["multi-session"]  # the generic 'contains the correct answer' rule
_LOCOMO_TEMPORAL = (_CHECK + " Dates may be given relative to the conversation (e.g. 'the week before "
                    "9 June 2023'); a response naming the same day, week, month or year the reference names "
                    "is correct.")
_UNANSWERABLE = ("The conversation never gives the information this question asks for (the question presupposes "
                 "something that was not said, or mixes up who said it). A response is correct if it says the "
                 "information is not available or was not mentioned; it is incorrect if it answers as if it were "
                 "known. Prefer the correct response; if both or neither are, prefer the more accurate one.")


@dataclass
class Case:
    key: str
    group: str  # the sessions a system ingests: one question (LongMemEval) or one conversation (LoCoMo)
    question: str
    gold: str | None
    now: datetime
    qtype: str  # the label per-type tables use
    sessions: list[Session]
    rule: str | None  # the checking rule shown with --context gold
    names: set[str] = field(default_factory=set)  # what --types matches
    meta: dict[str, Any] = field(default_factory=dict)


def load_cases(path: str | Path) -> tuple[str, list[Case]]:
    """('longmemeval' | 'locomo', cases) from an official file of either benchmark, read once."""
    data = read_json(path, "LongMemEval or LoCoMo")
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and "haystack_sessions" in first:
        return "longmemeval", _lme_cases(data, path)
    if isinstance(first, dict) and "conversation" in first and "qa" in first:
        return "locomo", _locomo_cases(data, path)
    raise DatasetError(f"{path}: neither a LongMemEval file (a list of entries with 'haystack_sessions') nor a "
                       "LoCoMo file (a list of conversations with 'conversation' and 'qa')")


def _lme_cases(data: list[Any], path: str | Path) -> list[Case]:
    out = []
    for q in lme_questions(data, path):
        label = "abstention" if q.is_abstention else q.question_type
        rule = ABSTENTION if q.is_abstention else GUIDELINES.get(q.question_type, _CHECK)
        out.append(Case(key=q.question_id, group=q.question_id, question=q.question, gold=q.answer,
                        now=q.question_date, qtype=label, sessions=q.sessions, rule=rule,
                        names={label, q.question_type}, meta={"abstention": q.is_abstention,
                                                              "question_type": q.question_type}))
    return out


def _locomo_cases(data: list[Any], path: str | Path) -> list[Case]:
    out = []
    for i, conv in enumerate(locomo_conversations(data, path)):
        if not conv.sessions:
            raise DatasetError(f"{path}: conversation {i} ({conv.id}): no sessions")
        now = max(s.date for s in conv.sessions)
        for j, qa in enumerate(conv.qa):
            name = CATEGORIES.get(qa.category, "unknown")
            label = f"{qa.category}-{name}"
            if qa.category == 5 or qa.answer is None:
                rule = None  # no gold answer: the unanswerable rule, shown without a reference
            else:
                rule = _LOCOMO_TEMPORAL if qa.category == 2 else _CHECK
            out.append(Case(key=f"{conv.id}::qa{j}", group=conv.id, question=qa.question, gold=qa.answer, now=now,
                            qtype=label, sessions=conv.sessions, rule=rule,
                            names={label, name, str(qa.category)},
                            meta={"conversation": conv.id, "category": qa.category, "evidence": qa.evidence,
                                  "adversarial_answer": qa.adversarial_answer}))
    return out


def judging_inputs(case: Case, context: str) -> tuple[str | None, str | None]:
    """(reference, guidelines) the panel sees for a case."""
    if context == "none":
        return None, None
    if case.gold is None or case.meta.get("category") == 5:
        return None, _UNANSWERABLE
    return case.gold, _PAIR_RULE.format(rule=case.rule or _CHECK)


def _side_verdict(v: Verdict | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {"winner": _TO_SIDE.get(v.winner or "", None),
            "scores": {"A": v.scores.get("answer_1"), "B": v.scores.get("answer_2")},
            "votes": {"A": v.votes.get("1", 0), "B": v.votes.get("2", 0), "tie": v.votes.get("tie", 0)} if v.votes else {},
            "n_valid": v.n_valid, "note": v.note}


def verdict_record(result: JudgeResult) -> dict[str, Any]:
    """The panel's result in A/B terms (answer_1 is always A's answer in the original order)."""
    orders = result.orders or {}
    combined = _side_verdict(result.verdict)
    return {
        "verdict": combined["winner"] if combined else None,
        "panel": combined,
        "agents": [{"agent": a.agent, "persona": a.persona, "winner": _TO_SIDE.get(a.winner or "", None),
                    "scores": {"A": a.scores.get("answer_1"), "B": a.scores.get("answer_2")},
                    "parse_error": a.parse_error, "reasked": a.reasked} for a in result.agents],
        "orders": {"original": ({"shown_first": "A"} | (_side_verdict(orders.get("original")) or {"winner": None})),
                   "swapped": ({"shown_first": "B"} | (_side_verdict(orders.get("swapped")) or {"winner": None}))},
        "order_disagreement": result.order_disagreement,
        "transcript": turn_records(result.transcript),
    }


# --- the benchmark ------------------------------------------------------------------------


@benchmark("head2head")
class HeadToHead(Benchmark):
    description = DESCRIPTION

    config_model = Head2HeadConfig
    distributable = True  # a conversation's cases share its systems: one group, one Ray worker

    async def run(self, args: Head2HeadConfig, progress: RunProgress | None) -> dict[str, Any]:
        if args.judge is not None:
            raise ConfigError("--judge does not apply to head2head: the debate panel always judges "
                              "(choose it with --judge-preset and --judge-model)")
        names = [resolve_system(s).name for s in args.systems]  # unknown names fail before the data is read
        if len(names) < 2 or len(set(names)) != len(names):
            raise ConfigError(f"--systems: head2head compares two or more different systems, e.g. A,B or A,B,C "
                              f"(got '{','.join(names)}')")
        preset = load_preset(find_preset(args.judge_preset))
        dataset, cases = load_cases(args.data)
        if args.types:
            known = sorted({n for c in cases for n in c.names})
            unknown = [t for t in args.types if t not in known]
            if unknown:
                raise ConfigError(f"--types: no question of type '{unknown[0]}' in {args.data} "
                                  f"(types: {', '.join(sorted({c.qtype for c in cases}))})")
            cases = [c for c in cases if c.names & set(args.types)]
        cases = select(cases, args, key=lambda c: c.key, kind=lambda c: c.qtype, what="case")
        bench = MemoryBench(args, need_judges=False)
        systems = bench.systems
        if progress:
            progress.totals = bench.answer_layer.totals
        judge_spec = args.judge_model or args.answer_model
        evaluator = Evaluator(EvalConfig.merged(preset, {"task": "pairwise", "swap": True, "model": judge_spec,
                                                         "structured": args.structured}),
                              layer=bench.judge_layer)
        config = bench.config({"benchmark": "head2head", "data": str(args.data), "dataset": dataset,
                               "context": args.context, "types": args.types, "order": dict(zip(SIDES, systems)) if len(systems) == 2 else systems,
                               "judge": "debate-pairwise-swap",
                               "judge_panel": evaluator.run_config()["judging"]})
        by_key = {c.key: c for c in cases}
        if len(by_key) != len(cases):
            raise DatasetError(f"{args.data}: duplicate question ids")

        with open_run(args, config) as run:
            by_group = {c.group: c.sessions for c in cases}
            pool = SlotPool(bench, [(c.group, s) for c in cases if c.key not in run.done for s in systems],
                            sessions=by_group.__getitem__)

            async def unit(c: Case) -> dict[str, Any]:
                try:
                    if len(systems) > 2:
                        return await multi_case(c, {s: pool.get(c.group, s) for s in systems}, evaluator, args.context)
                    return await self._case(c, [pool.get(c.group, s) for s in systems], evaluator, args.context)
                finally:
                    for s in systems:
                        pool.done(c.group, s)

            try:
                records = await run_units([(c.key, c) for c in cases], unit, run, workers=bench.workers,
                                          progress=progress, group=lambda c: c.group)
            finally:
                pool.close()
            multi = len(systems) > 2
            summarize = summarize_multi if multi else summarize_head2head
            summary = summarize(records, systems=systems, offline=config["offline"])
            summary |= {"benchmark": "head2head", "data": str(args.data), "dataset": dataset, "context": args.context,
                        "n_cases": len(cases), "judge_preset": args.judge_preset, "judge_model": bench.judge_layer.label,
                        "answer_model": bench.answer_layer.label, "config_hash": config["config_hash"],
                        "complete": len(records) == len(cases)}
            run.write_summary(summary)
            (write_multi_report if multi else write_head2head_report)(run.path, summary)
        return summary

    @staticmethod
    async def _case(c: Case, slots: list[SystemSlot], evaluator: Evaluator, context: str) -> dict[str, Any]:
        record: dict[str, Any] = {
            "case_id": c.key, "question_type": c.qtype, "question": c.question, "gold": c.gold,
            "date": c.now.isoformat(), "systems": {s: sl.name for s, sl in zip(SIDES, slots)}, "meta": c.meta,
        }
        results = await asyncio.gather(*(sl.respond(c.question, c.now) for sl in slots), return_exceptions=True)
        errors = []
        answers, usage, latency, tokens, contexts = {}, {}, {}, {}, {}
        for side, sl, res in zip(SIDES, slots, results):
            if isinstance(res, asyncio.CancelledError):
                raise res
            if isinstance(res, BaseException):
                errors.append(f"system {side} ({sl.name}): {_error_text(res)}")
                continue
            answers[side], usage[side], latency[side] = res["answer"], res["usage"], res["latency"]
            tokens[side], contexts[side] = res["context_tokens"], res["context"]
        record |= {"answers": answers, "contexts": contexts, "context_tokens": tokens, "usage": usage,
                   "latency": latency}
        if errors:
            return record | {"status": "failed", "error": "; ".join(errors)}
        reference, guidelines = judging_inputs(c, context)
        record["reference_shown"] = reference is not None
        t0 = time.perf_counter()
        result = await evaluator.judge(Sample(id=c.key, question=c.question, answer_1=answers["A"],
                                              answer_2=answers["B"], reference=reference, guidelines=guidelines,
                                              meta={"abstention": bool(c.meta.get("abstention"))}))
        latency["judge_s"] = time.perf_counter() - t0
        usage["judge"] = result.usage.model_dump()
        record |= verdict_record(result)
        if result.status != "ok":
            return record | {"status": "failed", "error": f"judge: {result.error}"}
        return record
