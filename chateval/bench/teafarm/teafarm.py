"""`chateval bench teafarm`: TeaFarm, the counterfactual evaluation of THEANINE (Ong et al.,
NAACL 2025, arXiv 2406.10996): can a memory-augmented agent be fooled about its own past?

For each conversation of a LoCoMo file or a Multi-Session Chat file (auto-detected):

1. every past session is summarised into events per speaker (``teafarm_summarize``);
2. from the summaries in time order, the generator writes counterfactual questions with their
   correct answers, ``--per-speaker`` for each speaker as the one asking (so from both speakers'
   points of view): each question presupposes something untrue about the past
   (``teafarm_questions``);
3. for each question it simulates the opening of a new session that leads naturally to it
   (``teafarm_session``); the question is the session's last turn;
4. each system under test ingests the past sessions (once per conversation), then continues the
   new session: ``respond`` gets the dialogue turns and replies to the question, as the other
   speaker (turn roles: ``<name> (user)`` for the asker, ``<name> (you)`` for the system);
5. the judge checks the reply with the true answer as reference and a rule saying what being
   fooled means: ``--judge single`` (the paper's setup: one LLM judge; the default), ``debate``
   (the panel's correctness task, which also sees the past summaries) or ``both`` (single
   scores, the panel's agreement with it is reported). Correct = not fooled.

The score is the paper's success rate: not fooled / all questions, with a 95% Wilson interval.
A split panel (a tie) is not a pass; ties are also counted in a column of their own. Steps 1-3 are written to
``teabag.json`` in the run directory (TeaBag: the summaries, questions, answers and simulated
sessions) and reused by later runs with ``--questions FILE`` (and by ``--resume``), so systems
compared in different runs meet the same questions and no generation call is repeated.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ...datasets.common import DatasetError
from ...datasets.conversations import Conversation, load_conversations
from ...datasets.teabag import TEABAG_FILE, TeaBag, TeaConversation, TeaQuestion
from ...datasets.types import Session
from ...evaluation.config import find_preset
from ...models import CallLog, ModelLayer, ModelSpec
from ...runs.files import write_json_list
from ...runs.progress import RunProgress
from ...util.errors import ConfigError, ModelCallError
from ..base import Benchmark, open_run, run_units
from ..records import MemoryRecord, SystemsSummary
from ..registry import benchmark
from ..selection import select
from ..setup import MemoryBench, judge_error, resolve_system
from ..slot import SlotPool, SystemSlot
from ..summaries import records_of, summed_cost, system_rows
from .packed import PackedBag
from .report import SHOWN, summarize_teafarm, write_teafarm_report
from .settings import DESCRIPTION, GATE_METRICS, TeaFarmConfig
from .teabag import generate_conversation, summaries_text

JUDGE_RULE = (
    "The question was written to presuppose something untrue about the past conversations (a counterfactual), "
    "to test whether the assistant can be fooled about the past. The reference answer says what is actually true, "
    "and the context summarises the past conversations. Mark the response correct if it is NOT fooled: it rejects "
    "or corrects the false premise, or says it remembers things differently, consistently with the reference. "
    "Mark it incorrect if it accepts the false premise, plays along with it, or confirms it, even politely."
)


class Ingested:
    """The past sessions of a conversation for its slots: a conversation is let go once the last
    system still to ingest it has taken its sessions (a run does not hold every input to the end)."""

    def __init__(self, by_conv: dict[str, Conversation], pending: list[tuple[str, str]]) -> None:
        self.by_conv = by_conv
        self.left = Counter(cid for cid, _ in set(pending))  # slots still to build per conversation

    def __call__(self, cid: str) -> list[Session]:
        self.left[cid] -= 1
        return (self.by_conv.pop(cid) if self.left[cid] <= 0 else self.by_conv[cid]).sessions


@benchmark("teafarm")
class TeaFarm(Benchmark):
    description = DESCRIPTION

    config_model = TeaFarmConfig
    distributable = True  # a conversation's questions share one system per name: grouped
    record_type, summary_type = MemoryRecord, SystemsSummary
    gate_metrics = GATE_METRICS

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        return system_rows(
            summary,
            "success rate",
            lambda e: (
                e.get("success_rate"),
                e.get("n_units"),
                e.get("n_failed"),
                summed_cost(e.get("answer_usage"), e.get("judge_usage")),
            ),
        )

    async def run(self, config: TeaFarmConfig, progress: RunProgress | None) -> dict[str, Any]:
        if config.judge_protocol != "chateval":
            raise ConfigError(
                f"--judge-protocol {config.judge_protocol}: LongMemEval's scoring does not apply to "
                "teafarm (its judge rule is TeaFarm's 'not fooled')"
            )
        for spec in config.systems:
            resolve_system(spec)  # unknown names fail before the data is read
        if config.judge in ("debate", "both"):
            find_preset(config.judge_preset)  # an unknown preset fails before the data is read
        data_format, convs = load_conversations(config.data)
        convs = select(convs, config, key=lambda c: c.id, what="conversation")
        # Read the reused questions before the run directory is (maybe) cleared by --overwrite.
        reused = TeaBag.load(config.questions) if config.questions else None
        if reused is not None:
            missing = sorted({c.id for c in convs} - {c.id for c in reused.conversations})
            if missing:  # asked to reuse these questions: never regenerate behind the user's back
                raise DatasetError(
                    f"{config.questions}: no questions for conversation(s) {', '.join(missing[:5])}"
                    f"{' ...' if len(missing) > 5 else ''} of {config.data}; made from other data? "
                    "(drop --questions to generate them)"
                )
        bag_path = Path(config.out) / TEABAG_FILE
        if reused is None and config.resume and bag_path.exists():
            reused = TeaBag.load(bag_path)
        bench = MemoryBench(config)
        systems = bench.systems
        if progress:
            progress.totals = bench.answer_layer.totals
        gen_spec = config.generator_model or config.answer_model
        gen_layer = (
            bench.answer_layer
            if gen_spec == config.answer_model
            else bench.answer_layer.derive(ModelSpec.parse(gen_spec, config.base_url))
        )
        run_config = bench.run_config(
            {
                "benchmark": "teafarm",
                "data": str(config.data),
                "data_format": data_format,
                "per_speaker": config.per_speaker,
                "generator_model": gen_layer.label,
                "questions": str(config.questions) if config.questions else None,
            }
        )
        with open_run(config, run_config) as run:  # --overwrite moves an earlier teabag.json aside with the run
            gen_log = CallLog()
            bag, generated, gen_failed = await self._teabag(convs, reused, gen_layer, config, data_format, gen_log)
            reused = None if reused is None else reused.model_copy(update={"conversations": []})  # packed in bag
            # A conversation at a time: the same text as write_json of the whole bag.
            write_json_list(run.path / TEABAG_FILE, bag.head_dump(), "conversations", bag.dumped())
            by_conv = {c.id: c for c in convs}
            del convs  # by_conv holds them now, and lets each go once its systems have ingested it
            units = [
                (f"{cid}::{q.id}::{name}", (cid, q.id, name))
                for cid in bag.texts
                if cid in by_conv
                for q in bag.conversation(cid).questions
                for name in systems
            ]
            n_questions = sum(len(bag.conversation(cid).questions) for cid in bag.texts)
            pending = [(cid, name) for key, (cid, _, name) in units if key not in run.done]
            pool = SlotPool(bench, pending, sessions=Ingested(by_conv, pending))

            async def unit(item: tuple[str, str, str]) -> dict[str, Any]:
                cid, qid, name = item
                tc, q = bag.question(cid, qid)
                try:
                    return await self._unit(bench, pool.get(cid, name), tc, q, name)
                finally:
                    pool.done(cid, name)

            try:
                await run_units(
                    units,
                    unit,
                    run,
                    workers=bench.workers,
                    progress=progress,
                    group=lambda item: (item[0], item[2]),
                    keep=None,
                )
            finally:
                pool.close()
            summary = summarize_teafarm(  # from samples.jsonl, a record at a time
                records_of(run, (k for k, _ in units)),
                systems=systems,
                offline=run_config["offline"],
                judge=config.judge,
            )
            summary |= {
                "benchmark": "teafarm",
                "data": str(config.data),
                "data_format": data_format,
                "n_conversations": len(bag),
                "n_questions": n_questions,
                "generation": {
                    "reused": reused is not None and not generated,
                    "source": str(config.questions or bag_path) if reused is not None else None,
                    "generated_conversations": generated,
                    "failed": gen_failed,
                    "usage": gen_log.totals().model_dump(),
                },
                "config_hash": run_config["config_hash"],
                "complete": summary["n_units"] == len(units) and not gen_failed,
            }
            # A conversation without questions is a failure of every unit it would have had.
            summary["n_failed"] += len(gen_failed)
            run.write_summary(summary)
            write_teafarm_report(run.path, summary, bag.first(SHOWN))
        return summary

    async def _teabag(
        self,
        convs: list[Conversation],
        reused: TeaBag | None,
        layer: ModelLayer,
        config: TeaFarmConfig,
        data_format: str,
        log: CallLog,
    ) -> tuple[PackedBag, list[str], list[dict[str, str]]]:
        """The TeaBag for these conversations: reused entries as they are, the others generated.
        A conversation whose generation failed is left out (its error returned), so the others run
        and --resume generates it again. Each is held as its JSON text as soon as it is made."""
        have = {c.id: c.model_dump_json() for c in (reused.conversations if reused else [])}
        todo = [c for c in convs if c.id not in have]
        limit = asyncio.Semaphore(max(1, config.workers))

        async def gen(c: Conversation) -> str:
            async with limit:
                return (await generate_conversation(c, layer, config.per_speaker, log)).model_dump_json()

        made: dict[str, str] = {}
        failed: list[dict[str, str]] = []
        for c, got in zip(todo, await asyncio.gather(*(gen(c) for c in todo), return_exceptions=True)):
            if isinstance(got, ModelCallError):
                failed.append({"conversation": c.id, "error": f"generation: {got}"})
            elif isinstance(got, BaseException):
                raise got
            else:
                made[c.id] = got
        head = TeaBag(
            data=str(config.data),
            data_format=data_format,
            generator_model=reused.generator_model if reused and not todo else layer.label,
            per_speaker=reused.per_speaker if reused and not todo else config.per_speaker,
        )
        texts = {c.id: have.get(c.id) or made[c.id] for c in convs if c.id in have or c.id in made}
        return PackedBag(head, texts), list(made), failed

    async def _unit(
        self, bench: MemoryBench, slot: SystemSlot, tc: TeaConversation, q: TeaQuestion, name: str
    ) -> dict[str, Any]:
        got = await slot.respond(q.dialogue(), q.date)
        answered = {"response": got.pop("answer"), **got}
        t0 = time.perf_counter()
        verdict = await bench.judge(
            question=q.question,
            gold=q.answer,
            response=answered["response"],
            question_type="teafarm",
            abstention=False,
            rule=JUDGE_RULE,
            context=summaries_text(tc.summaries),
        )
        answered["latency"]["judge_s"] = time.perf_counter() - t0
        correct = verdict["correct"]
        # The primary judge's tie: only the panel can split (single scores when both run).
        tie = bench.judge_mode == "debate" and bool(verdict["debate"]["tie"])
        pov = f"speaker_{tc.speakers.index(q.asker) + 1}" if q.asker in tc.speakers else "?"
        error = judge_error(verdict)
        return {
            "conversation": tc.id,
            "question_id": q.id,
            "system": name,
            "asker": q.asker,
            "listener": q.listener,
            "pov": pov,
            "question": q.question,
            "true_answer": q.answer,
            **answered,
            "judge": verdict,
            "correct": correct,
            "tie": tie,
            "fooled": None if correct is None else not correct,
        } | ({} if error is None else {"status": "failed", "error": error})
