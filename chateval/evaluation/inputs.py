"""Reading JSONL inputs with one-line errors naming file, line and field.

The whole file is checked before any model call, so a bad line costs nothing. With
``skip_invalid`` bad lines are collected (and reported) instead of stopping the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..debate.samples import Sample
from ..debate.tasks import MAX_NAME_CHARS, TaskFormat, get_task
from ..stats.labels import MAX_ANNOTATORS
from ..util.errors import InputError
from ..util.jsonl import SURROGATE_HINT, lone_surrogate, may_hold_surrogate, split_lines

MAX_FIELD_CHARS = 200_000  # a runaway field (e.g. a 1 MB answer) is an input error, not a prompt
MAX_ASPECTS = 20
_TEXT_FIELDS = ("question", "answer", "answer_1", "answer_2", "reference", "guidelines")


def _check_label(fmt: TaskFormat, label: Any) -> None:
    """A label must mean something for the task (its format says what): otherwise agreement
    would silently drop it. A list is one label per annotator (their majority or mean is the
    reference)."""
    if label is None:
        return
    if isinstance(label, list):
        if not label:
            raise ValueError("field 'label': an empty list (give one label per annotator)")
        if len(label) > MAX_ANNOTATORS:
            raise ValueError(f"field 'label': {len(label)} annotators, over the limit of {MAX_ANNOTATORS}")
        for i, one in enumerate(label):
            if isinstance(one, list) or one is None:
                raise ValueError(f"field 'label[{i}]': {json.dumps(one)[:60]} is not one annotator's label")
            try:
                fmt.check_label(one)
            except ValueError as e:
                raise ValueError(str(e).replace("field 'label'", f"field 'label[{i}]'", 1)) from None
        fmt.check_labels(label)
        return
    fmt.check_label(label)


class InvalidLine(BaseModel):
    line: int
    error: str


def load_samples(
    path: str | Path,
    task: str,
    *,
    skip_invalid: bool = False,
    max_chars: int = MAX_FIELD_CHARS,
    aspects: list[str] | None = None,
) -> tuple[list[Sample], list[InvalidLine]]:
    path = Path(path)
    fmt = get_task(task)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read input ({e.strerror or e})") from None
    samples: list[Sample] = []
    invalid: list[InvalidLine] = []
    seen: dict[str, int] = {}
    for lineno, blob in split_lines(raw):
        try:
            sample = _parse_line(blob, lineno, fmt, max_chars, aspects)
            if sample.id in seen:
                raise ValueError(f"field 'id': duplicate id '{sample.id}' (first on line {seen[sample.id]})")
            seen[sample.id] = lineno
            samples.append(sample)
        except ValueError as e:
            message = f"{path}:{lineno}: {e}"
            if not skip_invalid:
                raise InputError(message) from None
            invalid.append(InvalidLine(line=lineno, error=message))
    if not samples and not invalid:
        raise InputError(f"{path}: no records (expected one JSON object per line)")
    return samples, invalid


def _parse_line(blob: bytes, lineno: int, fmt: TaskFormat, max_chars: int, aspects: list[str] | None) -> Sample:
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"not valid UTF-8 (byte {e.start})") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise ValueError("invalid JSON (nested too deeply)") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    if may_hold_surrogate(blob) and (field := lone_surrogate(record)):
        raise ValueError(f"field '{field}': {SURROGATE_HINT}")
    rid = record.pop("id", None)
    if rid is None:
        rid = f"line-{lineno}"
    elif isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise ValueError("field 'id': expected a string or an integer")
    rid = str(rid)
    if not rid.strip():
        raise ValueError("field 'id': empty")
    if len(rid) > MAX_NAME_CHARS:
        raise ValueError(f"field 'id': {len(rid):,} characters, over the limit of {MAX_NAME_CHARS}")
    _check_label(fmt, record.get("label"))
    for field in fmt.required:
        if field not in record or record[field] is None:
            raise ValueError(f"field '{field}': missing (the {fmt.name} task needs {', '.join(fmt.required)})")
    for field in _TEXT_FIELDS:
        if field in record and record[field] is not None:
            value = record[field]
            if isinstance(value, (int, float)) and not isinstance(value, bool) and field == "reference":
                record[field] = value = str(value)  # numeric gold answers (counts) are common
            if not isinstance(value, str):
                raise ValueError(f"field '{field}': expected a string, got {type(value).__name__}")
            if field in fmt.required and not value.strip():
                raise ValueError(f"field '{field}': empty")
            if len(value) > max_chars:
                raise ValueError(f"field '{field}': {len(value):,} characters, over the limit of {max_chars:,}")
    ctx = record.get("context")
    if ctx is not None and not isinstance(ctx, (str, list)):
        raise ValueError("field 'context': expected a string or a list of turns")
    if isinstance(ctx, list) and not all(isinstance(t, (str, dict)) for t in ctx):
        raise ValueError("field 'context': list items must be strings or {role, content} objects")
    if ctx is not None and len(json.dumps(ctx)) > max_chars * 5:
        raise ValueError(f"field 'context': over the limit of {max_chars * 5:,} characters")
    asp = record.get("aspects", aspects)
    if asp is not None and (not isinstance(asp, list) or not all(isinstance(a, str) and a.strip() for a in asp)):
        raise ValueError("field 'aspects': expected a list of aspect names")
    if asp is not None and (len(asp) > MAX_ASPECTS or any(len(a) > MAX_NAME_CHARS for a in asp)):
        raise ValueError(f"field 'aspects': at most {MAX_ASPECTS} names of at most {MAX_NAME_CHARS} characters")
    if asp is not None and any("\n" in a or "<<<" in a or ">>>" in a for a in asp):
        raise ValueError("field 'aspects': an aspect name is one line, without <<< or >>>")
    if len(json.dumps(record, default=str)) > max_chars * 10:  # unknown fields are kept as meta: bound them too
        raise ValueError(f"record over the limit of {max_chars * 10:,} characters")
    known = set(Sample.model_fields) - {"id", "meta", "aspects"}
    meta = {k: v for k, v in record.items() if k not in known and k != "aspects"}
    fields = {k: v for k, v in record.items() if k in known}
    return Sample(id=rid, aspects=asp, meta=meta, **fields)
