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

import argparse
import asyncio
import hashlib
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from statistics import mean
from typing import Any

from ..datasets import DatasetError, LoCoMoConversation, LoCoMoQA, load_locomo
from ..datasets.locomo import CATEGORIES
from ..errors import ConfigError
from ..memory import MEMORY_SYSTEMS
from ..models import CallLog
from ..progress import RunProgress
from . import plots
from .locomo_metrics import ADVERSARIAL, evidence_recall, locomo_bleu1, locomo_f1
from .base import Benchmark, _error_text, add_run_options, benchmark, open_run, run_units
from .report import _cost, _num, _pct, finish_report
from .setup import MemoryBench, add_memory_bench_options
from .stats import mean_or_none, percentile
from .summaries import run_counts, usage_sum

NOT_MENTIONED = "Not mentioned in the conversation"
TEMPORAL_HINT = " Use DATE of CONVERSATION to answer with an approximate date."
JUDGE_CONCURRENCY = 8  # judge calls in flight per unit (the model layer's own limit still applies)
METRICS = ("f1", "bleu1", "judge_single", "judge_debate", "evidence_recall")
METRIC_TITLES = {"f1": "Token F1 (official LoCoMo scoring)", "bleu1": "BLEU-1",
                 "judge_single": "LLM judge accuracy — single", "judge_debate": "LLM judge accuracy — debate panel",
                 "evidence_recall": "Evidence recall (retrieved dialogue ids)"}


# --- questions -------------------------------------------------------------------------------

def category_name(category: int) -> str:
    return CATEGORIES.get(category, str(category))


def gold_of(qa: LoCoMoQA) -> str:
    if qa.category == ADVERSARIAL:
        return qa.adversarial_answer if qa.adversarial_answer is not None else (qa.answer or "")
    return qa.answer or ""


def _cat5_options(conv_id: str, qa: LoCoMoQA) -> dict[str, str]:
    """The two options of the official category-5 prompt. The official script orders them at
    random; we use a fixed coin per question (a hash) so runs are reproducible."""
    flip = hashlib.sha256(f"{conv_id}|{qa.question}".encode()).digest()[0] & 1
    adv = gold_of(qa)
    return {"a": NOT_MENTIONED, "b": adv} if flip else {"a": adv, "b": NOT_MENTIONED}


def asked_question(conv_id: str, qa: LoCoMoQA, fmt: str) -> str:
    """What the system is asked. 'official' mirrors task_eval/gpt_utils.py: temporal questions get
    the date hint, adversarial ones become a two-option choice with 'Not mentioned in the conversation'."""
    if fmt == "plain":
        return qa.question
    if qa.category == 2:
        return qa.question + TEMPORAL_HINT
    if qa.category == ADVERSARIAL:
        o = _cat5_options(conv_id, qa)
        return f"{qa.question} Select the correct answer: (a) {o['a']} (b) {o['b']}."
    return qa.question


def resolve_choice(answer: str, options: dict[str, str]) -> str:
    """The official mapping of a bare option letter back to its text ('a', 'b', '(a)', '(b)')."""
    a = answer.strip().lower()
    if len(a) == 1:
        return options["a"] if "a" in a else options["b"]
    if len(a) == 3 and a.startswith("(") and a.endswith(")"):
        return options["a"] if "(a)" in a else options["b"]
    return answer


def parse_categories(text: str) -> list[int]:
    out = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) not in CATEGORIES:
            raise ConfigError(f"--categories: '{part}' is not a LoCoMo category (1-5: "
                              + ", ".join(f"{k} {v}" for k, v in CATEGORIES.items()) + ")")
        out.append(int(part))
    if not out:
        raise ConfigError("--categories: give at least one of 1,2,3,4,5")
    return sorted(set(out))


def check_conversations(conversations: list[LoCoMoConversation], path: str) -> None:
    """What the loader leaves to us: category numbers, gold answers and at least one session."""
    for i, c in enumerate(conversations):
        where = f"{path}: conversation {i} ({c.id})"
        if not c.sessions:
            raise DatasetError(f"{where}: no session_<n> entries")
        for j, q in enumerate(c.qa):
            if q.category not in CATEGORIES:
                raise DatasetError(f"{where}: qa {j}: unknown category {q.category} (expected 1-5)")
            if q.category != ADVERSARIAL and q.answer is None:
                raise DatasetError(f"{where}: qa {j}: field 'answer' missing (category {q.category})")
            if q.category == ADVERSARIAL and q.answer is None and q.adversarial_answer is None:
                raise DatasetError(f"{where}: qa {j}: category 5 needs 'adversarial_answer' or 'answer'")


