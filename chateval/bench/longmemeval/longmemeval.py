"""`chateval bench longmemeval`: QA accuracy per question type and retrieval metrics.

Units are (question, system). Each unit builds a fresh system, ingests the question's haystack
sessions in date order with their dates, answers at question_date, records the answer, the
exact context, its token count, the system's retrieval and latencies, then judges the answer.
With --retrieval-only no LLM answers or judges: BM25, dense, hybrid (RRF) and every system that
exposes recall are scored on recall_any/recall_all/ndcg_any at k = 1, 3, 5, 10.
"""

from __future__ import annotations

import time
from typing import Any

from ...datasets import LMEQuestion, load_longmemeval
from ...datasets.answers import Answer, load_hypotheses, match_answers
from ...memory.answer import ReaderPrompt
from ...memory.blind import Blind
from ...models import CallLog
from ...runs.files import file_sha256
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from ..base import Benchmark, open_run, run_units
from ..executor import current, error_text
from ..judge import judge_model_note, zep_question
from ..protocol import with_card
from ..records import MemoryRecord, MemorySummary
from ..registry import benchmark
from ..report import write_memory_report
from ..selection import select
from ..setup import MemoryBench, judge_error
from ..summaries import records_of, summarize_memory_run, summed_cost
from .protocol import longmemeval_card
from .rankers import rank_bm25, rank_dense, rrf
from .retrieval import gold_evidence, ranker_documents, retrieval_record, source_ids
from .settings import BASELINE_RANKERS, DESCRIPTION, GATE_METRICS, RECALL_K, LongMemEvalConfig

# How retrieval is scored and haystacks are read, part of a run's identity (--resume): since
# issue 28 a system's session level follows the official turn-to-session script and a session
# listed twice is ingested twice, so runs scored before do not resume into these.
RETRIEVAL_SCORING = "official-turn2session, duplicated sessions kept"


def texts_to_embed(bench: MemoryBench, todo: list[tuple[LMEQuestion, str]], rankers: list[str]) -> list[str]:
    """The texts the units (question, method) will embed, as far as known before they run."""
    texts: list[str] = []
    for q, method in todo:
        if method in rankers:
            if method != "bm25":  # dense and hybrid embed the same documents and the question
                (_, turn_texts), (sess_ids, sess_texts) = ranker_documents(q)
                texts += turn_texts + sess_texts + ([q.question] if sess_ids else [])
        else:
            spec = bench.spec(method)
            settings = bench.settings[method]
            # What the unit's system will be given: the blinded sessions (their texts are the same).
            sessions = Blind(q.sessions).sessions
            texts += spec.cls.texts_to_embed(spec.cls.parse_settings(settings), sessions, q.question)
    return texts


async def pre_embed(
    bench: MemoryBench,
    todo: list[tuple[LMEQuestion, str]],
    rankers: list[str],
    *,
    enabled: bool,
    progress: RunProgress | None,
) -> dict[str, Any]:
    """Embed the texts of every unit to run in one length-sorted pass into the embedding cache.
    Per unit they would be encoded a question (a few hundred texts) at a time while the other
    units' work shares the cores; in one pass each unique text is encoded once, in full batches,
    before anything else runs, and the units find them cached. What it did, for summary.json."""
    if not enabled:
        return {"skipped": "--no-pre-embed"}
    if current().executor != "local":
        # Each Ray worker has its own embedder and, possibly on another node, its own cache.
        return {"skipped": "--executor ray: each worker embeds its own units' texts"}
    if not bench.embedder.caching:
        return {"skipped": "--no-cache: no embedding cache to keep the vectors in"}
    texts = list(dict.fromkeys(texts_to_embed(bench, todo, rankers)))
    if not texts:  # nothing to embed: not even the cache is opened
        return {"texts": 0, "s": 0.0}
    if progress:
        progress.note(f"embedding up to {len(texts):,} unique texts in one pass before the units")
    t0, before = time.perf_counter(), bench.embedder.computed

    def chunk_done(done: int, total: int) -> None:
        if progress:
            progress.note(f"  embedded {done:,} of {total:,} new texts ({time.perf_counter() - t0:,.0f} s)")

    out: dict[str, Any] = {}
    try:
        await bench.embedder.prefill(texts, on_chunk=chunk_done)
    except Exception as e:  # the units embed what is missing themselves, and fail on their own
        out["error"] = error_text(e)
    return {"texts": bench.embedder.computed - before, "s": round(time.perf_counter() - t0, 3)} | out


