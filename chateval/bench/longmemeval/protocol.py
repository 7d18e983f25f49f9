"""LongMemEval's protocol card: data, question types, the abstention policy, the denominator,
models, judge prompts and top-k against sessions."""

from __future__ import annotations

from collections import Counter

from ...datasets import LMEQuestion
from ...records.protocol_card import LONGMEMEVAL_UPSTREAM, ProtocolCard, build_card
from ..protocol import card_models, judge_prompts, system_top_k, with_card
from ..setup import MemoryBench
from .settings import LongMemEvalConfig


def longmemeval_card(
    bench: MemoryBench,
    every: list[LMEQuestion],
    questions: list[LMEQuestion],
    config: LongMemEvalConfig,
) -> ProtocolCard:
    """``every``: the data file's questions; ``questions``: those this run scores."""
    retrieval_only = config.retrieval_only
    found = Counter(q.question_type for q in every)
    selected = Counter(q.question_type for q in questions)
    n_abs = sum(1 for q in questions if q.is_abstention)
    policy = (
        f"abstention (_abs) questions: {n_abs} selected, of {sum(1 for q in every if q.is_abstention)} in the file; "
        "correct when the answer says the information is not available; they count in their question type "
        "and in the abstention column"
    )
    denominator = (
        "no QA score (--retrieval-only)"
        if retrieval_only
        else f"per system, the {len(questions)} selected questions less those that failed (overall); "
        "task-avg: the mean over question types"
    )
    return build_card(
        benchmark="longmemeval",
        data=str(config.data),
        found=found,
        selected=selected,
        upstream=LONGMEMEVAL_UPSTREAM,
        upstream_name="LongMemEval's 500 questions",
        unanswerable_policy=policy,
        denominator=denominator,
        n_scored=len(questions),
        judges=[] if retrieval_only else judge_prompts(bench),
        top_k=system_top_k(
            bench, [len(q.sessions) for q in questions], config.recall_depth if retrieval_only else None
        ),
        strict=config.strict_categories,
        **card_models(bench, given=config.hypotheses, judged=not retrieval_only),
    )


__all__ = ["longmemeval_card", "with_card"]
