"""Answers a user already has, to be judged without running any system: LongMemEval's
hypothesis files (``{"question_id", "hypothesis"}`` per line, as its evaluation script reads
them) and LoCoMo prediction files (``{"sample_id", "question", "prediction"}`` per line)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .common import DatasetError, jsonl_objects


class Answer(BaseModel):
    key: str  # question_id, or "sample_id\tquestion" for LoCoMo
    text: str
    line: int
    retrieved_session_ids: list[str] | None = None


def _str(row: dict[str, Any], field: str, where: str) -> str:
    if field not in row:
        raise DatasetError(f"{where}: field '{field}': missing")
    v = row[field]
    if isinstance(v, (int, float)) and not isinstance(v, bool) and field.endswith("_id"):
        return str(v)
    if not isinstance(v, str):
        raise DatasetError(f"{where}: field '{field}': should be a string, got {type(v).__name__}")
    return v


def _read(path: str | Path, id_fields: tuple[str, ...], text_field: str) -> dict[str, Answer]:
    path = Path(path)
    out: dict[str, Answer] = {}
    for no, row in jsonl_objects(path, "answers"):
        where = f"{path}:{no}"
        key = "\t".join(_str(row, f, where) for f in id_fields)
        text = _str(row, text_field, where)
        ids = row.get("retrieved_session_ids")
        if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
            raise DatasetError(f"{where}: field 'retrieved_session_ids': should be a list of strings")
        if key in out:
            raise DatasetError(
                f"{where}: duplicate {' + '.join(id_fields)} {key.replace(chr(9), ' / ')!r} "
                f"(first on line {out[key].line})"
            )
        out[key] = Answer(key=key, text=text, line=no, retrieved_session_ids=ids)
    if not out:
        raise DatasetError(f"{path}: no answers")
    return out


def load_hypotheses(path: str | Path) -> dict[str, Answer]:
    """LongMemEval hypotheses by question_id."""
    return _read(path, ("question_id",), "hypothesis")


def load_predictions(path: str | Path) -> dict[str, Answer]:
    """LoCoMo predictions by "sample_id<TAB>question" (the question text exactly as in the data)."""
    return _read(path, ("sample_id", "question"), "prediction")


def match_answers(
    answers: dict[str, Answer],
    known: Iterable[str],
    wanted: Iterable[str],
    path: str | Path,
    *,
    allow_missing: bool,
    what: str,
) -> tuple[dict[str, Answer], list[str]]:
    """Check a file of answers against the data: an answer for an id the data does not have is
    an error; a wanted question without an answer is an error unless ``allow_missing``
    (then it is left out and returned). Returns (answers for wanted ids, missing ids)."""
    known = set(known)
    for a in answers.values():
        if a.key not in known:
            raise DatasetError(f"{path}:{a.line}: {what} {a.key.replace(chr(9), ' / ')!r} is not in the data")
    wanted = list(wanted)
    missing = [k for k in wanted if k not in answers]
    if missing and not allow_missing:
        raise DatasetError(
            f"{path}: no answer for {what} {missing[0].replace(chr(9), ' / ')!r}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            + "; --allow-missing judges the answers that are there"
        )
    return {k: answers[k] for k in wanted if k in answers}, missing
