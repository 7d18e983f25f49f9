"""LongMemEval's settings (``chateval bench longmemeval``)."""

from __future__ import annotations

from typing import Literal

from ...util.options import opt
from ..config import MemoryBenchConfig

DESCRIPTION = "LongMemEval (S, M or oracle file): QA accuracy per question type, retrieval recall/NDCG"
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["accuracy", "recall_all@K", "recall_any@K"]
BASELINE_RANKERS = ("bm25", "dense", "hybrid")
RECALL_K = 50  # default recall depth asked of systems (the deepest k reported)


class LongMemEvalConfig(MemoryBenchConfig):
    data: str = opt(
        ...,
        "an official LongMemEval file (S, M or oracle), unchanged (`chateval data get "
        "longmemeval-oracle` / longmemeval-s / longmemeval-m downloads one)",
    )
    retrieval_only: bool = opt(
        False, "no LLM answers or judges: score retrieval of BM25, dense, hybrid and the systems"
    )
    rankers: list[str] = opt(list(BASELINE_RANKERS), "retrieval-only baselines to include ('' for none)")
    hypotheses: str | None = opt(
        None,
        "judge answers you already have: a JSONL file of {question_id, hypothesis} "
        "(LongMemEval's format; optional retrieved_session_ids); no system runs",
    )
    allow_missing: bool = opt(
        False,
        "with --hypotheses: judge the questions that have one and report how many "
        "were left out (default: a missing hypothesis is an error)",
    )
    pre_embed: bool = opt(
        True,
        "embed the texts the units will embed (the baselines' turns and sessions, the "
        "systems' known keys) for all questions in one length-sorted pass before the "
        "units start; local executor and embedding cache only",
        flags=["--no-pre-embed"],
    )
    reader_prompt: Literal["official", "chateval"] = opt(
        "official",
        "how the systems' answer step asks the question: official (LongMemEval's generation default: "
        "read step by step, first the relevant information, then the reasoning; no system prompt, no "
        "'say you don't know') or chateval (our system prompt with that instruction and a concise answer)",
    )
    judge_protocol: Literal["chateval", "official"] = opt(
        "official",
        "single judge: official (LongMemEval's scoring: its per-type instructions, a plain reply that "
        "counts as correct when it contains 'yes', temperature 0, at most 10 output tokens; the paper's "
        "judge is gpt-4o-2024-08-06) or chateval (a JSON verdict with a reason)",
    )
    recall_depth: int = opt(
        RECALL_K, "--retrieval-only: items asked of each system's recall (@k beyond it is marked capped)", ge=1
    )
    strict_categories: bool = opt(
        False,
        "refuse a data file whose counts per question type differ from the published ones (default: run, "
        "and warn on the run's protocol card)",
    )
