"""JSON Lines, read and written one way everywhere.

Lines end at ``\\n`` only: ``str.splitlines()`` also splits at U+2028, U+2029, U+0085, \\x1c..\\x1e
and \\r, which are legal inside a JSON string, so a record holding one would be cut in two and
lost. Records are written with ``ensure_ascii``, so no such character (and no lone surrogate,
which cannot be encoded as UTF-8) ever reaches the file raw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# A lone surrogate as a JSON escape: a high one not followed by a low one, or a low one not
# preceded by a high one (an escaped backslash before the 'u' is text, not an escape).
_LONE_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*(\\u[dD][89aAbB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89aAbB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps_line(record: Any) -> str:
    """One JSONL line (with its ``\\n``): ASCII only, so it splits and encodes safely anywhere."""
    return json.dumps(record, ensure_ascii=True, default=str) + "\n"


def split_lines(raw: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a JSONL file's bytes, split at ``\\n`` only; blank lines skipped."""
    for no, line in enumerate(raw.split(b"\n"), 1):
        if line.strip():
            yield no, line


def iter_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, object) of each non-blank line, read one line at a time (a large run is never
    held whole); the object is None for a line that is not a JSON object (see :func:`read_records`).
    A binary file's lines end at ``\n`` only, as :func:`split_lines` splits."""
    with open(path, "rb") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                rec = None
            yield no, rec if isinstance(rec, dict) else None


def iter_offsets(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(byte offset, object) of each non-blank line, as :func:`iter_records` reads them: a reader
    that keeps only offsets can come back for a line (:func:`read_at`) without holding it."""
    with open(path, "rb") as f:
        offset = 0
        for line in f:
            at, offset = offset, offset + len(line)
            if line.strip():
                yield at, _object(line)


def read_at(f: Any, offset: int) -> dict[str, Any] | None:
    """The object of the line at ``offset`` of the binary file ``f`` (see :func:`iter_offsets`)."""
    f.seek(offset)
    return _object(f.readline())


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return rec if isinstance(rec, dict) else None


def read_records(path: str | Path) -> tuple[list[tuple[int, dict[str, Any]]], list[int]]:
    """(line number, object) of each readable line, and the numbers of the lines that are not a
    JSON object (a torn last line of a killed or failed write, text that is not UTF-8). Lines
    end at ``\\n`` only."""
    records: list[tuple[int, dict[str, Any]]] = []
    bad: list[int] = []
    for no, line in split_lines(Path(path).read_bytes()):
        try:
            rec = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            bad.append(no)
            continue
        if isinstance(rec, dict):
            records.append((no, rec))
        else:
            bad.append(no)
    return records, bad


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def may_hold_surrogate(raw: bytes) -> bool:
    """False when JSON text cannot hold a surrogate (UTF-8 cannot encode one raw, so only an
    escape can): skips walking large files that have none."""
    return _SURROGATE_ESCAPE.search(raw) is not None


def lone_surrogate(value: Any, where: str = "") -> str | None:
    """The field path (``question``, ``haystack_sessions[2][0].content``) of the first string,
    key included, that holds a lone surrogate (valid JSON, but not text: it cannot be written as
    UTF-8); None when there is none."""
    if isinstance(value, str):
        return (where or "(value)") if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            name = str(k).encode("utf-8", "backslashreplace").decode("utf-8")  # printable, as the escape
            path = f"{where}.{name}" if where else name
            if isinstance(k, str) and _SURROGATE.search(k):
                return path
            found = lone_surrogate(v, path)
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = lone_surrogate(v, f"{where}[{i}]")
            if found:
                return found
    return None


def lone_surrogate_line(text: str) -> int | None:
    """The line of the first lone-surrogate escape (``\\ud800``) in JSON text, if one is found."""
    m = _LONE_ESCAPE.search(text)
    return text.count("\n", 0, m.start(1)) + 1 if m else None


SURROGATE_HINT = "holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not text"
