from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError


class DatasetError(InputError):
    """A dataset file that does not have the expected shape; the message names the entry."""


def read_json(path: str | Path, what: str) -> Any:
    path = Path(path)
    try:
        with open(path, "rb") as f:
            return json.load(f)
    except FileNotFoundError:
        raise DatasetError(f"{path}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read {what} file ({e})") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except RecursionError:
        raise DatasetError(f"{path}: invalid JSON (nested too deeply)") from None


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
