"""`chateval bench longmemeval`: QA accuracy per question type and retrieval metrics.

Units are (question, system). Each unit builds a fresh system, ingests the question's haystack
sessions in date order with their dates, answers at question_date, records the answer, the
exact context, its token count, the system's retrieval and latencies, then judges the answer.
With --retrieval-only no LLM answers or judges: BM25, dense, hybrid (RRF) and every system that
exposes recall are scored on recall_any/recall_all/ndcg_any at k = 1, 3, 5, 10.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..datasets import LMEQuestion, load_longmemeval
from ..memory import MEMORY_SYSTEMS
from ..models import CallLog
from ..progress import RunProgress
from .base import Benchmark, add_run_options, benchmark, open_run, run_units
from .rankers import rank_bm25, rank_dense, rrf
from .report import write_memory_report
from .retrieval_metrics import metrics_at
from .setup import MemoryBench, add_memory_bench_options
from .summaries import summarize_memory_run

BASELINE_RANKERS = ("bm25", "dense", "hybrid")
RECALL_K = 10


def gold_evidence(q: LMEQuestion) -> tuple[set[str], set[str]]:
    """Gold sessions and turns as LongMemEval's retrieval scripts define them: only user turns
    count; a turn is gold if it has has_answer in an evidence session (id containing 'answer');
    a session is gold if it is an evidence session with at least one such turn."""
    turns = {t.id for s in q.sessions if "answer" in s.id for t in s.turns
             if t.role == "user" and t.meta.get("has_answer")}
    sessions = {s.id for s in q.sessions if any(t.id in turns for t in s.turns)}
    return sessions, turns


def retrieval_record(q: LMEQuestion, ranked_sessions: list[str], ranked_turns: list[str]) -> dict[str, Any]:
    gold_s, gold_t = gold_evidence(q)
    if q.is_abstention or not gold_t:
        # Excluded (and counted) as in the official scorer: nothing to retrieve.
        return {"evaluable": False, "reason": "abstention" if q.is_abstention else "no user-side evidence"}
    user_turns = {t.id for s in q.sessions for t in s.turns if t.role == "user"}
    turns = [t for t in dict.fromkeys(ranked_turns) if t in user_turns]
    return {
        "evaluable": True,
        "session": metrics_at(ranked_sessions, gold_s),
        "turn": metrics_at(turns, gold_t),
        "ranked_sessions": ranked_sessions[:RECALL_K],
        "ranked_turns": turns[:RECALL_K],
    }


@benchmark("longmemeval")
class LongMemEval(Benchmark):
    description = "LongMemEval (S, M or oracle file): QA accuracy per question type, retrieval recall/NDCG"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--data", required=True, help="an official LongMemEval file (S, M or oracle), unchanged")
        p.add_argument("--retrieval-only", action="store_true",
                       help="no LLM answers or judges: score retrieval of BM25, dense, hybrid and the systems")
        p.add_argument("--rankers", default=",".join(BASELINE_RANKERS),
                       help="retrieval-only baselines to include (default bm25,dense,hybrid; '' for none)")
        add_memory_bench_options(p, systems_required=False)
        add_run_options(p)

    async def run(self, args: argparse.Namespace, progress: RunProgress | None) -> dict[str, Any]:
        questions = load_longmemeval(args.data, limit=args.limit)
        if not args.retrieval_only and not args.systems:
            from ..errors import ConfigError

            raise ConfigError("--systems is required (or use --retrieval-only for the baseline rankers)")
        bench = MemoryBench(args, need_judges=not args.retrieval_only)
        if progress:
            progress.totals = bench.answer_layer.totals
        rankers = [r for r in (args.rankers.split(",") if args.retrieval_only else []) if r]
        for r in rankers:
            if r not in BASELINE_RANKERS:
                from ..errors import ConfigError

                raise ConfigError(f"--rankers: unknown ranker '{r}' (known: {', '.join(BASELINE_RANKERS)})")
        if args.retrieval_only:
            no_recall = [n for n in bench.systems if not MEMORY_SYSTEMS.get(n).supports_recall]
            if no_recall:
                from ..errors import ConfigError

                raise ConfigError(f"--retrieval-only: {', '.join(no_recall)} expose(s) no recall to score; "
                                  "leave them out of --systems")
        methods = rankers + bench.systems
        config = bench.config({"benchmark": "longmemeval", "data": str(args.data),
                               "retrieval_only": args.retrieval_only, "methods": methods,
                               "uses_judge": not args.retrieval_only})
        # Method-major order: a question's texts embedded by one method are cached before the
        # next method (e.g. hybrid after dense) needs them, instead of being computed twice at once.
        units = [(f"{q.question_id}::{m}", (q, m)) for m in methods for q in questions]

        async def unit(item: tuple[LMEQuestion, str]) -> dict[str, Any]:
            q, method = item
            if method in rankers:
                return await self._rank(bench, q, method)
            return await self._system(bench, q, method, answer=not args.retrieval_only)

        with open_run(args, config) as run:
            records = await run_units(units, unit, run, workers=args.workers, progress=progress)
            summary = summarize_memory_run(records, methods=methods, retrieval_only=args.retrieval_only,
                                           offline=config["offline"])
            summary |= {"benchmark": "longmemeval", "data": str(args.data), "n_questions": len(questions),
                        "config_hash": config["config_hash"], "complete": len(records) == len(units)}
            run.write_summary(summary)
            write_memory_report(run.path, summary, records, title="LongMemEval")
        return summary

    async def _rank(self, bench: MemoryBench, q: LMEQuestion, method: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        user = [(s, t) for s in sorted(q.sessions, key=lambda s: s.date) for t in s.turns if t.role == "user"]
        turn_ids, turn_texts = [t.id for _, t in user], [t.content for _, t in user]
        sess = [s for s in sorted(q.sessions, key=lambda s: s.date)]
        sess_ids = [s.id for s in sess]
        sess_texts = ["\n".join(t.content for t in s.turns if t.role == "user") for s in sess]

        async def rank(ids: list[str], texts: list[str]) -> list[str]:
            if method == "bm25":
                return rank_bm25(q.question, ids, texts)
            dense = await rank_dense(q.question, ids, texts, bench.embedder)
            return dense if method == "dense" else rrf([rank_bm25(q.question, ids, texts), dense])

        ranked_sessions, ranked_turns = await rank(sess_ids, sess_texts), await rank(turn_ids, turn_texts)
        return self._base(q, method) | {
            "retrieval": retrieval_record(q, ranked_sessions, ranked_turns),
            "latency": {"recall_s": time.perf_counter() - t0},
        }

    async def _system(self, bench: MemoryBench, q: LMEQuestion, name: str, *, answer: bool) -> dict[str, Any]:
        log = CallLog()
        system = bench.make_system(name, log)
        try:
            t0 = time.perf_counter()
            await system.ingest_all(q.sessions)
            ingest_s = time.perf_counter() - t0
            record = self._base(q, name)
            if not answer:
                t1 = time.perf_counter()
                items = await system.recall(q.question, q.question_date, k=RECALL_K)
                latency = {"ingest_s": ingest_s, "recall_s": time.perf_counter() - t1}
            else:
                before = system.stats().recall_s
                t1 = time.perf_counter()
                resp = await system.respond(q.question, q.question_date)
                answer_s = time.perf_counter() - t1
                recall_s = system.stats().recall_s - before
                items = resp.recalled
                t2 = time.perf_counter()
                verdict = await bench.judge(question=q.question, gold=q.answer, response=resp.answer,
                                            question_type=q.question_type, abstention=q.is_abstention)
                latency = {"ingest_s": ingest_s, "recall_s": recall_s, "answer_s": answer_s - recall_s,
                           "judge_s": time.perf_counter() - t2}
                record |= {"answer": resp.answer, "context": resp.context, "context_tokens": resp.context_tokens,
                           "tokens_approx": resp.tokens_approx, "judge": verdict, "correct": verdict["correct"]}
            record |= {"latency": latency, "usage": log.totals().model_dump(), "stats": system.stats().model_dump()}
            if MEMORY_SYSTEMS.get(name).supports_recall:
                ranked_turns = [t for i in items for t in i.turn_ids]
                ranked_sessions = list(dict.fromkeys(i.session_id for i in items))
                record["retrieval"] = retrieval_record(q, ranked_sessions, ranked_turns)
            return record
        finally:
            system.close()

    @staticmethod
    def _base(q: LMEQuestion, method: str) -> dict[str, Any]:
        return {"question_id": q.question_id, "question_type": q.question_type, "method": method,
                "abstention": q.is_abstention, "question": q.question, "gold": q.answer}
