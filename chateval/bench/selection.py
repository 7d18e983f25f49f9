"""Which questions a run takes: one meaning of --question-ids, --per-type and --limit for every
benchmark (applied in that order, keeping the data set's own order)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..util.errors import ConfigError
from .config import BenchConfig

T = TypeVar("T")


def select(
    items: Sequence[T],
    config: BenchConfig,
    *,
    key: Callable[[T], str],
    kind: Callable[[T], str] | None = None,
    what: str = "question",
) -> list[T]:
    """``--question-ids`` (each must exist), then the first ``--per-type`` of each type (by
    ``kind``), then the first ``--limit``."""
    out = list(items)
    if config.question_ids is not None:
        by_key: dict[str, list[T]] = {}
        for it in out:
            by_key.setdefault(key(it), []).append(it)
        missing = [q for q in config.question_ids if q not in by_key]
        if missing:
            raise ConfigError(
                f"--question-ids: no {what} '{missing[0]}' in the data"
                + (f" ({len(missing)} ids not found)" if len(missing) > 1 else "")
            )
        wanted = set(config.question_ids)
        out = [it for it in out if key(it) in wanted]
    if config.per_type is not None:
        if kind is None:
            raise ConfigError(f"--per-type: this benchmark's {what}s have no type")
        seen: dict[str, int] = {}
        kept = []
        for it in out:
            k = kind(it)
            if seen.get(k, 0) < config.per_type:
                kept.append(it)
                seen[k] = seen.get(k, 0) + 1
        out = kept
    if config.limit is not None:
        out = out[: config.limit]
    return out