def select_qa(conv: LoCoMoConversation, categories: list[int], max_questions: int | None) -> list[tuple[int, LoCoMoQA]]:
    """(index in the file, QA) of the selected categories, the first ``max_questions`` of them."""
    chosen = [(j, q) for j, q in enumerate(conv.qa) if q.category in categories]
    return chosen if max_questions is None else chosen[:max_questions]


# --- the benchmark ---------------------------------------------------------------------------

@benchmark("locomo")
class LoCoMo(Benchmark):
    description = "LoCoMo (locomo10.json format): official F1, BLEU-1, LLM judge and evidence recall per category"

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--data", required=True, help="a file in the official locomo10.json format, unchanged")
        p.add_argument("--categories", default="1,2,3,4,5",
                       help="QA categories to run: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial")
        p.add_argument("--max-questions", type=int, help="only the first N selected QA of each conversation")
        p.add_argument("--question-format", choices=["official", "plain"], default="official",
                       help="official: temporal questions get the official date hint and adversarial ones the "
                            "official two-option choice; plain: every question as written")
        add_memory_bench_options(p)
        add_run_options(p)

    async def run(self, args: argparse.Namespace, progress: RunProgress | None) -> dict[str, Any]:
        if args.max_questions is not None and args.max_questions < 1:
            raise ConfigError("--max-questions must be at least 1")
        if args.limit is not None and args.limit < 1:
            raise ConfigError("--limit must be at least 1")
        categories = parse_categories(args.categories)
        conversations = load_locomo(args.data)
        check_conversations(conversations, str(args.data))
        if args.limit is not None:
            conversations = conversations[: args.limit]
        bench = MemoryBench(args)
        if progress:
            progress.totals = bench.answer_layer.totals
        config = bench.config({"benchmark": "locomo", "data": str(args.data), "categories": categories,
                               "max_questions": args.max_questions, "question_format": args.question_format})
        units = [(f"{c.id}::{s}", (c, s)) for c in conversations for s in bench.systems]

        async def unit(item: tuple[LoCoMoConversation, str]) -> dict[str, Any]:
            conv, system = item
            return await self._unit(bench, conv, system, categories, args.max_questions, args.question_format)

        with open_run(args, config) as run:
            records = await run_units(units, unit, run, workers=args.workers, progress=progress)
            summary = summarize_locomo(records, systems=bench.systems, categories=categories,
                                       offline=config["offline"])
            summary |= {"benchmark": "locomo", "data": str(args.data), "n_conversations": len(conversations),
                        "n_questions": sum(len(select_qa(c, categories, args.max_questions)) for c in conversations),
                        "question_format": args.question_format, "config_hash": config["config_hash"],
                        "complete": len(records) == len(units) and not summary["n_failed"]}
            run.write_summary(summary)
            write_locomo_report(run.path, summary)
        return summary

    async def _unit(self, bench: MemoryBench, conv: LoCoMoConversation, name: str, categories: list[int],
                    max_questions: int | None, fmt: str) -> dict[str, Any]:
        log = CallLog()
        system = bench.make_system(name, log)
        has_recall = MEMORY_SYSTEMS.get(name).supports_recall
        try:
            t0 = time.perf_counter()
            await system.ingest_all(conv.sessions)
            ingest_s = time.perf_counter() - t0
            now = max(s.date for s in conv.sessions) + timedelta(days=1)
            limit = asyncio.Semaphore(JUDGE_CONCURRENCY)
            judging: list[asyncio.Task] = []
            rows: list[dict[str, Any]] = []
            for index, qa in select_qa(conv, categories, max_questions):
                row = {"qa_index": index, "category": qa.category, "category_name": category_name(qa.category),
                       "question": qa.question, "gold": gold_of(qa), "evidence": qa.evidence}
                rows.append(row)
                try:
                    await self._answer(system, conv, qa, row, now, fmt, has_recall)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # this QA fails; the others go on
                    row |= {"status": "failed", "error": _error_text(exc)}
                    continue
                judging.append(asyncio.create_task(self._judge(bench, qa, row, limit)))
            await asyncio.gather(*judging)
            failed = [r for r in rows if r.get("status") != "ok"]
            record: dict[str, Any] = {
                "conversation": conv.id, "method": name, "now": now.isoformat(), "n_sessions": len(conv.sessions),
                "qa": rows, "latency": {"ingest_s": ingest_s}, "usage": log.totals().model_dump(),
                "stats": system.stats().model_dump(),
            }
            if failed:
                record |= {"status": "failed",
                           "error": f"{len(failed)} of {len(rows)} QA failed; first: qa {failed[0]['qa_index']}: "
                                    f"{failed[0].get('error')}"}
            return record
        finally:
            system.close()

    @staticmethod
    async def _answer(system: Any, conv: LoCoMoConversation, qa: LoCoMoQA, row: dict[str, Any], now: Any,
                      fmt: str, has_recall: bool) -> None:
        asked = asked_question(conv.id, qa, fmt)
        before = system.stats().recall_s
        t1 = time.perf_counter()
        resp = await system.respond(asked, now)
        total_s = time.perf_counter() - t1
        recall_s = system.stats().recall_s - before
        prediction = resp.answer
        if fmt == "official" and qa.category == ADVERSARIAL:
            prediction = resolve_choice(resp.answer, _cat5_options(conv.id, qa))
        retrieved = list(dict.fromkeys(t for i in resp.recalled for t in i.turn_ids)) if has_recall else None
        gold = row["gold"]
        row |= {
            "asked": asked, "prediction": prediction, "raw_answer": resp.answer,
            "context_tokens": resp.context_tokens, "tokens_approx": resp.tokens_approx,
            "retrieved": retrieved,
            "f1": locomo_f1(qa.category, prediction, gold), "bleu1": locomo_bleu1(qa.category, prediction, gold),
            "evidence_recall": evidence_recall(qa.evidence, retrieved),
            "latency": {"recall_s": recall_s, "answer_s": total_s - recall_s} if has_recall else {"answer_s": total_s},
        }

    @staticmethod
    async def _judge(bench: MemoryBench, qa: LoCoMoQA, row: dict[str, Any], limit: asyncio.Semaphore) -> None:
        adversarial = qa.category == ADVERSARIAL
        # For adversarial questions the judge is told the premise is false; the adversarial answer
        # is what a system that confuses the two speakers would say.
        gold = (f"{NOT_MENTIONED} (the question's premise is not supported by the conversation; "
                f"a plausible but wrong answer would be: {row['gold']})") if adversarial else row["gold"]
        async with limit:
            t0 = time.perf_counter()
            try:
                verdict = await bench.judge(question=qa.question, gold=gold, response=row["prediction"],
                                            question_type=f"locomo-{category_name(qa.category)}",
                                            abstention=adversarial)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                row |= {"status": "failed", "error": f"judge: {_error_text(exc)}"}
                return
            row["latency"]["judge_s"] = time.perf_counter() - t0
        row |= {"judge": verdict, "correct": verdict["correct"], "status": "ok"}