def gold_positions(q: LMEQuestion, blind: Blind) -> list[int]:
    """The positions of the question's gold sessions (copies included) in the blinded history."""
    gold, src = gold_evidence(q)[0], source_ids(q)
    return blind.positions_of(s.id for s in q.sessions if src[s.id] in gold)


HYPOTHESES = "hypotheses"  # the method name of a --hypotheses run
READERS: dict[str, ReaderPrompt] = {"official": "longmemeval", "chateval": "chateval", "zep": "zep"}  # --reader-prompt


@benchmark("longmemeval")
class LongMemEval(Benchmark):
    description = DESCRIPTION
    config_model = LongMemEvalConfig
    distributable = True  # each unit ingests its own question/conversation
    record_type, summary_type = MemoryRecord, MemorySummary
    # Session-level recall at any k the run reports can gate too.
    gate_metrics = GATE_METRICS

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        rows = []
        for m, e in (summary.get("methods") or {}).items():
            qa = e.get("qa") or {}
            judges = [j for j in ("single", "debate") if qa.get(j)]
            ret = (e.get("retrieval") or {}).get("session") or {}
            # The metric names its judge; with --judge both the other judge's accuracy is a column too.
            row: dict[str, Any] = {
                "system": m,
                "n": e.get("n"),
                "metric": f"accuracy ({judges[0]} judge)" if judges else "accuracy",
                "value": qa[judges[0]].get("overall") if judges else None,
            }
            for j in judges[1:]:
                row[f"accuracy ({j} judge)"] = qa[j].get("overall")
            rows.append(
                row
                | {
                    "recall_all@5": ret.get("recall_all@5"),
                    "failed": e.get("n_failed"),
                    "cost_usd": summed_cost(e.get("answer_usage"), e.get("judge_usage")),
                }
            )
        return rows

    @classmethod
    def gate_measures(cls, summary: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, dict[Any, Any]]:
        rows = [r for r in rows if r.get("system") not in BASELINE_RANKERS]  # gates are about the systems under test
        out = super().gate_measures(summary, rows)
        tested = {r["system"] for r in rows}
        for m, e in (summary.get("methods") or {}).items():
            session = ((e.get("retrieval") or {}).get("session") or {}) if e.get("retrieval") else {}
            for k, v in session.items():
                if k.startswith("recall_") and m in tested:
                    out.setdefault(k, {})[m] = v
        return out

    async def run(self, config: LongMemEvalConfig, progress: RunProgress | None) -> dict[str, Any]:
        if config.hypotheses and (config.systems or config.retrieval_only):
            raise ConfigError("--hypotheses judges a file of answers: leave out --systems and --retrieval-only")
        if not config.retrieval_only and not config.systems and not config.hypotheses:
            raise ConfigError(
                "--systems is required (or --hypotheses FILE, or --retrieval-only for the baseline rankers)"
            )
        rankers = [r for r in (config.rankers if config.retrieval_only else []) if r]
        for r in rankers:
            if r not in BASELINE_RANKERS:
                raise ConfigError(f"--rankers: unknown ranker '{r}' (known: {', '.join(BASELINE_RANKERS)})")
        all_questions = load_longmemeval(config.data)
        questions = select(all_questions, config, key=lambda q: q.question_id, kind=lambda q: q.question_type)
        hyps: dict[str, Answer] = {}
        left_out: list[str] = []
        if config.hypotheses:
            hyps, left_out = match_answers(
                load_hypotheses(config.hypotheses),
                [q.question_id for q in all_questions],
                [q.question_id for q in questions],
                config.hypotheses,
                allow_missing=config.allow_missing,
                what="question_id",
            )
            questions = [q for q in questions if q.question_id in hyps]
        bench = MemoryBench(config, need_judges=not config.retrieval_only)
        if set(rankers) & {"dense", "hybrid"}:
            bench.embedder.check_available()  # the embedding baselines embed with the run's embedder
        if progress:
            progress.totals = bench.answer_layer.totals
        if config.retrieval_only:
            no_recall = [s.name for s in bench.specs if not s.cls.supports_recall]
            if no_recall:
                raise ConfigError(
                    f"--retrieval-only: {', '.join(no_recall)} expose(s) no recall to score; "
                    "leave them out of --systems"
                )
        card = longmemeval_card(bench, all_questions, questions, config)  # --strict-categories refuses before any work
        methods = rankers + bench.systems + ([HYPOTHESES] if config.hypotheses else [])
        extra = {
            "benchmark": "longmemeval",
            "data": str(config.data),
            "retrieval_only": config.retrieval_only,
            "methods": methods,
            "uses_judge": not config.retrieval_only,
            "recall_depth": config.recall_depth,
            "retrieval_scoring": RETRIEVAL_SCORING,
        }
        answering = bool(bench.systems) and not config.retrieval_only  # a system's answer step reads the question
        if answering and config.reader_prompt != "chateval":
            # Recorded only when it is not the earlier framing, so a run made before the option
            # existed still resumes with --reader-prompt chateval.
            extra["reader_prompt"] = config.reader_prompt
        if config.hypotheses:
            extra |= {"hypotheses": str(config.hypotheses), "hypotheses_sha256": file_sha256(config.hypotheses)}
        run_config = bench.run_config(extra)
        # Method-major order: a question's texts embedded by one method are cached before the
        # next method (e.g. hybrid after dense) needs them, instead of being computed twice at once.
        units = [(f"{q.question_id}::{m}", (q, m)) for m in methods for q in questions]

        async def unit(item: tuple[LMEQuestion, str]) -> dict[str, Any]:
            q, method = item
            if method in rankers:
                return await self._rank(bench, q, method)
            if method == HYPOTHESES:
                return await self._hypothesis(bench, q, hyps[q.question_id])
            return await self._system(
                bench,
                q,
                method,
                answer=not config.retrieval_only,
                depth=config.recall_depth,
                reader_prompt=config.reader_prompt,
            )

        with open_run(config, run_config) as run:
            todo = [u for k, u in units if k not in run.done and u[1] != HYPOTHESES]
            pre = await pre_embed(bench, todo, rankers, enabled=config.pre_embed, progress=progress)
            await run_units(units, unit, run, workers=bench.workers, progress=progress, keep=None)
            summary = summarize_memory_run(  # from samples.jsonl, a record at a time
                records_of(run, (k for k, _ in units)),
                methods=methods,
                retrieval_only=config.retrieval_only,
                offline=run_config["offline"],
            )
            summary |= {
                "benchmark": "longmemeval",
                "data": str(config.data),
                "n_questions": len(questions),
                "judge_protocol": config.judge_protocol,
                "judge_model": run_config["judging"]["judge_model"],
                "judge_model_note": None
                if config.retrieval_only
                else judge_model_note(run_config["judging"]["judge_model"], config.judge_protocol),
                "reader_prompt": config.reader_prompt if answering else None,
                "reader_max_tokens": config.reader_max_tokens if answering else None,
                "config_hash": run_config["config_hash"],
                "complete": summary["n_units"] == len(units),
                "embedding_usage": bench.embedding_usage(),
                "embeddings": bench.embedding_work() | {"pre_embed": pre},
            }
            later = [q for q in questions if q.later_sessions]
            if later:
                summary["warnings"] = [
                    f"{sum(q.later_sessions for q in later)} haystack session(s) of {len(later)} "
                    "question(s) are dated after their question_date; they are ingested as the "
                    "data gives them"
                ]
            if config.hypotheses:
                summary |= {
                    "hypotheses": str(config.hypotheses),
                    "n_left_out": len(left_out),
                    "left_out_ids": left_out[:50],
                }
            summary = with_card(summary, card)
            run.write_summary(summary)
            write_memory_report(run.path, summary, [], title="LongMemEval")  # the report reads the summary
        return summary

    async def _hypothesis(self, bench: MemoryBench, q: LMEQuestion, hyp: Answer) -> dict[str, Any]:
        t0 = time.perf_counter()
        verdict = await bench.judge(
            question=q.question,
            gold=q.answer,
            response=hyp.text,
            question_type=q.question_type,
            abstention=q.is_abstention,
        )
        record = self._base(q, HYPOTHESES) | {
            "answer": hyp.text,
            "judge": verdict,
            "correct": verdict["correct"],
            "latency": {"judge_s": time.perf_counter() - t0},
            "usage": verdict["usage"],
        }
        if error := judge_error(verdict):
            record |= {"status": "failed", "error": error}
        if hyp.retrieved_session_ids is not None:
            record["retrieval"] = retrieval_record(
                q, list(dict.fromkeys(hyp.retrieved_session_ids)), [], sessions_only=True
            )
        return record

    async def _rank(self, bench: MemoryBench, q: LMEQuestion, method: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        (turn_ids, turn_texts), (sess_ids, sess_texts) = ranker_documents(q)

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

    async def _system(
        self, bench: MemoryBench, q: LMEQuestion, name: str, *, answer: bool, depth: int = RECALL_K, reader_prompt: str
    ) -> dict[str, Any]:
        log = CallLog()
        async with bench.system(name, log) as system:
            system.reader_prompt = READERS[reader_prompt]
            blind = Blind(q.sessions)  # the system never sees the data set's ids or gold labels
            t0 = time.perf_counter()
            await system.ingest_all(blind.sessions)
            ingest_s = time.perf_counter() - t0
            record = self._base(q, name)
            if not answer:
                t1 = time.perf_counter()
                items = blind.items(await system.recall(q.question, q.question_date, k=depth))
                latency = {"ingest_s": ingest_s, "recall_s": time.perf_counter() - t1}
            else:
                before = system.stats().recall_s
                t1 = time.perf_counter()
                asked = zep_question(q) if reader_prompt == "zep" else q.question  # Zep's: the date first
                resp = blind.response(await system.respond(asked, q.question_date))
                answer_s = time.perf_counter() - t1
                recall_s = system.stats().recall_s - before
                items = resp.recalled
                t2 = time.perf_counter()
                verdict = await bench.judge(
                    question=asked,
                    gold=q.answer,
                    response=resp.answer,
                    question_type=q.question_type,
                    abstention=q.is_abstention,
                )
                latency = {
                    "ingest_s": ingest_s,
                    "recall_s": recall_s,
                    "answer_s": answer_s - recall_s,
                    "judge_s": time.perf_counter() - t2,
                }
                record |= {
                    "answer": resp.answer,
                    "context": resp.context,
                    "context_tokens": resp.context_tokens,
                    "tokens_approx": resp.tokens_approx,
                    # Where the gold sessions are in a context that numbers sessions by position
                    # (full_context, session_summaries): the viewer marks them there.
                    "gold_positions": gold_positions(q, blind),
                    "judge": verdict,
                    "correct": verdict["correct"],
                }
                if error := judge_error(verdict):
                    record |= {"status": "failed", "error": error}
            record |= {"latency": latency, "usage": log.totals().model_dump(), "stats": system.stats().model_dump()}
            if bench.spec(name).cls.supports_recall:
                ranked_turns = [t for i in items for t in i.turn_ids]
                ranked_sessions = list(dict.fromkeys(i.session_id for i in items))
                whole = all(i.id == i.session_id for i in items)  # a session ranking, scored as one
                record["retrieval"] = retrieval_record(
                    q,
                    ranked_sessions,
                    ranked_turns,
                    items=None if whole else [(i.session_id, i.turn_ids) for i in items],
                )
            return record

    @staticmethod
    def _base(q: LMEQuestion, method: str) -> dict[str, Any]:
        # The gold evidence ids ride along so a reader of the run alone (the viewer) can mark them
        # in a system's ranking and context.
        gold_s, gold_t = gold_evidence(q)
        return {
            "question_id": q.question_id,
            "question_type": q.question_type,
            "method": method,
            "abstention": q.is_abstention,
            "question": q.question,
            "gold": q.answer,
            "gold_sessions": sorted(gold_s),
            "gold_turns": sorted(gold_t),
        }
