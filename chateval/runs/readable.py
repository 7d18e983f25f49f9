"""Run files read back (``--resume``) as hostile input: a path that is a directory, a device
(``/dev/zero`` behind a symlink never ends), a pipe, or JSON that is not an object or nests deep
enough to blow the parser's stack is a one-line InputError (exit 2), checked before the file is
read whole."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..util.errors import InputError

MAX_JSON_BYTES = 64 << 20  # config.json / summary.json: a few KB when chateval wrote them


def regular_size(path: Path) -> int:
    """The size of ``path`` when it is a regular file (symlinks followed), else an InputError."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "a device, pipe or socket"
        raise InputError(f"{path}: {what}, not a file; a run's files are regular files chateval wrote")
    return st.st_size


def read_json_object(path: Path, limit: int = MAX_JSON_BYTES) -> dict[str, Any]:
    """A run's JSON file (config.json, summary.json) as an object, or a one-line InputError."""
    size = regular_size(path)
    if size > limit:
        raise InputError(f"{path}: {size:,} bytes, more than a run file of this kind can be ({limit:,})")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a run file (not UTF-8 text, byte {e.start})") from None
    except RecursionError:
        raise InputError(f"{path}: not a run file (JSON nested too deep to read)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not readable JSON ({getattr(e, 'strerror', None) or e})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a run file (a JSON {type(data).__name__}, not an object)")
    return data


__all__ = ["MAX_JSON_BYTES", "read_json_object", "regular_size"]
