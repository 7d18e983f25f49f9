"""LongMemEval (Wu et al., ICLR 2025): the official S, M and oracle files, used unchanged."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .checks import UniqueIds, build
from .common import DatasetError, read_json, require
from .types import Session, Turn

ROLES = ("user", "assistant")  # the official files' turn roles


def parse_lme_date(value: str) -> datetime:
    """'2023/05/28 (Sun) 19:47' -> aware UTC datetime (the weekday is dropped)."""
    text = re.sub(r"\([^)]*\)", " ", value)  # drop the weekday
    try:
        return datetime.strptime(" ".join(text.split()), "%Y/%m/%d %H:%M").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"date '{value}' is not like '2023/05/28 (Sun) 19:47'") from None


def _date(value: object, field: str, where: str) -> datetime:
    try:
        return parse_lme_date(str(value))
    except ValueError as e:
        raise DatasetError(f"{where}: {field}: {e}") from None


class LMEQuestion(BaseModel):
    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: datetime
    sessions: list[Session]  # in the file's order; systems ingest them sorted by date
    answer_session_ids: list[str]

    @property
    def is_abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def later_sessions(self) -> int:
        """Haystack sessions dated after the question (ingested all the same, as the data says)."""
        return sum(1 for s in self.sessions if s.date > self.question_date)


def load_longmemeval(path: str | Path, limit: int | None = None) -> list[LMEQuestion]:
    data = read_json(path, "LongMemEval")
    if isinstance(data, list) and limit:
        data = data[:limit]
    return lme_questions(data, path)


def lme_questions(data: Any, path: str | Path) -> list[LMEQuestion]:
    """The questions of a parsed LongMemEval file, each checked; a question_id given twice is an error."""
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of questions (the official LongMemEval format)")
    if not data:
        raise DatasetError(f"{path}: no questions (an empty list)")
    out: list[LMEQuestion] = []
    ids = UniqueIds("question_id")
    for idx, entry in enumerate(data):
        where = entry_where(path, idx, entry)
        q = lme_question(entry, where)
        ids.add(q.question_id, where, idx)
        out.append(q)
    return out


def entry_where(path: str | Path, idx: int, entry: Any) -> str:
    """How errors name an entry of the file: its index and question_id."""
    qid = entry.get("question_id", "?") if isinstance(entry, dict) else "?"
    return f"{path}: entry {idx} (question_id {qid})"


def lme_question(entry: Any, where: str) -> LMEQuestion:
    """One parsed entry of the file, checked (``lme_questions`` checks each so); ``where`` names
    it in an error."""
    try:
        return _question(entry, where)
    except ValueError as e:
        raise DatasetError(f"{where}: {e}") from None


def _ids(entry: dict, key: str, where: str) -> list[str]:
    """A list of session ids (strings; numbers are taken as their text)."""
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise DatasetError(f"{where}: field '{key}' should be a list of session ids (strings)")
    return [str(v) for v in value]


def _turn(t: Any, sid: str, i: int, where: str) -> Turn:
    """One turn, type-checked: a turn without text or a has_answer that is not a boolean is an
    error, not silently dropped or read as true."""
    at = f"{where}: session '{sid}' turn {i}"
    if not isinstance(t, dict):
        raise DatasetError(f"{at}: expected an object, got {type(t).__name__}")
    for field in ("role", "content"):
        if not isinstance(t.get(field), str):
            got = "missing" if field not in t else f"should be a string, got {type(t[field]).__name__}"
            raise DatasetError(f"{at}: field '{field}' {got}")
    if t["role"] not in ROLES:  # another role would be ingested and judged as if it were one of these
        raise DatasetError(f"{at}: field 'role' should be user or assistant, got {t['role'][:40]!r}")
    has_answer = t.get("has_answer", False)
    if not isinstance(has_answer, bool):
        raise DatasetError(f"{at}: field 'has_answer' should be true or false, got {has_answer!r}")
    # Turn ids follow the official retrieval code: <session_id>_<turn index + 1>.
    return Turn(id=f"{sid}_{i + 1}", role=t["role"], content=t["content"], meta={"has_answer": has_answer})


def _question(entry: dict, where: str) -> LMEQuestion:
    require(entry, "haystack_session_ids", list, where)
    ids = _ids(entry, "haystack_session_ids", where)
    dates = require(entry, "haystack_dates", list, where)
    sessions_raw = require(entry, "haystack_sessions", list, where)
    if not (len(ids) == len(dates) == len(sessions_raw)):
        raise DatasetError(f"{where}: haystack_session_ids, haystack_dates and haystack_sessions differ in length")
    sessions = []
    copies: dict[str, int] = {}
    for sid, date, turns in zip(ids, dates, sessions_raw):
        if not isinstance(turns, list):
            raise DatasetError(f"{where}: session '{sid}' should be a list of turns")
        # Some official S haystacks list the same session twice (11 of the 400 S questions we
        # use): both copies are ingested, as the official code indexes both. A later copy gets
        # a suffixed id (ids stay unique for the systems) and remembers the official one, under
        # which it is scored.
        copies[sid] = n = copies.get(sid, 0) + 1
        own = sid if n == 1 else f"{sid}#{n}"
        copy = {} if n == 1 else {"copy_of": sid}
        turn_list = [_turn(t, own, i, where) for i, t in enumerate(turns)]
        if n > 1:
            for i, t in enumerate(turn_list):
                t.meta["copy_of"] = f"{sid}_{i + 1}"
        sessions.append(
            Session(id=own, date=_date(date, f"haystack_dates of session '{sid}'", where), turns=turn_list, meta=copy)
        )
    answer = require(entry, "answer", (str, int, float), where)  # 32 oracle answers are ints (counts)
    qid = require(entry, "question_id", (str, int), where)
    for key, value in (("answer", answer), ("question_id", qid)):
        if isinstance(value, bool):
            raise DatasetError(f"{where}: field '{key}' should be a string or a number, got bool")
    return build(
        LMEQuestion,
        where,
        question_id=str(qid),
        question_type=require(entry, "question_type", str, where),
        question=require(entry, "question", str, where),
        answer=str(answer),
        question_date=_date(require(entry, "question_date", str, where), "question_date", where),
        sessions=sessions,
        answer_session_ids=_ids(entry, "answer_session_ids", where),
    )
