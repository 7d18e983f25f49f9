"""The head-to-head pair format, shared by the two-system run (head2head.py) and the run with
more systems (multi.py): the cases read from a LongMemEval or LoCoMo file, what the
panel sees for a pair of answers (with ``--context gold``: the gold answer and a checking rule).
A pair's verdict in A/B terms is ``bench.records.verdict_record`` (msc-response writes it too)."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...datasets.checks import UniqueIds
from ...datasets.common import DatasetError, array_items, read_json
from ...datasets.locomo import CATEGORIES, locomo_conversations
from ...datasets.longmemeval import LMEQuestion, entry_where, lme_question, lme_questions
from ...memory.types import Session
from ...util.jsonl import may_hold_surrogate
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
    # The sessions a system ingests. LoCoMo: the conversation's, one list its QAs share.
    # LongMemEval: the entry's JSON text, zlib-compressed, parsed again when a system ingests it
    # (a question's haystack is its own: parsed and held for every case, it would be most of a
    # run's memory).
    history: list[Session] | bytes
    rule: str | None  # the checking rule shown with --context gold
    names: set[str] = field(default_factory=set)  # what --types matches
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def sessions(self) -> list[Session]:
        if isinstance(self.history, bytes):
            entry = json.loads(zlib.decompress(self.history))
            return lme_question(entry, f"question_id {self.key}").sessions  # checked when the file was read
        return self.history

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
    """('longmemeval' | 'locomo', cases) from an official file of either benchmark. A LongMemEval
    file is read an entry at a time, each case keeping its entry compressed (``lazy_lme_cases``)."""
    lazy = lazy_lme_cases(path)
    if lazy is not None:
        return "longmemeval", lazy
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


def lazy_lme_cases(path: str | Path) -> list[Case] | None:
    """The cases of a LongMemEval file decoded one entry at a time, each checked as
    ``lme_questions`` checks it, keeping its entry's text compressed instead of its parsed
    sessions. None for any other file, or one with anything wrong: ``load_cases`` then reads it
    whole, as before, and reports the same error it always has (a JSON error anywhere in the file
    before an entry's)."""
    try:
        raw = Path(path).read_bytes()
        if may_hold_surrogate(raw):
            return None  # read_json's check for text that cannot be written
        out: list[Case] = []
        ids = UniqueIds("question_id")
        for idx, (text, entry) in enumerate(array_items(raw.decode("utf-8"))):
            if idx == 0 and not (isinstance(entry, dict) and "haystack_sessions" in entry):
                return None  # not LongMemEval
            where = entry_where(path, idx, entry)
            q = lme_question(entry, where)
            ids.add(q.question_id, where, idx)
            out.append(_lme_case(q, zlib.compress(text.encode("utf-8"))))
    except (OSError, ValueError, RecursionError, DatasetError):
        return None
    return out or None


def _lme_cases(data: list[Any], path: str | Path) -> list[Case]:
    return [_lme_case(q, q.sessions) for q in lme_questions(data, path)]


def _lme_case(q: LMEQuestion, history: list[Session] | bytes) -> Case:
    label = "abstention" if q.is_abstention else q.question_type
    return Case(
        key=q.question_id,
        group=q.question_id,
        question=q.question,
        gold=q.answer,
        now=q.question_date,
        qtype=label,
        history=history,
        rule=ABSTENTION if q.is_abstention else GUIDELINES.get(q.question_type, _CHECK),
        names={label, q.question_type},
        meta={"abstention": q.is_abstention, "question_type": q.question_type},
    )


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
                    history=conv.sessions,
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
