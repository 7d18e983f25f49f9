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
from typing import Any

from ...datasets.common import DatasetError
from ...debate.samples import Sample
from ...evaluation.config import find_preset, load_preset
from ...evaluation.judges import Judges
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from ..base import Benchmark, open_run, run_units
from ..executor import error_text
from ..records import PairRecord, PairSummary, verdict_record
from ..registry import benchmark
from ..selection import select
from ..setup import MemoryBench, resolve_system
from ..slot import SlotPool, SystemSlot
from ..summaries import records_of
from .multi import multi_case, summarize_multi, write_multi_report
from .pairs import Case, judging_inputs, load_cases
from .report import SIDES, summarize_head2head, write_head2head_report
from .settings import DESCRIPTION, GATE_METRICS, Head2HeadConfig

# --- the benchmark ------------------------------------------------------------------------


@benchmark("head2head")
class HeadToHead(Benchmark):
    description = DESCRIPTION

    config_model = Head2HeadConfig
    distributable = True  # a conversation's cases share its systems: one group, one Ray worker
    record_type, summary_type = PairRecord, PairSummary
    gate_metrics = GATE_METRICS

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        usage = summary.get("usage") or {}
        if summary.get("ranking") is not None:  # several systems: each one's strength
            return [
                {
                    "system": r["system"],
                    "n": summary.get("n"),
                    "metric": "P(beats average), Bradley–Terry",
                    "value": r["win_prob_vs_average"],
                    "recall_all@5": None,
                    "failed": summary.get("n_failed"),
                    "cost_usd": (usage.get(r["system"]) or {}).get("cost_usd"),
                }
                for r in summary["ranking"]
            ]
        sides = summary.get("systems") or {}
        # A's wins, ties and A's losses (B's wins), with which system is A.
        return [
            {
                "system": f"A={sides.get('A')} vs B={sides.get('B')}",
                "n": summary.get("n"),
                "metric": "A wins",
                "value": (summary.get("wins") or {}).get("rate"),
                "ties": (summary.get("ties") or {}).get("rate"),
                "A losses": (summary.get("losses") or {}).get("rate"),
                "recall_all@5": None,
                "failed": summary.get("n_failed"),
                "cost_usd": (usage.get("total") or {}).get("cost_usd"),
            }
        ]

    async def run(self, config: Head2HeadConfig, progress: RunProgress | None) -> dict[str, Any]:
        if config.judge is not None:
            raise ConfigError(
                "--judge does not apply to head2head: the debate panel always judges "
                "(choose it with --judge-preset and --judge-model)"
            )
        names = [resolve_system(s).name for s in config.systems]  # unknown names fail before the data is read
        if len(names) < 2 or len(set(names)) != len(names):
            raise ConfigError(
                f"--systems: head2head compares two or more different systems, e.g. A,B or A,B,C "
                f"(got '{','.join(names)}')"
            )
        load_preset(find_preset(config.judge_preset))  # a bad preset fails before the data is read
        dataset, cases = load_cases(config.data)
        if config.types:
            known = sorted({n for c in cases for n in c.names})
            unknown = [t for t in config.types if t not in known]
            if unknown:
                raise ConfigError(
                    f"--types: no question of type '{unknown[0]}' in {config.data} "
                    f"(types: {', '.join(sorted({c.qtype for c in cases}))})"
                )
            cases = [c for c in cases if c.names & set(config.types)]
        cases = select(cases, config, key=lambda c: c.key, kind=lambda c: c.qtype, what="case")
        bench = MemoryBench(config, need_judges=False)
        systems = bench.systems
        if progress:
            progress.totals = bench.answer_layer.totals
        judges = bench.panel_judges({"task": "pairwise", "swap": True})
        run_config = bench.run_config(
            {
                "benchmark": "head2head",
                "data": str(config.data),
                "dataset": dataset,
                "context": config.context,
                "types": config.types,
                "order": dict(zip(SIDES, systems)) if len(systems) == 2 else systems,
                "judge": "debate-pairwise-swap",
                "judge_panel": judges.run_config()["judging"],
            }
        )
        by_key = {c.key: c for c in cases}
        if len(by_key) != len(cases):
            raise DatasetError(f"{config.data}: duplicate question ids")

        with open_run(config, run_config) as run:
            by_group = {c.group: c for c in cases}  # a group's sessions are read when its slot is made
            pool = SlotPool(
                bench,
                [(c.group, s) for c in cases if c.key not in run.done for s in systems],
                sessions=lambda group: by_group[group].sessions,
            )

            async def unit(c: Case) -> dict[str, Any]:
                try:
                    if len(systems) > 2:
                        return await multi_case(c, {s: pool.get(c.group, s) for s in systems}, judges, config.context)
                    return await self._case(c, [pool.get(c.group, s) for s in systems], judges, config.context)
                finally:
                    for s in systems:
                        pool.done(c.group, s)

            try:
                await run_units(
                    [(c.key, c) for c in cases],
                    unit,
                    run,
                    workers=bench.workers,
                    progress=progress,
                    group=lambda c: c.group,
                    keep=None,  # the summary reads the run's records once, a small view of each
                )
            finally:
                pool.close()
            multi = len(systems) > 2
            summarize = summarize_multi if multi else summarize_head2head
            summary = summarize(records_of(run, by_key), systems=systems, offline=run_config["offline"])
            summary |= {
                "benchmark": "head2head",
                "data": str(config.data),
                "dataset": dataset,
                "context": config.context,
                "n_cases": len(cases),
                "judge_preset": config.judge_preset,
                "judge_model": bench.judge_layer.label,
                "answer_model": bench.answer_layer.label,
                "config_hash": run_config["config_hash"],
                "complete": summary["n_units"] == len(cases),
            }
            run.write_summary(summary)
            (write_multi_report if multi else write_head2head_report)(run.path, summary)
        return summary

    @staticmethod
    async def _case(c: Case, slots: list[SystemSlot], judges: Judges, context: str) -> dict[str, Any]:
        record = c.record(systems={s: sl.name for s, sl in zip(SIDES, slots)})
        results = await asyncio.gather(*(sl.respond(c.question, c.now) for sl in slots), return_exceptions=True)
        errors = []
        answers, usage, latency, tokens, contexts = {}, {}, {}, {}, {}
        for side, sl, res in zip(SIDES, slots, results):
            if isinstance(res, asyncio.CancelledError):
                raise res
            if isinstance(res, BaseException):
                errors.append(f"system {side} ({sl.name}): {error_text(res)}")
                continue
            answers[side], usage[side], latency[side] = res["answer"], res["usage"], res["latency"]
            tokens[side], contexts[side] = res["context_tokens"], res["context"]
        record |= {
            "answers": answers,
            "contexts": contexts,
            "context_tokens": tokens,
            "usage": usage,
            "latency": latency,
        }
        if errors:
            return record | {"status": "failed", "error": "; ".join(errors)}
        reference, guidelines = judging_inputs(c, context)
        record["reference_shown"] = reference is not None
        t0 = time.perf_counter()
        result = await judges.judge(
            Sample(
                id=c.key,
                question=c.question,
                answer_1=answers["A"],
                answer_2=answers["B"],
                reference=reference,
                guidelines=guidelines,
                meta={"abstention": bool(c.meta.get("abstention"))},
            )
        )
        latency["judge_s"] = time.perf_counter() - t0
        usage["judge"] = result.usage.model_dump()
        record |= verdict_record(result)
        if result.status != "ok":
            return record | {"status": "failed", "error": f"judge: {result.error}"}
        return record
