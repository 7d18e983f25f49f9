"""LongMemEval's settings (``chateval bench longmemeval``)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import model_validator

from ...util.options import opt
from ..config import MemoryBenchConfig

DESCRIPTION = "LongMemEval (S, M or oracle file): QA accuracy per question type, retrieval recall/NDCG"
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["accuracy", "recall_all@K", "recall_any@K"]
BASELINE_RANKERS = ("bm25", "dense", "hybrid")
RECALL_K = 50  # default recall depth asked of systems (the deepest k reported)
# What --protocol zep sets on a `zep` system (Zep's LongMemEval evaluation; a --set of the same key wins).
ZEP_SYSTEM_SETTINGS = {"reranker": "cross_encoder", "node_reranker": "rrf", "max_query_chars": 255}


class LongMemEvalConfig(MemoryBenchConfig):
    data: str = opt(
        ...,
        "an official LongMemEval file (S, M or oracle), unchanged: a path, or a data set name "
        "(longmemeval-oracle, longmemeval-s, longmemeval-m) or file name found in the data folder, "
        "where `chateval data get NAME` downloads it",
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
    reader_max_tokens: int | None = opt(
        None,
        "output token limit of the systems' answer step (default: the answer model's, 1024; "
        "800, as the official step-by-step reader)",
        ge=1,
    )
    reader_prompt: Literal["official", "chateval", "zep"] = opt(
        "official",
        "how the systems' answer step asks the question: official (LongMemEval's generation default: "
        "read step by step, first the relevant information, then the reasoning; no system prompt, no "
        "'say you don't know'), chateval (our system prompt with that instruction and a concise answer) "
        "or zep (Zep's own evaluation: a brief answer or an abstention, the question prefixed with its date)",
    )
    # Wider than the other memory benchmarks' choice: Zep's grader is LongMemEval's only.
    judge_protocol: Literal["chateval", "official", "zep"] = opt(  # type: ignore[assignment]
        "official",
        "single judge: official (LongMemEval's scoring: its per-type instructions, a plain reply that "
        "counts as correct when it contains 'yes', temperature 0, at most 10 output tokens; the paper's "
        "judge is gpt-4o-2024-08-06), chateval (a JSON verdict with a reason) or zep (Zep's grader: a "
        "JSON yes/no, no abstention rule; Zep used gpt-4o-mini)",
    )
    protocol: Literal["official", "zep"] = opt(
        "official",
        "official: LongMemEval's (the options above); zep: Zep's own LongMemEval evaluation "
        "(--reader-prompt zep, --judge-protocol zep, and a `zep` system reranks facts by cross-encoder "
        "and entities by RRF, its query cut to 255 characters)",
    )

    @model_validator(mode="after")
    def _zep_protocol(self) -> Self:
        if self.protocol != "zep":
            return self
        for name in ("reader_prompt", "judge_protocol"):
            if name in self.model_fields_set and getattr(self, name) != "zep":
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"--protocol zep sets {flag} zep; leave out {flag} {getattr(self, name)}")
            setattr(self, name, "zep")
        if "zep" in self.systems:  # Zep's search recipe, under any --set of the same keys
            self.settings = self.settings | {"zep": ZEP_SYSTEM_SETTINGS | self.settings.get("zep", {})}
        return self

    recall_depth: int = opt(
        RECALL_K, "--retrieval-only: items asked of each system's recall (@k beyond it is marked capped)", ge=1
    )
    strict_categories: bool = opt(
        False,
        "refuse a data file whose counts per question type differ from the published ones (default: run, "
        "and warn on the run's protocol card)",
    )
