"""The head-to-head pair format, shared by the two-system run (head2head.py) and the run with
more systems (multi.py): the cases read from a LongMemEval or LoCoMo file, what the
panel sees for a pair of answers (with ``--context gold``: the gold answer and a checking rule).
A pair's verdict in A/B terms is ``bench.records.verdict_record`` (msc-response writes it too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...datasets.common import DatasetError, read_json
from ...datasets.locomo import CATEGORIES, locomo_conversations
from ...datasets.longmemeval import lme_questions
from ...memory.types import Session
from ..judge import ABSTENTION, GUIDELINES

# --- what the panel is told with --context gold -------------------------------------------
_PAIR_RULE = (
    "Check each response against the reference answer with this rule: {rule} Prefer the response "
    "that is correct by this rule. If both or neither are, prefer the one that is more accurate, then "
    "the more helpful one. Length and style do not outweigh facts."
)
_CHECK = GUIDELINES["multi-session"]  # the generic 'contains the correct answer' rule
_LOCOMO_TEMPORAL = (
    _CHECK + " Dates may be given relative to the conversation (e.g. 'the week before "
    "9 June 2023'); a response naming the same day, week, month or year the reference names "
    "is correct."
)
_UNANSWERABLE = (
    "The conversation never gives the information this question asks for (the question presupposes "
    "something that was not said, or mixes up who said it). A response is correct if it says the "
    "information is not available or was not mentioned; it is incorrect if it answers as if it were "
    "known. Prefer the correct response; if both or neither are, prefer the more accurate one."
)


@dataclass
class Case:
    key: str
    group: str  # the sessions a system ingests: one question (LongMemEval) or one conversation (LoCoMo)
    question: str
    gold: str | None
    now: datetime
    qtype: str  # the label per-type tables use
    sessions: list[Session]
    rule: str | None  # the checking rule shown with --context gold
    names: set[str] = field(default_factory=set)  # what --types matches
    meta: dict[str, Any] = field(default_factory=dict)

    def record(self, **systems: Any) -> dict[str, Any]:
        """The start of the case's samples.jsonl record, with the systems it pits (``systems``
        for a pair, ``systems_all`` for several), in the order the record has always had."""
        return {
            "case_id": self.key,
            "question_type": self.qtype,
            "question": self.question,
            "gold": self.gold,
            "date": self.now.isoformat(),
            **systems,
            "meta": self.meta,
        }


def load_cases(path: str | Path) -> tuple[str, list[Case]]:
    """('longmemeval' | 'locomo', cases) from an official file of either benchmark, read once."""
    data = read_json(path, "LongMemEval or LoCoMo")
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and "haystack_sessions" in first:
        return "longmemeval", _lme_cases(data, path)
    if isinstance(first, dict) and "conversation" in first and "qa" in first:
        return "locomo", _locomo_cases(data, path)
    raise DatasetError(
        f"{path}: neither a LongMemEval file (a list of entries with 'haystack_sessions') nor a "
        "LoCoMo file (a list of conversations with 'conversation' and 'qa')"
    )


def _lme_cases(data: list[Any], path: str | Path) -> list[Case]:
    out = []
    for q in lme_questions(data, path):
        label = "abstention" if q.is_abstention else q.question_type
        rule = ABSTENTION if q.is_abstention else GUIDELINES.get(q.question_type, _CHECK)
        out.append(
            Case(
                key=q.question_id,
                group=q.question_id,
                question=q.question,
                gold=q.answer,
                now=q.question_date,
                qtype=label,
                sessions=q.sessions,
                rule=rule,
                names={label, q.question_type},
                meta={"abstention": q.is_abstention, "question_type": q.question_type},
            )
        )
    return out


def _locomo_cases(data: list[Any], path: str | Path) -> list[Case]:
    out = []
    for i, conv in enumerate(locomo_conversations(data, path)):
        if not conv.sessions:
            raise DatasetError(f"{path}: conversation {i} ({conv.id}): no sessions")
        now = max(s.date for s in conv.sessions)
        for j, qa in enumerate(conv.qa):
            name = CATEGORIES.get(qa.category, "unknown")
            label = f"{qa.category}-{name}"
            if qa.category == 5 or qa.answer is None:
                rule = None  # no gold answer: the unanswerable rule, shown without a reference
            else:
                rule = _LOCOMO_TEMPORAL if qa.category == 2 else _CHECK
            out.append(
                Case(
                    key=f"{conv.id}::qa{j}",
                    group=conv.id,
                    question=qa.question,
                    gold=qa.answer,
                    now=now,
                    qtype=label,
                    sessions=conv.sessions,
                    rule=rule,
                    names={label, name, str(qa.category)},
                    meta={
                        "conversation": conv.id,
                        "category": qa.category,
                        "evidence": qa.evidence,
                        "adversarial_answer": qa.adversarial_answer,
                    },
                )
            )
    return out


def judging_inputs(case: Case, context: str) -> tuple[str | None, str | None]:
    """(reference, guidelines) the panel sees for a case."""
    if context == "none":
        return None, None
    if case.gold is None or case.meta.get("category") == 5:
        return None, _UNANSWERABLE
    return case.gold, _PAIR_RULE.format(rule=case.rule or _CHECK)
