"""`chateval bench locomo`: LoCoMo QA (Maharana et al., ACL 2024) with the official scoring.

Units are (conversation, system). Each unit builds a fresh system, ingests the conversation's
sessions in date order with their dates, then answers every selected QA "now" = the date of the
last session + 1 day. Per QA it records the prediction, context tokens, the dialogue ids the
system retrieved and latencies, and scores:

- token F1 as LoCoMo's ``task_eval/evaluation.py`` computes it (see ``normalize_answer`` and
  ``locomo_f1``): per category, 1 multi-hop = partial F1 over comma-separated sub-answers,
  2 temporal / 4 single-hop = plain F1, 3 open-domain = plain F1 against the gold cut at ';',
  5 adversarial = 1 if the prediction says "no information available" or "not mentioned";
- BLEU-1 on the same normalised, stemmed tokens (not for category 5);
- the LLM judge(s) (``MemoryBench.judge``);
- evidence recall: the share of the QA's evidence dialogue ids among the retrieved turns.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

from ...datasets import LoCoMoConversation, LoCoMoQA, load_locomo
from ...datasets.answers import Answer, load_predictions, match_answers
from ...memory.answer import AnswerStyle, ReaderPrompt
from ...memory.blind import Blind
from ...models import CallLog
from ...runs.files import file_sha256
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from ...util.interrupts import contain_exits
from ..base import Benchmark, open_run, run_units
from ..executor import error_text
from ..records import ConversationRecord, SystemsSummary
from ..registry import benchmark
from ..selection import select
from ..setup import MemoryBench, judge_error
from ..summaries import records_of, summed_cost, system_rows
from .batch import BatchedReader, answerer_for
from .errata import corrected_task
from .metrics import ADVERSARIAL, EvidenceEmpty, category_name, evidence_recall, locomo_bleu1, locomo_f1
from .protocol import locomo_protocol
from .questions import (  # noqa: F401  (TEMPORAL_HINT, NOT_MENTIONED: their old home)
    NOT_MENTIONED,
    TEMPORAL_HINT,
    asked_question,
    cat5_options,
    check_conversations,
    gold_of,
    resolve_choice,
    select_qa,
)
from .report import summarize_locomo, write_locomo_report
from .settings import DESCRIPTION, GATE_METRICS, LoCoMoConfig, parse_categories  # noqa: F401  (parse_categories: its old home)
from .views import LoCoMoRecords

JUDGE_CONCURRENCY = 8  # judge calls in flight per unit (the model layer's own limit still applies)


# --- the benchmark ---------------------------------------------------------------------------


PREDICTIONS = "predictions"  # the method name of a --predictions run
READERS: dict[str, ReaderPrompt] = {"official": "locomo", "chateval": "chateval"}  # --reader-prompt -> framing
Pick = tuple[int, LoCoMoQA]  # (index of the QA in its conversation, the QA)


def pick_questions(conversations: list[LoCoMoConversation], config: LoCoMoConfig) -> dict[str, list[Pick]]:
    """The selected QA per conversation id: categories and --max-questions per conversation, then
    --question-ids (``<sample_id>:<qa index>``), --per-type (per category) and --limit across them."""
    flat = [(c.id, j, q) for c in conversations for j, q in select_qa(c, config.categories, config.max_questions)]
    flat = select(flat, config, key=lambda x: f"{x[0]}:{x[1]}", kind=lambda x: category_name(x[2].category), what="QA")
    out: dict[str, list[Pick]] = {c.id: [] for c in conversations}
    for cid, j, q in flat:
        out[cid].append((j, q))
    return {cid: picks for cid, picks in out.items() if picks}


JUDGES = ("single", "debate")  # the order the headline and the accuracy gate read them in


def _judged(overall: dict[str, Any]) -> dict[str, Any]:
    """The LLM judges' accuracy (J) beside F1: each judge that ran (--judge both: two columns)."""
    return {f"accuracy ({j} judge)": overall.get(f"judge_{j}") for j in JUDGES if overall.get(f"n_judge_{j}")}


