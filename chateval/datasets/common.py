from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..util.errors import InputError
from ..util.jsonl import SURROGATE_HINT, lone_surrogate, lone_surrogate_line, may_hold_surrogate, split_lines
from .catalog import not_found_hint


class DatasetError(InputError):
    """A dataset file that does not have the expected shape; the message names the entry."""


def read_json(path: str | Path, what: str, expected: str | None = None) -> Any:
    """A whole JSON file; errors name the file, the line and (for text that is not text) the field.
    ``expected``: the format the caller wants, named when the file is not JSON (or is JSON Lines)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = json.loads(raw)
        if may_hold_surrogate(raw) and (field := lone_surrogate(data)):
            # Valid JSON, but no string holding it can be written as UTF-8: refused here, not
            # when a run's record or report fails to be written.
            line = lone_surrogate_line(raw.decode("utf-8", errors="replace"))
            raise DatasetError(f"{path}{f':{line}' if line else ''}: field '{field}' {SURROGATE_HINT}")
        return data
    except FileNotFoundError:
        raise DatasetError(f"{path}: {what} file not found{not_found_hint([path.name])}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read {what} file ({e})") from None
    except json.JSONDecodeError as e:
        # "Extra data": a second JSON value after the first, i.e. most often a JSON Lines file.
        lines = "; this looks like JSON Lines (one object per line)" if e.msg == "Extra data" else ""
        want = f"; expected {expected}" if expected else f"; expected one JSON document ({what})" if lines else ""
        raise DatasetError(f"{path}:{e.lineno}: invalid JSON ({e.msg}){lines}{want}") from None
    except RecursionError:
        raise DatasetError(f"{path}: invalid JSON (nested too deeply)") from None


_WS = re.compile(r"[ \t\n\r]*")  # JSON's whitespace, as the json module skips it


def _skip(text: str, i: int) -> int:
    m = _WS.match(text, i)  # always matches (possibly nothing)
    return m.end() if m else i


def array_items(text: str) -> Iterator[tuple[str, Any]]:
    """(its text, its value) of each element of the JSON array ``text``, decoded one at a time:
    a reader that keeps a little of each never holds the whole document parsed. The values are
    those ``json.loads(text)`` gives; text that is not one JSON array raises ``ValueError``
    (``json.JSONDecodeError`` for bad JSON) when the reader gets there, so a caller that must
    report errors as ``read_json`` does reads the file with it then."""
    decoder = json.JSONDecoder()
    i = _skip(text, 0)
    if not text.startswith("[", i):
        raise ValueError("not a JSON array")
    i = _skip(text, i + 1)
    more = not text.startswith("]", i)
    while more:
        value, end = decoder.raw_decode(text, i)
        yield text[i:end], value
        i = _skip(text, end)
        more = text.startswith(",", i)
        if not more and not text.startswith("]", i):
            raise ValueError(f"expected ',' or ']' at character {i}")
        if more:
            i = _skip(text, i + 1)
    if _skip(text, i + 1) != len(text):
        raise ValueError("extra data after the array")


def require(entry: Any, key: str, types: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(entry, dict):
        raise DatasetError(f"{where}: expected an object, got {type(entry).__name__}")
    if key not in entry:
        raise DatasetError(f"{where}: field '{key}' missing")
    value = entry[key]
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise DatasetError(f"{where}: field '{key}' should be {names}, got {type(value).__name__}")
    return value


def jsonl_objects(path: str | Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file; errors name file and line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: {what} file not found{not_found_hint([path.name])}") from None
    except OSError as e:
        raise DatasetError(f"{path}: cannot read {what} file ({e.strerror})") from None
    for no, line in split_lines(raw):
        try:
            row = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise DatasetError(f"{path}:{no}: not valid UTF-8") from None
        except json.JSONDecodeError as e:
            raise DatasetError(f"{path}:{no}: invalid JSON ({e.msg})") from None
        except RecursionError:
            raise DatasetError(f"{path}:{no}: invalid JSON (nested too deeply)") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{no}: expected a JSON object, got {type(row).__name__}")
        if may_hold_surrogate(line) and (field := lone_surrogate(row)):
            raise DatasetError(f"{path}:{no}: field '{field}' {SURROGATE_HINT}")
        yield no, row
