"""The protocol cards of ``bench locomo`` and ``bench longmemeval``: what each run fills into
:mod:`chateval.records.protocol_card` (data, categories, the unanswerable questions, the
denominator, models, judge prompts, top-k against sessions)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..datasets import LMEQuestion, LoCoMoConversation, LoCoMoQA
from ..records.protocol_card import (
    LOCOMO_NAMES,
    LOCOMO_UPSTREAM,
    LONGMEMEVAL_UPSTREAM,
    JudgePrompt,
    ProtocolCard,
    TopK,
    build_card,
    top_k_entry,
)
from ..util.prompts import Prompts
from .lme_judge import (
    ABSTENTION,
    GUIDELINES,
    OFFICIAL_ABSTENTION,
    OFFICIAL_GUIDELINES,
    OFFICIAL_JUDGE,
    SINGLE_JUDGE,
)
from .locomo_errata import Errata, Fixes, corrected_task, errata_for, errata_identity, summarize_errata
from .settings.locomo import LoCoMoConfig
from .settings.longmemeval import LongMemEvalConfig
from .setup import MemoryBench


def _source(prompts: Prompts, name: str) -> str:
    prompts.template(name)  # a missing template: one line naming the folders searched
    src, _, _ = prompts.env.loader.get_source(prompts.env, name)  # type: ignore[union-attr]
    return src


def judge_prompts(bench: MemoryBench) -> list[JudgePrompt]:
    """Each judge the run uses, hashed over what it is prompted with: the single judge's template
    and the per-type rules that fill it; the panel's templates and its personas."""
    out: list[JudgePrompt] = []
    if bench.judge_mode in ("single", "both"):
        official = bench.judge_protocol == "official"
        step = OFFICIAL_JUDGE if official else SINGLE_JUDGE
        rules = (OFFICIAL_GUIDELINES, OFFICIAL_ABSTENTION) if official else (GUIDELINES, ABSTENTION)
        out.append(
            JudgePrompt.of_parts(
                f"single ({bench.judge_protocol})",
                {step.template: _source(bench.prompts, step.template), "rules": json.dumps(rules, sort_keys=True)},
            )
        )
    if bench.debate_judges is not None:
        panel = bench.debate_judges.panel("correctness")
        parts = {n: _source(panel.prompts, n) for n in panel.templates()}
        parts["personas"] = json.dumps([p.model_dump() for p in bench.debate_judges.personas], sort_keys=True)
        out.append(JudgePrompt.of_parts(f"debate ({bench.config.judge_preset})", parts))
    return out


def system_top_k(bench: MemoryBench, sessions: list[int], depth: int | None = None) -> list[TopK]:
    """Each system's top-k; ``depth``: the k the run asks of every system's recall itself
    (LongMemEval's --retrieval-only --recall-depth), which overrides the systems' own."""
    resolved = bench.resolved_settings()
    out = []
    for name in bench.systems:
        settings = resolved.get(name, {})
        entry = top_k_entry(name, settings if depth is None else settings | {"k": depth}, sessions)
        out.append(entry if depth is None else entry.model_copy(update={"setting": "--recall-depth"}))
    return out


def _models(bench: MemoryBench, *, given: str | None, judged: bool = True) -> dict[str, Any]:
    return {
        "answer_model": bench.answer_layer.label if bench.systems else (f"given answers ({given})" if given else None),
        "judge_model": bench.judge_layer.label if judged else None,
    }


def locomo_card(
    bench: MemoryBench,
    conversations: list[LoCoMoConversation],
    picks: dict[str, list[tuple[int, LoCoMoQA]]],
    config: LoCoMoConfig,
) -> ProtocolCard:
    """``conversations``: every conversation of the data file; ``picks``: the QA this run scores."""
    categories = config.categories
    found = Counter(q.category for c in conversations for q in c.qa)
    selected = Counter(q.category for ps in picks.values() for _, q in ps)
    n = sum(selected.values())
    if 5 in categories:
        asked = "as the official two-option choice" if config.question_format == "official" else "as written"
        policy = (
            f"category 5 (adversarial) scored: asked {asked}; F1 = 1 when the answer says it is not mentioned; "
            "the judge is told the premise is false"
        )
    else:
        policy = "category 5 (adversarial) left out (--categories)"
    denominator = (
        f"per system, the {n} selected QA of categories {','.join(map(str, categories))} less those that "
        f"failed (`all`); `1–4` leaves out category 5 ({selected.get(5, 0)} selected)"
    )
    chosen = {cid for cid in picks}
    sessions = [len(c.sessions) for c in conversations if c.id in chosen]
    return build_card(
        benchmark="locomo",
        data=str(config.data),
        found=found,
        selected=selected,
        upstream=LOCOMO_UPSTREAM,
        upstream_name="LoCoMo's locomo10.json",
        names=LOCOMO_NAMES,
        unanswerable_policy=policy,
        denominator=denominator,
        n_scored=n,
        judges=judge_prompts(bench),
        top_k=system_top_k(bench, sessions),
        strict=config.strict_categories,
        **_models(bench, given=config.predictions),
    )


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
        **_models(bench, given=config.hypotheses, judged=not retrieval_only),
    )


def with_card(summary: dict[str, Any], card: ProtocolCard, warnings: Iterable[str] = ()) -> dict[str, Any]:
    """The summary with its card, the card's warnings among the run's (printed by the CLI)."""
    notes = list(dict.fromkeys([*(summary.get("warnings") or []), *warnings, *card.warnings]))
    return summary | {"protocol_card": card.model_dump(mode="json")} | ({"warnings": notes} if notes else {})


@dataclass
class LoCoMoProtocol:
    """What a LoCoMo run adds to its config and summary beyond the scores: the protocol card and
    the --errata overlay (the corrected gold of each conversation's QA, by index)."""

    card: ProtocolCard
    errata: Errata | None
    fixes: Fixes
    outside: int  # errata entries about conversations the data file does not hold

    def identity(self) -> dict[str, Any]:
        return errata_identity(self.errata)

    def finish(self, summary: dict[str, Any], records: list[dict[str, Any]], methods: list[str]) -> dict[str, Any]:
        out = with_card(summary, self.card)
        if self.errata is not None:
            out["errata"] = summarize_errata(records, methods, self.errata, self.outside)
        return out


def locomo_protocol(
    bench: MemoryBench,
    conversations: list[LoCoMoConversation],
    picks: dict[str, list[tuple[int, LoCoMoQA]]],
    config: LoCoMoConfig,
) -> LoCoMoProtocol:
    """Built before any work: --strict-categories and a bad --errata file fail first.
    ``conversations``: every conversation of the data file (errata ids index into it)."""
    card = locomo_card(bench, conversations, picks, config)
    return LoCoMoProtocol(card, *errata_for(config, conversations))


__all__ = ["LoCoMoProtocol", "corrected_task", "locomo_card", "locomo_protocol", "longmemeval_card", "with_card"]
