"""On-disk completion cache.

autogen's ``ChatCompletionCache`` keys only on the messages, so two models or temperatures
would share entries; this key includes the model, base URL, generation parameters, seed,
response format and the full messages (including speaker names).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import diskcache


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
        # Opened on first use: a run stopped by bad input or settings writes nothing anywhere.
        self._cache: diskcache.Cache | None = None

    def _open(self) -> diskcache.Cache:
        if self._cache is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._cache = diskcache.Cache(str(self.directory))
        return self._cache

    def __reduce__(self) -> tuple[Any, ...]:
        # On a Ray worker: the folder given, or the worker's own default (--ray-cache-dir sets it).
        return (CompletionCache, (self.given,))

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._open().get(key)
        return value if isinstance(value, dict) else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        self._open().set(key, value)

    def delete(self, key: str) -> None:
        self._open().delete(key)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
