"""Where the data folders (personas/, strategies/, prompts/) are found.

In a built wheel they sit inside the package under ``chateval/_data``; in a source checkout
(including editable installs) they are the top-level folders of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    return _PKG.parent / name


def search_path(name: str, extra: list[str | Path] | None = None) -> list[Path]:
    """User folders first (so they can override built-ins by file name), then the built-in one."""
    dirs = [Path(p) for p in (extra or [])]
    return dirs + [data_dir(name)]
