"""Errata of LoCoMo's gold answers (the locomo-audit ``errors.json`` format) and their overlay.

An audit lists, per question it found fault with, the gold answer, the kind of error and the
answer the transcript supports. Only some error kinds change what a correct answer is: a wrong
evidence citation (``WRONG_CITATION``) leaves the gold answer standing. The overlay replaces
the gold of the others; the share of items left with a standing gold is the ceiling a perfect
system can reach on the raw gold (LoCoMo categories 1-4: 1,441 of 1,540, 93.57%).

Items are matched by question id (``locomo_<conversation index>_qa<index in its qa list>``, the
index counting every category, as EverMemOS-style result files and the audit number them), else
by the question's text within the conversation (files without ids, such as Zep's grades).
Used by ``chateval rejudge --errata`` and ``bench locomo --errata``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .common import DatasetError, read_json, require

# Error kinds after which the gold answer still stands (only the cited evidence was wrong).
ANSWER_STANDS = frozenset({"WRONG_CITATION"})
_QID = re.compile(r"locomo_(\d+)_qa(\d+)")


def locomo_question_id(conversation: int, qa_index: int) -> str:
    """The id of the ``qa_index``-th question (counting every category) of the ``conversation``-th
    conversation of locomo10.json."""
    return f"locomo_{conversation}_qa{qa_index}"


def conversation_of(question_id: str) -> int | None:
    """The conversation index in a ``locomo_<k>_qa<n>`` id (None for other ids)."""
    m = _QID.fullmatch(question_id.strip())
    return int(m.group(1)) if m else None


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class Erratum(BaseModel):
    """One audited question: what the gold says, what is wrong with it, and the answer the
    transcript supports."""

    question_id: str
    question: str
    golden_answer: str
    category: int
    error_type: str
    correct_answer: str
    reasoning: str = ""
    cited_evidence: list[str] = Field(default_factory=list)
    correct_evidence: list[str] = Field(default_factory=list)

    @property
    def changes_answer(self) -> bool:
        """True when the gold answer itself is wrong (not only its evidence citation)."""
        return self.error_type not in ANSWER_STANDS


class Errata(BaseModel):
    """An errata file: its entries, where it came from and its sha256 (for the run's config)."""

    path: str
    sha256: str
    entries: list[Erratum]

    def model_post_init(self, context: Any) -> None:
        self._by_id = {e.question_id: e for e in self.entries}
        self._by_text: dict[str, list[Erratum]] = {}
        for e in self.entries:
            self._by_text.setdefault(_norm(e.question), []).append(e)

    @property
    def wrong_gold(self) -> list[Erratum]:
        """The entries whose gold answer is wrong (the ones the overlay corrects)."""
        return [e for e in self.entries if e.changes_answer]

    def counts(self) -> dict[str, int]:
        """Entries per error type."""
        out: dict[str, int] = {}
        for e in self.entries:
            out[e.error_type] = out.get(e.error_type, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def find(
        self, question_id: str | None = None, question: str | None = None, conversation: int | None = None
    ) -> Erratum | None:
        """The entry for a question: by id, else by its text (within ``conversation`` when given,
        or the id's conversation); None when the audit does not list it or the text is ambiguous."""
        if question_id and question_id in self._by_id:
            return self._by_id[question_id]
        if question is None:
            return None
        if conversation is None and question_id:
            conversation = conversation_of(question_id)
        found = self._by_text.get(_norm(question), [])
        if conversation is not None:
            found = [e for e in found if conversation_of(e.question_id) == conversation]
        return found[0] if len(found) == 1 else None

    def corrected(
        self, gold: str, question_id: str | None = None, question: str | None = None, conversation: int | None = None
    ) -> str:
        """The gold after the overlay: the audit's answer where the gold is wrong, else ``gold``."""
        e = self.find(question_id, question, conversation)
        return e.correct_answer if e is not None and e.changes_answer else gold


def load_errata(path: str | Path) -> Errata:
    """Read an errata file (a JSON list of audit entries); errors name the file, entry and field."""
    data = read_json(path, "errata", expected="a JSON list of audit entries (locomo-audit errors.json)")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of audit entries (locomo-audit errors.json format)")
    entries, seen = [], set()
    for i, raw in enumerate(data):
        where = f"{path}: entry {i}"
        qid = require(raw, "question_id", str, where)
        where = f"{where} ({qid})"
        for key in ("question", "golden_answer", "error_type", "correct_answer"):
            require(raw, key, (str, int, float), where)
        cat = require(raw, "category", (int, str), where)
        try:
            category = int(cat)
        except ValueError:
            raise DatasetError(f"{where}: field 'category' should be a number, got {cat!r}") from None
        if qid in seen:
            raise DatasetError(f"{where}: question_id given twice")
        seen.add(qid)
        entries.append(
            Erratum(
                question_id=qid,
                question=str(raw["question"]),
                golden_answer=str(raw["golden_answer"]),
                category=category,
                error_type=str(raw["error_type"]),
                correct_answer=str(raw["correct_answer"]),
                reasoning=str(raw.get("reasoning") or ""),
                cited_evidence=[str(x) for x in raw.get("cited_evidence") or []],
                correct_evidence=[str(x) for x in raw.get("correct_evidence") or []],
            )
        )
    return Errata(path=str(path), sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest(), entries=entries)
