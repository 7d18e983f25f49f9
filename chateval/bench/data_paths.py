"""Where a benchmark's data is read from: --data (a path, a catalog name or a catalog file's
name, see chateval.datasets.locate) or, when it is not given, the data folders."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..datasets.catalog import find, not_found_hint
from ..datasets.locate import find_data, search_folders


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
