"""The protocol card of each rejudged set (chateval.records.protocol_card): the file's sha256, its
categories counted and checked against the published counts (LoCoMo's numbering, or LongMemEval's
question types), what the denominator is, and the sha256 of what each judge is prompted with."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..records.protocol_card import (
    LOCOMO_NAMES,
    LOCOMO_UPSTREAM,
    LONGMEMEVAL_UPSTREAM,
    JudgePrompt,
    ProtocolCard,
    build_card,
    text_sha256,
)
from .judges import JudgeSpec, recorded_names
from .judging import LLMJudge
from .sets import GradedSet

OFFICIAL_TEMPLATE = "bench/lme_judge_official.j2"


def _template_text(j: LLMJudge, name: str) -> str:
    prompts = j.prompts or j.evaluator.prompts
    loader = prompts.env.loader
    return "" if loader is None else loader.get_source(prompts.env, name)[0]


def judge_prompts(
    s: GradedSet, specs: list[JudgeSpec], columns: list[str], judges: dict[str, LLMJudge]
) -> list[JudgePrompt]:
    out = []
    for name in columns:
        if name.startswith("recorded"):
            # The recorded judge's prompt is not in the file: the verdicts themselves are what is used.
            out.append(
                JudgePrompt(judge=name, sha256=s.sha256 or text_sha256(s.path), parts=["verdicts recorded in the set"])
            )
        elif name == "f1":
            out.append(JudgePrompt.of_text("f1", "LoCoMo answer F1 (no prompt)", "locomo_f1"))
    for spec in specs:
        j = judges.get(spec.name)
        if j is None:
            continue
        if spec.kind == "template":
            out.append(JudgePrompt(judge=spec.name, sha256=spec.template_sha256 or "", parts=[str(spec.template)]))
        elif spec.kind == "official":
            out.append(JudgePrompt.of_text(spec.name, OFFICIAL_TEMPLATE, _template_text(j, OFFICIAL_TEMPLATE)))
        else:  # a panel: its run config hashes its personas, strategy and templates
            out.append(
                JudgePrompt(
                    judge=spec.name, sha256=str(j.evaluator.run_config()["config_hash"]), parts=["panel config hash"]
                )
            )
    return out


def set_card(s: GradedSet, prompts: list[JudgePrompt], judge_model: str | None) -> ProtocolCard:
    found = Counter(it.category or "-" for it in s.items)
    locomo = set(found) <= set(LOCOMO_UPSTREAM)
    lme = set(found) <= set(LONGMEMEVAL_UPSTREAM)
    published = LOCOMO_UPSTREAM if locomo else LONGMEMEVAL_UPSTREAM if lme else {}
    # Only the categories present are checked: a set that leaves one out says so as its policy.
    upstream = {c: n for c, n in published.items() if c in found}
    absent = [c for c in published if c not in found]
    policy: Any = None
    if locomo:
        policy = (
            "category 5 (adversarial) not in the set: not scored"
            if "5" in absent
            else "category 5 (adversarial) scored"
        )
    elif lme:
        n_abs = sum(1 for it in s.items if it.abstention)
        policy = f"{n_abs} abstention questions scored with the rest"
    return build_card(
        benchmark="locomo" if locomo else "longmemeval" if lme else s.format,
        data=s.path if s.sha256 else None,
        found=dict(found),
        upstream=upstream or None,
        upstream_name="LoCoMo locomo10.json" if locomo else "LongMemEval (500 questions)" if lme else None,
        names=LOCOMO_NAMES if locomo else None,
        unanswerable_policy=policy,
        denominator=f"{len(s.items)} answers of the set",
        n_scored=len(s.items),
        answer_model=s.answer_model,
        # The file's own judges beside the LLM judges' model: whose verdicts the numbers are.
        judge_model=", ".join(
            [f"recorded: {n}" for n in recorded_names(s.items)] + ([judge_model] if judge_model else [])
        )
        or None,
        judges=prompts,
        warnings=[f"categories absent from the set: {', '.join(absent)}"] if absent and not locomo else [],
    )