@benchmark("locomo")
class LoCoMo(Benchmark):
    description = DESCRIPTION
    config_model = LoCoMoConfig
    distributable = True  # each unit ingests its own question/conversation
    record_type, summary_type = ConversationRecord, SystemsSummary
    gate_metrics = GATE_METRICS

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        return system_rows(
            summary,
            "F1",
            lambda e: (
                (e.get("overall") or {}).get("f1"),
                e.get("n_qa"),
                e.get("n_qa_failed"),
                summed_cost(e.get("answer_usage"), e.get("judge_usage")),
            ),
            lambda e: {
                **_judged(e.get("overall") or {}),
                "evidence recall": (e.get("overall") or {}).get("evidence_recall"),
            },
        )

    @classmethod
    def gate_measures(cls, summary: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, dict[Any, Any]]:
        judged = [
            next((r[f"accuracy ({j} judge)"] for j in JUDGES if f"accuracy ({j} judge)" in r), None) for r in rows
        ]
        return super().gate_measures(summary, rows) | {
            "evidence_recall": {r["system"]: r.get("evidence recall") for r in rows},
            "accuracy": {r["system"]: a for r, a in zip(rows, judged)},
        }

    async def run(self, config: LoCoMoConfig, progress: RunProgress | None) -> dict[str, Any]:
        if config.predictions and config.systems:
            raise ConfigError("--predictions judges a file of answers: leave out --systems")
        if not config.predictions and not config.systems:
            raise ConfigError("--systems is required (or --predictions FILE)")
        categories = config.categories
        conversations = load_locomo(config.data)
        check_conversations(conversations, str(config.data))
        picks = pick_questions(conversations, config)
        preds: dict[str, Answer] = {}
        left_out: list[str] = []
        if config.predictions:
            every = [f"{c.id}\t{q.question}" for c in conversations for q in c.qa]
            wanted = [f"{cid}\t{q.question}" for cid, ps in picks.items() for _, q in ps]
            preds, left_out = match_answers(
                load_predictions(config.predictions),
                every,
                wanted,
                config.predictions,
                allow_missing=config.allow_missing,
                what="sample_id / question",
            )
            picks = {cid: [(j, q) for j, q in ps if f"{cid}\t{q.question}" in preds] for cid, ps in picks.items()}
            picks = {cid: ps for cid, ps in picks.items() if ps}
        bench = MemoryBench(config)
        protocol = locomo_protocol(bench, conversations, picks, config)  # card, --errata: checked before any work
        conversations = [c for c in conversations if c.id in picks]
        if progress:
            progress.totals = bench.answer_layer.totals
        methods = bench.systems + ([PREDICTIONS] if config.predictions else [])
        extra = {
            "benchmark": "locomo",
            "data": str(config.data),
            "categories": categories,
            "max_questions": config.max_questions,
            "question_format": config.question_format,
            "answer_style": config.answer_style,
            "evidence_empty": config.evidence_empty,
            "selection": {cid: [j for j, _ in ps] for cid, ps in picks.items()},
        }
        if bench.systems and config.reader_prompt != "chateval":  # --predictions alone: no answer step runs
            # Recorded only when it is not the earlier framing, so a run made before the option
            # existed still resumes with --reader-prompt chateval.
            extra["reader_prompt"] = config.reader_prompt
        extra |= {"full_context_batch": config.full_context_batch} if config.full_context_batch > 1 else {}
        if config.predictions:
            extra |= {"predictions": str(config.predictions), "predictions_sha256": file_sha256(config.predictions)}
        run_config = bench.run_config(extra | protocol.identity())
        units = [(f"{c.id}::{s}", (c, s)) for c in conversations for s in methods]

        async def unit(item: tuple[LoCoMoConversation, str]) -> dict[str, Any]:
            conv, system = item
            return await self._unit(
                bench,
                conv,
                system,
                picks[conv.id],
                config.question_format,
                preds,
                style=config.answer_style,
                empty=config.evidence_empty,
                reader=READERS[config.reader_prompt],
                batch=config.full_context_batch,
                fixes=protocol.fixes.get(conv.id),
            )

        with open_run(config, run_config) as run:
            await run_units(units, unit, run, workers=bench.workers, progress=progress, keep=None)
            # From samples.jsonl a record at a time: each kept as the few fields the summary and
            # --errata read (views.py), the usage summed as it goes by.
            kept = LoCoMoRecords(records_of(run, (k for k, _ in units)))
            summary = summarize_locomo(kept, systems=methods, categories=categories, offline=run_config["offline"])
            summary |= {
                "benchmark": "locomo",
                "data": str(config.data),
                "n_conversations": len(conversations),
                "n_questions": sum(len(ps) for ps in picks.values()),
                "question_format": config.question_format,
                "answer_style": config.answer_style,
                "reader_prompt": config.reader_prompt if bench.systems else None,
                "full_context_batch": config.full_context_batch if "full_context" in bench.systems else None,
                "evidence_empty": config.evidence_empty,
                "judge_protocol": config.judge_protocol,
                "config_hash": run_config["config_hash"],
                "complete": summary["n_units"] == len(units) and not summary["n_failed"],
                "embedding_usage": bench.embedding_usage(),
            }
            if config.predictions:
                summary |= {
                    "predictions": str(config.predictions),
                    "n_left_out": len(left_out),
                    "left_out": [k.replace("\t", " / ") for k in left_out[:50]],
                }
            summary = protocol.finish(summary, kept.units, methods)
            run.write_summary(summary)
            write_locomo_report(run.path, summary)
        return summary

    async def _unit(
        self,
        bench: MemoryBench,
        conv: LoCoMoConversation,
        name: str,
        picks: list[Pick],
        fmt: str,
        preds: dict[str, Answer],
        *,
        style: AnswerStyle,
        empty: EvidenceEmpty,
        reader: ReaderPrompt = "locomo",
        batch: int = 1,
        fixes: dict[int, Any] | None = None,  # --errata: qa index -> its corrected gold
    ) -> dict[str, Any]:
        log = CallLog()
        async with AsyncExitStack() as stack:
            system = None if name == PREDICTIONS else await stack.enter_async_context(bench.system(name, log))
            has_recall = system is not None and type(system).supports_recall
            if system is not None:
                system.answer_style, system.reader_prompt = style, reader
            t0 = time.perf_counter()
            blind = Blind(conv.sessions)  # the system never sees the data set's ids
            if system is not None:
                await system.ingest_all(blind.sessions)
            ingest_s = time.perf_counter() - t0
            now = max(s.date for s in conv.sessions) + timedelta(days=1)
            answerer = await answerer_for(system, batch, [asked_question(conv.id, qa, fmt) for _, qa in picks], now)
            limit = asyncio.Semaphore(JUDGE_CONCURRENCY)
            judging: list[asyncio.Task] = []
            rows: list[dict[str, Any]] = []
            for index, qa in picks:
                row = {
                    "qa_index": index,
                    "category": qa.category,
                    "category_name": category_name(qa.category),
                    "question": qa.question,
                    "gold": gold_of(qa),
                    "evidence": qa.evidence,
                }
                rows.append(row)
                try:
                    if system is None:
                        self._score(row, qa, preds[f"{conv.id}\t{qa.question}"].text, None, empty)
                    else:
                        with contain_exits():  # this QA fails, not the conversation
                            await self._answer(answerer, blind, conv, qa, row, now, fmt, has_recall, empty)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # this QA fails; the others go on
                    row |= {"status": "failed", "error": error_text(exc)}
                    continue
                judging.append(asyncio.create_task(self._judge(bench, qa, row, limit)))
                judging += corrected_task(self._judge, bench, qa, row, (fixes or {}).get(index), limit)
            await asyncio.gather(*judging)
            failed = [r for r in rows if r.get("status") != "ok"]
            record: dict[str, Any] = {
                "conversation": conv.id,
                "method": name,
                "now": now.isoformat(),
                "n_sessions": len(conv.sessions),
                "qa": rows,
                "latency": {"ingest_s": ingest_s},
                "usage": log.totals().model_dump(),
                "stats": system.stats().model_dump() if system is not None else None,
            }
            if failed:
                record |= {
                    "status": "failed",
                    "error": f"{len(failed)} of {len(rows)} QA failed; first: qa {failed[0]['qa_index']}: "
                    f"{failed[0].get('error')}",
                }
            return record

    @staticmethod
    async def _answer(
        system: Any,
        blind: Blind,
        conv: LoCoMoConversation,
        qa: LoCoMoQA,
        row: dict[str, Any],
        now: Any,
        fmt: str,
        has_recall: bool,
        empty: EvidenceEmpty,
    ) -> None:
        asked = asked_question(conv.id, qa, fmt)
        before = system.stats().recall_s
        t1 = time.perf_counter()
        resp = blind.response(await system.respond(asked, now))
        total_s = resp.latency_s if isinstance(system, BatchedReader) else time.perf_counter() - t1
        recall_s = system.stats().recall_s - before
        prediction = resp.answer
        if fmt == "official" and qa.category == ADVERSARIAL:
            prediction = resolve_choice(resp.answer, cat5_options(conv.id, qa))
        retrieved = list(dict.fromkeys(t for i in resp.recalled for t in i.turn_ids)) if has_recall else None
        LoCoMo._score(row, qa, prediction, retrieved, empty)
        row |= {
            "asked": asked,
            "raw_answer": resp.answer,
            "context": resp.context,
            "context_tokens": resp.context_tokens,
            "tokens_approx": resp.tokens_approx,
            "latency": {"recall_s": recall_s, "answer_s": total_s - recall_s} if has_recall else {"answer_s": total_s},
        }

    @staticmethod
    def _score(
        row: dict[str, Any], qa: LoCoMoQA, prediction: str, retrieved: list[str] | None, empty: EvidenceEmpty
    ) -> None:
        gold = row["gold"]
        row |= {
            "prediction": prediction,
            "retrieved": retrieved,
            "latency": {},
            "no_evidence": not qa.evidence,
            "f1": locomo_f1(qa.category, prediction, gold),
            "bleu1": locomo_bleu1(qa.category, prediction, gold),
            "evidence_recall": evidence_recall(qa.evidence, retrieved, empty),
        }

    @staticmethod
    async def _judge(bench: MemoryBench, qa: LoCoMoQA, row: dict[str, Any], limit: asyncio.Semaphore) -> None:
        adversarial = qa.category == ADVERSARIAL
        # For adversarial questions the judge is told the premise is false; the adversarial answer
        # is what a system that confuses the two speakers would say.
        gold = (
            (
                f"{NOT_MENTIONED} (the question's premise is not supported by the conversation; "
                f"a plausible but wrong answer would be: {row['gold']})"
            )
            if adversarial
            else row["gold"]
        )
        async with limit:
            t0 = time.perf_counter()
            try:
                verdict = await bench.judge(
                    question=qa.question,
                    gold=gold,
                    response=row["prediction"],
                    question_type=f"locomo-{category_name(qa.category)}",
                    abstention=adversarial,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                row |= {"status": "failed", "error": f"judge: {error_text(exc)}"}
                return
            row["latency"]["judge_s"] = time.perf_counter() - t0
        row |= {"judge": verdict, "correct": verdict["correct"], "status": "ok"}
        if error := judge_error(verdict):
            row |= {"status": "failed", "error": error}
