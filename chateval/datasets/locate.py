"""The one data lookup: where a data file is looked for, used by ``chateval data list``, every
benchmark's ``--data`` and ``chateval memory ask --data`` alike, so a file ``data list`` shows as
present is the file ``--data`` finds.

``--data`` takes a path, a catalog name (``longmemeval-s``), a file name the catalog downloads
(``longmemeval_oracle.json``) or a path inside the data folder (``locomo/locomo10.json``). Names
are looked up in the data folders: ``$CHATEVAL_DATA_DIR`` alone when it is set (the user named
the folder), else ``~/.cache/chateval/data`` (where ``data get`` puts files), then
``../shared/data`` next to the repository and next to the working directory.

Where one file is wanted (``chateval rejudge``'s inputs and ``--errata``), ``find_data_file`` takes
the same, and ``NAME/FILE`` for one file of a data set with several
(``zep-locomo/zep_locomo_grades.json``): a data set's name alone must then name one file.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..util.registry import did_you_mean
from .catalog import CATALOG, DATA_DIR_ENV, data_root, find, not_found_hint
from .common import DatasetError

# The first LongMemEval release's file names. The catalog downloads the 'cleaned' release, whose
# content differs: a missing old name is not read as the new file, the error names it instead.
RENAMED = {
    "longmemeval_s.json": "longmemeval-s",
    "longmemeval_m.json": "longmemeval-m",
}


def search_folders(root: Path | None = None) -> list[Path]:
    """The data folders looked in, in order: ``root`` alone when given (``data list --to``),
    ``$CHATEVAL_DATA_DIR`` alone when set, else the default data folder then ../shared/data."""
    if root is not None:
        return [root]
    if os.environ.get(DATA_DIR_ENV):
        return [data_root()]
    repo = Path(__file__).resolve().parents[2]
    cands = [data_root(), repo.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    return list(dict.fromkeys(c.resolve() for c in cands))


def locate(rel: str, root: Path | None = None) -> Path | None:
    """The first data folder's ``rel`` (a path relative to a data folder) that is a file."""
    for base in search_folders(root):
        if (base / rel).is_file():
            return base / rel
    return None


def catalog_paths(given: str) -> list[str]:
    """The data-folder paths ``given`` may stand for: a catalog name's files, a catalog file's
    name, or ``given`` itself as a path inside the data folder."""
    ds = find(given)
    if ds is not None:
        return list(ds.reads)
    name = Path(given).name
    rels = [r for d in CATALOG for r in d.reads if Path(r).name == name]
    inside = not Path(given).is_absolute() and ".." not in Path(given).parts  # stays inside a data folder
    return list(dict.fromkeys([*rels, *([Path(given).as_posix()] if inside else [])]))


def find_data(given: str | Path, what: str) -> Path:
    """The file (or folder) ``--data given`` means: ``given`` itself when it exists, else the
    data folders' copy of the catalog file it names. DatasetError (one line: where it looked and
    the ``data get`` command) when there is none."""
    path = Path(given).expanduser()
    if path.exists():
        return path
    text = str(given)
    if path.is_absolute():
        raise DatasetError(f"{path}: {what} file not found{not_found_hint([path.name])}")
    for rel in catalog_paths(text):
        if hit := locate(rel):
            return hit
    looked = _looked()
    ds = find(text) or (find(RENAMED[text]) if text in RENAMED else None)
    renamed = f" (the catalog's file is {Path(ds.reads[0]).name}: --data {ds.name})" if text in RENAMED and ds else ""
    get = f"; get it with `chateval data get {ds.name}`" if ds else not_found_hint([path.name])
    if not ds and not renamed and len(path.parts) == 1:  # a mistyped data set or file name
        get = did_you_mean(text, [d.name for d in CATALOG] + [Path(r).name for d in CATALOG for r in d.reads]) + get
    raise DatasetError(
        f"{text}: {what} data not found{renamed} (not a file here, nor in the data folder: {looked}){get}"
    )


def _looked() -> str:
    return ", ".join(str(f) for f in search_folders())


def find_data_file(given: str, what: str) -> Path:
    """The one file ``given`` means: ``given`` itself when it exists (a path always wins); a data
    set's name when the set is one file (``locomo-audit``); ``NAME/FILE`` for one of a data set's
    files, FILE its name with or without the extension (``locomo-audit-fc/fc_gpt-4o-mini_cot``);
    else what ``find_data`` takes (a catalog file's name, a path inside the data folder).
    DatasetError (one line) when the set has several files and none is picked (it lists them), the
    pick is none of them, or the file is not downloaded (the ``data get`` command)."""
    if Path(given).expanduser().exists():
        return Path(given).expanduser()
    head, _, pick = given.partition("/")
    ds = find(head)
    if ds is None:
        try:
            return find_data(given, what)
        except DatasetError as e:  # `locomo-audt/x.json`: a mistyped data set's name before the pick
            hint = did_you_mean(head, [d.name for d in CATALOG]) if pick and "did you mean" not in str(e) else ""
            raise DatasetError(f"{e}{hint}") from None
    picks = " or ".join(f"{ds.name}/{Path(r).name}" for r in ds.reads)
    hits = [r for r in ds.reads if pick in (Path(r).name, Path(r).stem)] if pick else list(ds.reads)
    if not hits:
        raise DatasetError(f"{given}: data set {ds.name} has no file '{pick}' (its files: {picks})")
    if len(hits) > 1:
        raise DatasetError(f"{given}: data set {ds.name} has {len(hits)} files; name one: {picks}")
    if found := locate(hits[0]):
        return found
    raise DatasetError(
        f"{given}: {what} data not found (not a file here, nor in the data folder: {_looked()}); "
        f"get it with `chateval data get {ds.name}`"
    )


__all__ = ["RENAMED", "catalog_paths", "find_data", "find_data_file", "locate", "search_folders"]
