"""Where a benchmark's data is read from when --data is not given."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..datasets.catalog import data_root, not_found_hint


def default_data_candidates(folder: str) -> list[Path]:
    """Where a benchmark's data folder is looked for when --data is not given: the data folder
    (``$CHATEVAL_DATA_DIR``, else ``~/.cache/chateval/data``, where ``chateval data get`` puts
    files), then ../shared/data next to the repository and relative to the working directory."""
    repo = Path(__file__).resolve().parents[2]
    cands = [
        data_root() / folder,
        repo.parent / "shared" / "data" / folder,
        Path.cwd().parent / "shared" / "data" / folder,
    ]
    return list(dict.fromkeys(c.resolve() for c in cands))


def resolve_data(given: str | None, folder: str, files: Sequence[str], what: str) -> Path:
    """The data path to load: the file or folder given with --data, or the first default folder
    that holds one of ``files``."""
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
    path = Path(given)
    if path.is_dir():
        if not any((path / f).is_file() for f in files):
            raise DatasetError(f"{path}: no {' or '.join(files)} in this folder{get}, or {hint}")
        return path
    if not path.exists():
        raise DatasetError(f"{path}: {what} data not found{not_found_hint([path.name]) or get}, or {hint}")
    return path
