"""Where a benchmark's data is read from when --data is not given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence


def default_data_candidates(folder: str) -> list[Path]:
    """Where a benchmark's data folder is looked for when --data is not given: ../shared/data
    next to the repository (and relative to the working directory), or $CHATEVAL_DATA_DIR."""
    repo = Path(__file__).resolve().parents[2]
    cands = []
    if os.environ.get("CHATEVAL_DATA_DIR"):
        cands.append(Path(os.environ["CHATEVAL_DATA_DIR"]) / folder)
    cands += [repo.parent / "shared" / "data" / folder, Path.cwd().parent / "shared" / "data" / folder]
    return list(dict.fromkeys(c.resolve() for c in cands))


def resolve_data(given: str | None, folder: str, files: Sequence[str], what: str) -> Path:
    """The data path to load: the file or folder given with --data, or the default folder."""
    from ..datasets.common import DatasetError

    hint = f"pass --data PATH (the {folder} folder or {' / '.join(files)})"
    if given is None:
        for cand in default_data_candidates(folder):
            if cand.is_dir():
                return cand
        looked = ", ".join(str(c) for c in default_data_candidates(folder))
        raise DatasetError(f"{what} data not found (looked in {looked}); {hint}")
    path = Path(given)
    if path.is_dir():
        if not any((path / f).is_file() for f in files):
            raise DatasetError(f"{path}: no {' or '.join(files)} in this folder; {hint}")
        return path
    if not path.exists():
        raise DatasetError(f"{path}: {what} data not found; {hint}")
    return path
