"""What a run reads: where a benchmark's data file is (--data: a path, a catalog name or a catalog
file's name, see chateval.datasets.locate; or, when it is not given, the data folders), and which
questions it takes (one meaning of --question-ids, --per-type and --limit for every benchmark,
applied in that order, keeping the data set's own order)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ..datasets.catalog import find, not_found_hint
from ..datasets.locate import find_data, search_folders
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


# --- where the data file is ---------------------------------------------------------------------


def default_data_candidates(folder: str) -> list[Path]:
    """Where a benchmark's data folder is looked for when --data is not given: ``folder`` in each
    data folder (``$CHATEVAL_DATA_DIR`` alone when set, else ``~/.cache/chateval/data``, where
    ``chateval data get`` puts files, then ../shared/data next to the repository and the working
    directory)."""
    return [base / folder for base in search_folders()]


def resolve_data(given: str | None, folder: str, files: Sequence[str], what: str) -> Path:
    """The data path to load: the file or folder given with --data (a catalog name: the folder
    holding its files), else the first default folder that holds one of ``files``."""
    from ..datasets.common import DatasetError

    get = not_found_hint(files)
    hint = f"pass --data PATH (the {folder} folder or {' / '.join(files)})"
    if given is None:
        cands = default_data_candidates(folder)
        for cand in cands:
            if any((cand / f).is_file() for f in files):
                return cand
        looked = ", ".join(str(c) for c in cands)
        raise DatasetError(f"{what} data not found (looked in {looked}){get}, or {hint}")
    path = Path(given).expanduser()
    if path.is_dir():
        if not any((path / f).is_file() for f in files):
            raise DatasetError(f"{path}: no {' or '.join(files)} in this folder{get}, or {hint}")
        return path
    if not path.exists():
        try:
            path = find_data(given, what)
        except DatasetError as e:
            raise DatasetError(f"{e}, or {hint}") from None
        if find(given) is not None:  # a catalog name: its folder, as when --data is not given
            return path.parent
    return path