# --- summary ---------------------------------------------------------------------------------

def _judge_value(which: str):
    def get(r: dict[str, Any]) -> float | None:
        c = ((r.get("judge") or {}).get(which) or {}).get("correct")
        return None if c is None else float(bool(c))
    return get


_GETTERS = {"f1": lambda r: r.get("f1"), "bleu1": lambda r: r.get("bleu1"),
            "judge_single": _judge_value("single"), "judge_debate": _judge_value("debate"),
            "evidence_recall": lambda r: r.get("evidence_recall")}


def metric_block(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean of each metric over the QA that have it, with how many had it."""
    out: dict[str, Any] = {"n": len(rows)}
    for m, get in _GETTERS.items():
        xs = [v for v in (get(r) for r in rows) if v is not None]
        out[m] = mean(xs) if xs else None
        out[f"n_{m}"] = len(xs)
    return out


def _lat(xs: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}


def summarize_locomo(records: list[dict[str, Any]], *, systems: list[str], categories: list[int],
                     offline: bool) -> dict[str, Any]:
    by_system: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_system[r.get("method") or str(r.get("key", "::?")).split("::")[-1]].append(r)
    per: dict[str, Any] = {}
    for s in systems:
        units = by_system.get(s, [])
        all_qa = [dict(q, conversation=u.get("conversation")) for u in units for q in (u.get("qa") or [])]
        ok = [q for q in all_qa if q.get("status") == "ok"]
        by_cat = {category_name(c): metric_block([q for q in ok if q["category"] == c]) | {"category": c}
                  for c in categories}
        latency = {}
        ingest = [u["latency"]["ingest_s"] for u in units if "ingest_s" in (u.get("latency") or {})]
        if ingest:
            latency["ingest_s"] = _lat(ingest)
        for stage in ("recall_s", "answer_s", "judge_s"):
            xs = [q["latency"][stage] for q in ok if stage in (q.get("latency") or {})]
            if xs:
                latency[stage] = _lat(xs)
        agree = [q["judge"]["agreement"] for q in ok if (q.get("judge") or {}).get("agreement") is not None]
        per[s] = {
            "n_units": len(units), "n_units_failed": sum(1 for u in units if u.get("status") != "ok"),
            "n_qa": len(all_qa), "n_qa_ok": len(ok), "n_qa_failed": len(all_qa) - len(ok),
            "failed": ([{"key": u.get("key"), "error": u.get("error")} for u in units if u.get("status") != "ok"]
                       + [{"key": f"{q.get('conversation')}::{s}::qa{q.get('qa_index')}", "error": q.get("error")}
                          for q in all_qa if q.get("status") != "ok"])[:20],
            "categories": by_cat,
            "overall": metric_block(ok),
            "overall_no_adversarial": metric_block([q for q in ok if q["category"] != ADVERSARIAL]),
            "latency": latency,
            "mean_context_tokens": mean_or_none(q.get("context_tokens") for q in ok),
            "answer_usage": usage_sum(u.get("usage") for u in units),
            "judge_usage": usage_sum((q.get("judge") or {}).get("usage") for q in ok),
            "judge_agreement": {"n": len(agree), "rate": sum(agree) / len(agree)} if agree else None,
        }
    return ({"systems": per, "categories": {category_name(c): c for c in categories}}
            | run_counts(records, offline=offline))


# --- report ----------------------------------------------------------------------------------

def write_locomo_report(out: Path, summary: dict[str, Any]) -> Path:
    out = Path(out)
    systems: dict[str, Any] = summary["systems"]
    cats = list(summary["categories"])  # names in category-number order
    lines = ["# LoCoMo — chateval report", ""]
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}", ""]
    lines += [f"Conversations: {summary.get('n_conversations', '?')}, selected QA per system: "
              f"{summary.get('n_questions', '?')}, units (conversation × system): {summary['n_units']} "
              f"({summary['n_failed']} failed). Questions are answered one day after each conversation's last "
              f"session; question format: {summary.get('question_format', 'official')}.", "",
              "Categories (numbering of the official `task_eval/evaluation.py`): "
              + ", ".join(f"{n} = {c}" for c, n in summary["categories"].items())
              + ". Scores are percentages; `all` is over every scored QA, `1–4` leaves out adversarial.", ""]
    heads = cats + ["all", "1–4"]
    for metric in METRICS:
        if not any(e["overall"].get(metric) is not None for e in systems.values()):
            continue
        lines += [f"## {METRIC_TITLES[metric]}", "", "| system | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(heads)]
        for s, e in systems.items():
            cells = [_pct(e["categories"][c].get(metric)) for c in cats]
            cells += [_pct(e["overall"].get(metric)), _pct(e["overall_no_adversarial"].get(metric))]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
        if metric == "f1":
            plots.grouped_bars(out / "f1_by_category.png", heads,
                               {s: [e["categories"][c].get("f1") for c in cats]
                                + [e["overall"].get("f1"), e["overall_no_adversarial"].get("f1")]
                                for s, e in systems.items()},
                               title="LoCoMo: token F1 per category", ylabel="F1")
            lines += ["![F1 per category](f1_by_category.png)", ""]
        if metric == "evidence_recall":
            lines += ["Evidence recall is only defined for systems that retrieve (– otherwise) and QA that list "
                      "evidence.", ""]
    agree = {s: e["judge_agreement"] for s, e in systems.items() if e.get("judge_agreement")}
    if agree:
        lines += ["Single-vs-debate judge agreement: " + ", ".join(
            f"{s} {_pct(a['rate'])}% of {a['n']}" for s, a in agree.items()), ""]

    lines += ["## QA per category", "", "| system | " + " | ".join(cats) + " | total | failed |",
              "|---|" + "---|" * (len(cats) + 2)]
    for s, e in systems.items():
        lines.append(f"| {s} | " + " | ".join(str(e["categories"][c]["n"]) for c in cats)
                     + f" | {e['n_qa_ok']} | {e['n_qa_failed']} |")
    lines += ["", "## Latency, context and cost", "",
              "| system | ingest p50/p95 s (per conversation) | recall p50/p95 s | answer p50/p95 s | judge p50/p95 s "
              "| context tokens (~) | answer cost | judge cost |",
              "|---|---|---|---|---|---|---|---|"]
    for s, e in systems.items():
        lat = e["latency"]
        cells = [f"{_num(lat[k]['p50'], '{:.3f}')} / {_num(lat[k]['p95'], '{:.3f}')}" if k in lat else "–"
                 for k in ("ingest_s", "recall_s", "answer_s", "judge_s")]
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {_num(e['mean_context_tokens'], '{:.0f}')} | "
                     f"{_cost(e['answer_usage'])} | {_cost(e['judge_usage'])} |")
    return finish_report(out, lines, [f for e in systems.values() for f in e["failed"]])
