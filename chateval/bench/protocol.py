"""What the protocol cards of the memory benchmarks share (:mod:`chateval.records.protocol_card`):
the judges a run uses, hashed over their prompts; each system's top-k against the sessions; the
models; the summary with its card. Each benchmark builds its own card (``locomo/protocol.py``,
``longmemeval/protocol.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..records.protocol_card import JudgePrompt, ProtocolCard, TopK, top_k_entry
from ..util.prompts import Prompts
from .judge import ABSTENTION, GUIDELINES, OFFICIAL_ABSTENTION, OFFICIAL_GUIDELINES, OFFICIAL_JUDGE, SINGLE_JUDGE
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


def card_models(bench: MemoryBench, *, given: str | None, judged: bool = True) -> dict[str, Any]:
    """The card's answer and judge models (``given``: the answers file a run reads instead of a system's)."""
    return {
        "answer_model": bench.answer_layer.label if bench.systems else (f"given answers ({given})" if given else None),
        "judge_model": bench.judge_layer.label if judged else None,
    }


def with_card(summary: dict[str, Any], card: ProtocolCard, warnings: Iterable[str] = ()) -> dict[str, Any]:
    """The summary with its card, the card's warnings among the run's (printed by the CLI)."""
    notes = list(dict.fromkeys([*(summary.get("warnings") or []), *warnings, *card.warnings]))
    return summary | {"protocol_card": card.model_dump(mode="json")} | ({"warnings": notes} if notes else {})
