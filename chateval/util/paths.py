"""Where the data folders (personas/, strategies/, prompts/) are found.

In a built wheel they sit inside the package under ``chateval/_data``; in a source checkout
(including editable installs) they are the top-level folders of the repository. An installed
package adds folders of personas or presets through the entry-point groups
``chateval.personas`` and ``chateval.presets`` (each entry: a folder path, or a callable
returning one).
"""

from __future__ import annotations

import importlib.metadata as md
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from .errors import ConfigError

_PKG = Path(__file__).resolve().parent.parent  # the chateval package (this file is in chateval/util/)


def data_dir(name: str) -> Path:
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    return _PKG.parent / name


# The data folders installed packages may add to, by entry-point group.
ENTRY_POINT_GROUPS = {"personas": "chateval.personas", "strategies": "chateval.presets"}


@cache
def entry_point_dirs(name: str) -> tuple[Path, ...]:
    """Folders of ``name`` declared by installed packages, in entry-point name order."""
    group = ENTRY_POINT_GROUPS.get(name)
    out: list[Path] = []
    for ep in sorted(md.entry_points(group=group) if group else [], key=lambda e: e.name):
        dist = ep.dist.name if ep.dist else "an installed package"
        try:
            obj = ep.load()
            folder = Path(obj() if callable(obj) else obj)
        except BaseException as e:  # noqa: BLE001 - a broken package is one line, not an exit
            raise ConfigError(
                f"entry point '{ep.name}' ({group}) of {dist}: failed to load ({type(e).__name__}: {e})"
            ) from None
        if not folder.is_dir():
            raise ConfigError(f"entry point '{ep.name}' ({group}) of {dist}: {folder} is not a folder")
        out.append(folder)
    return tuple(out)


def search_path(name: str, extra: Sequence[str | Path] | None = None) -> list[Path]:
    """User folders first (so they can override built-ins by file name), then the built-in one,
    then installed packages' folders (which add names but cannot shadow a built-in)."""
    dirs = [Path(p) for p in (extra or [])]
    return dirs + [data_dir(name)] + list(entry_point_dirs(name))


def inside(path: str | Path, root: str | Path) -> bool:
    """``path``, with every link followed, is ``root`` or under it (``root``'s own links followed
    too): a link inside a folder that leads out of it is not inside."""
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except (OSError, RuntimeError):  # a link loop
        return False
