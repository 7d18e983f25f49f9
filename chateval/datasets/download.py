"""Download a data set's published files into the data folder: resumable (an HTTP Range request
continues ``FILE.part``), checked (size, and sha256 where the catalog pins it), then converted
to the layout our loaders read. Used by ``chateval data get``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel

from ..util.errors import InputError
from .catalog import MIRROR_ENV, DataSet, RemoteFile
from .convert import CONVERSIONS
from .mirror import check_mirror, join, shown
from .transfer import (
    DEADLINE_S,
    MAX_BYTES,
    TIMEOUT_S,
    ChecksumError,
    DownloadError,
    Limits,
    Reporter,
    drop_part,
    transfer,
    validator_file,
)

LOCK = ".chateval-data-get.lock"  # in the data folder: one `data get` writes it at a time


class FileResult(BaseModel):
    path: Path
    sha256: str
    pinned: bool  # the catalog pins its sha256 (so it was verified)
    action: str  # "downloaded", "resumed", "present"
    # its length was checked (the catalog's size, or the length the server announced, arrived):
    # only then is an unpinned sha256 one worth pinning
    length_checked: bool = True


class GetResult(BaseModel):
    name: str
    files: list[FileResult]
    built: list[Path]
    rebuilt: bool  # False: the built files were already there, verified, from unchanged inputs
    unpinned_built: dict[str, str]  # built files the catalog has no sha256 for: path -> computed sha256


def mirror_url(mirror: str | None) -> str | None:
    """The mirror to use: the one given, else $CHATEVAL_DATA_MIRROR, else None (the official URLs);
    checked to be an http(s) URL (InputError otherwise)."""
    if mirror:
        return check_mirror(mirror, "--mirror")
    env = os.environ.get(MIRROR_ENV)
    return check_mirror(env, f"${MIRROR_ENV}") if env else None


def source_url(f: RemoteFile, mirror: str | None) -> str:
    """The official URL, or ``MIRROR/<path>``: a mirror serves a data folder's layout."""
    return join(mirror, f.path) if mirror else f.url


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fetch(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    size: int | None = None,
    reporter: Reporter | None = None,
    timeout: float = TIMEOUT_S,
    max_bytes: int = MAX_BYTES,
    deadline: float | None = None,
) -> FileResult:
    """Download ``url`` to ``dest`` through ``dest.part`` (continued with a Range request when it
    exists), check size and sha256, and move it into place. Raises DownloadError (the .part is
    kept) or ChecksumError (the .part is removed). The transfer stops at ``size`` bytes (else at
    ``max_bytes``) and at ``deadline`` (a ``time.monotonic()`` value)."""
    part = dest.with_name(dest.name + ".part")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        have = part.stat().st_size if part.is_file() else 0
    except OSError as e:
        raise InputError(
            f"{dest.parent}: cannot make this folder ({e.strerror or e}); move what is in the way"
        ) from None
    for path in (dest, part, validator_file(part)):
        if path.exists() and not path.is_file():
            raise InputError(f"{path}: in the way (not a file); move it away")
    if size is not None and have > size:  # longer than the file can be: not a prefix of it
        drop_part(part)
        have = 0
    resumed = have > 0
    # Only a transfer that ran to its announced (or the catalog's) length counts as complete.
    complete = size is not None
    if size is None or have < size:
        have, complete = transfer(
            url, part, have, size, reporter, Limits(timeout=timeout, max_bytes=max_bytes, deadline=deadline)
        )
        complete = complete or size is not None
    if size is not None and have != size:
        drop_part(part)
        raise ChecksumError(
            f"{shown(url)}: got {have:,} bytes, expected {size:,}; the download was removed (the file "
            "at the source differs from the catalog's: check it, or use --mirror)"
        )
    if part.stat().st_size != have:  # written to by something else meanwhile: not this transfer's bytes
        drop_part(part)
        raise DownloadError(f"{part}: changed while it was being downloaded (another writer?); removed: run again")
    digest = sha256_of(part)
    if sha256 is not None and digest != sha256:
        drop_part(part)
        raise ChecksumError(
            f"{shown(url)}: sha256 {digest} does not match the catalog's {sha256}; the download was "
            "removed (the file at the source differs from the catalog's: check it, or use --mirror)"
        )
    os.replace(part, dest)
    validator_file(part).unlink(missing_ok=True)
    return FileResult(
        path=dest,
        sha256=digest,
        pinned=sha256 is not None,
        action="resumed" if resumed else "downloaded",
        length_checked=complete,
    )


