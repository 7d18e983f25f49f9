"""LoCoMo's settings (``chateval bench locomo``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from ...datasets.locomo import CATEGORIES
from ...util.errors import ConfigError
from ...util.options import opt
from ..config import MemoryBenchConfig
from .metrics import EvidenceEmpty

DESCRIPTION = "LoCoMo (locomo10.json format): official F1, BLEU-1, LLM judge and evidence recall per category"
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["f1", "evidence_recall", "accuracy"]  # accuracy: the LLM judge's (single, else the panel)
# chateval.memory.answer.AnswerStyle (a test keeps them equal): importing the memory package here
# would load the model layer (openai, autogen) into every `chateval bench ... --help`.
AnswerStyle = Literal["generic", "locomo"]


def parse_categories(text: str) -> list[int]:
    out = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) not in CATEGORIES:
            raise ConfigError(
                f"--categories: '{part}' is not a LoCoMo category (1-5: "
                + ", ".join(f"{k} {v}" for k, v in CATEGORIES.items())
                + ")"
            )
        out.append(int(part))
    if not out:
        raise ConfigError("--categories: give at least one of 1,2,3,4,5")
    return sorted(set(out))


class LoCoMoConfig(MemoryBenchConfig):
    data: str = opt(
        ...,
        "a file in the official locomo10.json format, unchanged: a path, or `locomo` / locomo10.json "
        "found in the data folder, where `chateval data get locomo` downloads it",
    )
    categories: list[int] = opt(
        [1, 2, 3, 4, 5], "QA categories to run: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial"
    )
    max_questions: int | None = opt(None, "only the first N selected QA of each conversation", ge=1)
    question_format: Literal["official", "plain"] = opt(
        "official",
        "official: temporal questions get the official date hint and adversarial ones the official "
        "two-option choice; plain: every question as written",
    )
    answer_style: AnswerStyle = opt(
        "locomo",
        "locomo: a short phrase in the conversation's own words, as LoCoMo's "
        "answer prompt asks (drives token F1); generic: our concise answer",
    )
    reader_max_tokens: int | None = opt(
        None,
        "output token limit of the systems' answer step (default: the answer model's, 1024; "
        "32, as the official per-question reader)",
        ge=1,
    )
    full_context_batch: int = opt(
        1,
        "questions per answer call for full_context (1: one question a call, the official RAG path's "
        "prompt; 10 or 20: the official full-context runs, which ask consecutive questions together and "
        "read the answers as JSON)",
        ge=1,
    )
    reader_prompt: Literal["official", "chateval"] = opt(
        "official",
        "how the systems' answer step asks the question: official (as LoCoMo's code: one message with "
        "the conversations and the question, no system prompt, no current-date line) or chateval (our "
        "system prompt, which asks to say 'I don't know' when the memory lacks the answer, and a "
        "current-date line)",
    )
    evidence_empty: EvidenceEmpty = opt(
        "one",
        "evidence recall of QA listing no evidence ids: one (scored 1.0, as "
        "the official code does) or exclude (left out); counted either way",
    )
    predictions: str | None = opt(
        None,
        "judge answers you already have: a JSONL file of {sample_id, question, "
        "prediction} (matched on sample id + the exact question text); no system runs",
    )
    allow_missing: bool = opt(
        False,
        "with --predictions: score the QA that have one and report how many were "
        "left out (default: a missing prediction is an error)",
    )
    errata: str | None = opt(
        None,
        "gold-answer errata (locomo-audit's errors.json format): a path, or the data set's name, locomo-audit, "
        "after `chateval data get locomo-audit`; "
        "QA whose gold it corrects are scored on both golds, side by side, with the ceiling",
    )
    strict_categories: bool = opt(
        False,
        "refuse a data file whose counts per category differ from the published ones (default: run, "
        "and warn on the run's protocol card)",
    )

    @field_validator("categories", mode="before")
    @classmethod
    def _categories(cls, v: Any) -> Any:
        return parse_categories(",".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
