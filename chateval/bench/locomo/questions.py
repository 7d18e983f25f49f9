"""LoCoMo's questions as the official code asks them: the temporal hint, the category-5 two-option
choice and its mapping back, the gold answer of a QA, and the checks and selection of QA that the
loader leaves to the benchmark."""

from __future__ import annotations

import hashlib

from ...datasets import DatasetError, LoCoMoConversation, LoCoMoQA
from ...datasets.locomo import CATEGORIES
from .metrics import ADVERSARIAL

NOT_MENTIONED = "Not mentioned in the conversation"
TEMPORAL_HINT = " Use DATE of CONVERSATION to answer with an approximate date."


def gold_of(qa: LoCoMoQA) -> str:
    if qa.category == ADVERSARIAL:
        return qa.adversarial_answer if qa.adversarial_answer is not None else (qa.answer or "")
    return qa.answer or ""


def cat5_options(conv_id: str, qa: LoCoMoQA) -> dict[str, str]:
    """The two options of the official category-5 prompt. The official script orders them at
    random; we use a fixed coin per question (a hash) so runs are reproducible."""
    flip = hashlib.sha256(f"{conv_id}|{qa.question}".encode()).digest()[0] & 1
    adv = gold_of(qa)
    return {"a": NOT_MENTIONED, "b": adv} if flip else {"a": adv, "b": NOT_MENTIONED}


def asked_question(conv_id: str, qa: LoCoMoQA, fmt: str) -> str:
    """What the system is asked. 'official' mirrors task_eval/evaluate_gpts.py (branch code): temporal questions get
    the date hint, adversarial ones become a two-option choice with 'Not mentioned in the conversation'."""
    if fmt == "plain":
        return qa.question
    if qa.category == 2:
        return qa.question + TEMPORAL_HINT
    if qa.category == ADVERSARIAL:
        o = cat5_options(conv_id, qa)
        return f"{qa.question} Select the correct answer: (a) {o['a']} (b) {o['b']}."
    return qa.question


def resolve_choice(answer: str, options: dict[str, str]) -> str:
    """The official mapping of a bare option letter back to its text ('a', 'b', '(a)', '(b)')."""
    a = answer.strip().lower()
    if len(a) == 1:
        return options["a"] if "a" in a else options["b"]
    if len(a) == 3 and a.startswith("(") and a.endswith(")"):
        return options["a"] if "(a)" in a else options["b"]
    return answer


def check_conversations(conversations: list[LoCoMoConversation], path: str) -> None:
    """What the loader leaves to us: category numbers, gold answers and at least one session."""
    for i, c in enumerate(conversations):
        where = f"{path}: conversation {i} ({c.id})"
        if not c.sessions:
            raise DatasetError(f"{where}: no session_<n> entries")
        for j, q in enumerate(c.qa):
            if q.category not in CATEGORIES:
                raise DatasetError(f"{where}: qa {j}: unknown category {q.category} (expected 1-5)")
            if q.category != ADVERSARIAL and q.answer is None:
                raise DatasetError(f"{where}: qa {j}: field 'answer' missing (category {q.category})")
            if q.category == ADVERSARIAL and q.answer is None and q.adversarial_answer is None:
                raise DatasetError(f"{where}: qa {j}: category 5 needs 'adversarial_answer' or 'answer'")


def select_qa(conv: LoCoMoConversation, categories: list[int], max_questions: int | None) -> list[tuple[int, LoCoMoQA]]:
    """(index in the file, QA) of the selected categories, the first ``max_questions`` of them."""
    chosen = [(j, q) for j, q in enumerate(conv.qa) if q.category in categories]
    return chosen if max_questions is None else chosen[:max_questions]