def get(
    ds: DataSet,
    root: Path,
    *,
    mirror: str | None = None,
    force: bool = False,
    reporter: Reporter | None = None,
    timeout: float = TIMEOUT_S,
    max_bytes: int = MAX_BYTES,
    deadline: float | None = None,
) -> GetResult:
    """Put ``ds`` in the data folder ``root``: download what is missing (or everything with
    ``force``), verify it, and build the files the loaders read. One ``get`` at a time writes a
    data folder (a second is refused: InputError). ``deadline``: a ``time.monotonic()`` value."""
    mirror = mirror_url(mirror)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{root}: cannot create the data folder ({e.strerror or e})") from None
    lock = FileLock(str(root / LOCK))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise InputError(
            f"{root}: another `chateval data get` is writing this data folder (lock {root / LOCK}); wait for it to "
            "finish, then run this again"
        ) from None
    except OSError as e:
        raise InputError(f"{root / LOCK}: cannot lock the data folder ({e.strerror or e})") from None
    try:
        return _get(ds, root, mirror, force, reporter, Limits(timeout=timeout, max_bytes=max_bytes, deadline=deadline))
    finally:
        lock.release()


def _get(
    ds: DataSet, root: Path, mirror: str | None, force: bool, reporter: Reporter | None, limits: Limits
) -> GetResult:
    # Check what is already there before anything is downloaded or replaced.
    present: dict[str, str] = {}
    for f in ds.files:
        dest = root / f.path
        if (root / f.path.partition("/")[0]).is_file():
            raise InputError(
                f"{root / f.path.partition('/')[0]}: a file where the data set's folder goes; move it away"
            )
        if dest.is_file() and not force:
            digest = sha256_of(dest)
            if f.sha256 is not None and digest != f.sha256:
                raise InputError(
                    f"{dest}: already there, but its sha256 {digest} is not the catalog's {f.sha256}; "
                    "move it away or pass --force to download it again"
                )
            present[f.path] = digest
    results = []
    for f in ds.files:
        dest = root / f.path
        if f.path in present:
            results.append(FileResult(path=dest, sha256=present[f.path], pinned=f.sha256 is not None, action="present"))
            continue
        results.append(
            fetch(
                source_url(f, mirror),
                dest,
                sha256=f.sha256,
                size=f.size,
                reporter=reporter,
                timeout=limits.timeout,
                max_bytes=limits.max_bytes,
                deadline=limits.deadline,
            )
        )
    built: list[Path] = []
    unpinned: dict[str, str] = {}
    rebuilt = False
    if ds.conversion and _built_already(ds, root, results):
        built = [root / b.path for b in ds.built]  # inputs unchanged and outputs verified: nothing to redo
    elif ds.conversion:
        built, rebuilt = CONVERSIONS[ds.conversion](root), True
        for b in ds.built:
            path = root / b.path
            if not path.is_file():
                raise ChecksumError(f"{path}: not made from the downloaded files (they differ from the catalog's)")
            digest = sha256_of(path)
            if b.sha256 is not None and digest != b.sha256:
                path.unlink()  # not what the benchmarks' numbers are comparable on: not left for them to read
                raise ChecksumError(
                    f"{path}: sha256 {digest} does not match the catalog's {b.sha256}; removed (made "
                    "from the downloaded files, which differ from the ones the catalog describes)"
                )
        for p in built:
            rel = p.relative_to(root).as_posix()
            if not any(b.path == rel and b.sha256 for b in ds.built):
                unpinned[rel] = sha256_of(p)
    return GetResult(name=ds.name, files=results, built=built, rebuilt=rebuilt, unpinned_built=unpinned)


def _built_already(ds: DataSet, root: Path, results: list[FileResult]) -> bool:
    if not ds.built or any(r.action != "present" for r in results):
        return False
    return all(
        (root / b.path).is_file() and (b.sha256 is None or sha256_of(root / b.path) == b.sha256) for b in ds.built
    )


def status(ds: DataSet, root: Path) -> str:
    """'present' when every file the loaders read is in ``root``, 'partial', or 'missing'."""
    have = [(root / r).is_file() for r in ds.reads]
    return "present" if all(have) else "partial" if any(have) or _any_part(ds, root) else "missing"


def _any_part(ds: DataSet, root: Path) -> bool:
    return any((root / f.path).is_file() or (root / (f.path + ".part")).is_file() for f in ds.files)


__all__ = [
    "ChecksumError",
    "DEADLINE_S",
    "DownloadError",
    "FileResult",
    "MAX_BYTES",
    "GetResult",
    "Reporter",
    "fetch",
    "get",
    "mirror_url",
    "sha256_of",
    "source_url",
    "status",
]
