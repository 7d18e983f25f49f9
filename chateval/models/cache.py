"""On-disk completion cache.

autogen's ``ChatCompletionCache`` keys only on the messages, so two models or temperatures
would share entries; this key includes the model, base URL, generation parameters, seed,
response format and the full messages (including speaker names).

Entries are JSON text in a :class:`~chateval.util.datastore.DataStore` (SQLite), never pickles: a
cache folder someone else can write (shared, copied, planted) gives at worst a wrong reply, not
code run. An entry that is not a completion is a miss (the call is made again).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..util.datastore import DataStore
from .backends import Completion


def default_cache_dir() -> Path:
    env = os.environ.get("CHATEVAL_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "chateval" / "completions"


def cache_key(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CompletionCache:
    def __init__(self, directory: str | Path | None = None) -> None:
        self.given = directory
        self.directory = Path(directory) if directory else default_cache_dir()
        # Opened on first use: a run stopped by bad input or settings writes nothing anywhere. An
        # existing folder that is not a cache of ours (an old pickle store, random bytes) is one
        # error naming it now, before any work, not a failed call per sample.
        self._store = DataStore(self.directory, "completion cache")
        self._store.check()

    def __reduce__(self) -> tuple[Any, ...]:
        # On a Ray worker: the folder given, or the worker's own default (--ray-cache-dir sets it).
        return (CompletionCache, (self.given,))

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self._store.get(key)
        if raw is None:
            return None
        try:
            value = json.loads(raw.decode("utf-8"))
            Completion.model_validate(value)  # a damaged or foreign entry is a miss, not a failed call
        except (UnicodeDecodeError, ValueError, RecursionError, ValidationError):
            return None
        return value if isinstance(value, dict) else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        self._store.set(key, json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"))

    def delete(self, key: str) -> None:
        self._store.delete(key)

    def close(self) -> None:
        self._store.close()
