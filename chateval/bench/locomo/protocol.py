"""LoCoMo's protocol card (data, categories, the adversarial policy, the denominator, models,
judge prompts, top-k against sessions) and the --errata overlay a run adds to its summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ...datasets import LoCoMoConversation, LoCoMoQA
from ...records.protocol_card import LOCOMO_NAMES, LOCOMO_UPSTREAM, ProtocolCard, build_card
from ..protocol import card_models, judge_prompts, system_top_k, with_card
from ..setup import MemoryBench
from .errata import Errata, Fixes, corrected_task, errata_for, errata_identity, summarize_errata
from .settings import LoCoMoConfig


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
        **card_models(bench, given=config.predictions),
    )


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


__all__ = ["LoCoMoProtocol", "corrected_task", "locomo_card", "locomo_protocol"]
