"""Download a data set's published files into the data folder: resumable (an HTTP Range request
continues ``FILE.part``), checked (size, and sha256 where the catalog pins it), then converted
to the layout our loaders read. Used by ``chateval data get``."""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from ..util.errors import ChatevalError, InputError
from .catalog import MIRROR_ENV, DataSet, RemoteFile
from .convert import CONVERSIONS

CHUNK = 1 << 16
TIMEOUT_S = 60.0


class DownloadError(ChatevalError):
    """The server could not be reached, answered with an error, or the transfer broke off. What
    arrived is kept in FILE.part, so running the same command again resumes. Exit code 1."""


class ChecksumError(ChatevalError):
    """A downloaded file's sha256 (or size) is not the catalog's: refused, and its .part removed
    (a complete but wrong file cannot be resumed into the right one). Exit code 3."""

    exit_code = 3


class Reporter(Protocol):
    """Progress of one file: ``start`` (total None when the server does not say), ``advance``."""

    def start(self, label: str, total: int | None, done: int) -> None: ...
    def advance(self, n: int) -> None: ...
    def finish(self) -> None: ...


class FileResult(BaseModel):
    path: Path
    sha256: str
    pinned: bool  # the catalog pins its sha256 (so it was verified)
    action: str  # "downloaded", "resumed", "present"


class GetResult(BaseModel):
    name: str
    files: list[FileResult]
    built: list[Path]
    rebuilt: bool  # False: the built files were already there, verified, from unchanged inputs
    unpinned_built: dict[str, str]  # built files the catalog has no sha256 for: path -> computed sha256


def mirror_url(mirror: str | None) -> str | None:
    """The mirror to use: the one given, else $CHATEVAL_DATA_MIRROR, else None (the official URLs)."""
    m = mirror or os.environ.get(MIRROR_ENV) or None
    return m.rstrip("/") if m else None


def source_url(f: RemoteFile, mirror: str | None) -> str:
    """The official URL, or ``MIRROR/<path>``: a mirror serves a data folder's layout."""
    return f"{mirror}/{f.path}" if mirror else f.url


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _http_error(url: str, e: urllib.error.HTTPError, part: Path, have: int) -> DownloadError:
    kept = f"; {have:,} bytes kept in {part} for the next try" if have else ""
    hint = " (not found: the file may have moved; check the URL or use --mirror)" if e.code == 404 else ""
    return DownloadError(f"{url}: HTTP {e.code} {e.reason}{hint}{kept}")


def fetch(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    size: int | None = None,
    reporter: Reporter | None = None,
    timeout: float = TIMEOUT_S,
) -> FileResult:
    """Download ``url`` to ``dest`` through ``dest.part`` (continued with a Range request when it
    exists), check size and sha256, and move it into place. Raises DownloadError (the .part is
    kept) or ChecksumError (the .part is removed)."""
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:  # longer than the file can be: not a prefix of it
        _drop(part)
        have = 0
    resumed = have > 0
    if size is None or have < size:
        have = _transfer(url, part, have, size, reporter, timeout)
    if size is not None and have != size:
        _drop(part)
        raise ChecksumError(
            f"{url}: got {have:,} bytes, expected {size:,}; the download was removed (the file "
            "at the source differs from the catalog's: check it, or use --mirror)"
        )
    digest = sha256_of(part)
    if sha256 is not None and digest != sha256:
        _drop(part)
        raise ChecksumError(
            f"{url}: sha256 {digest} does not match the catalog's {sha256}; the download was "
            "removed (the file at the source differs from the catalog's: check it, or use --mirror)"
        )
    os.replace(part, dest)
    _validator_file(part).unlink(missing_ok=True)
    return FileResult(
        path=dest, sha256=digest, pinned=sha256 is not None, action="resumed" if resumed else "downloaded"
    )


def _validator_file(part: Path) -> Path:
    """Beside FILE.part: the server's ETag (or Last-Modified) for it, sent back as If-Range on a
    resume so a file that changed at the source is downloaded whole rather than spliced."""
    return part.with_name(part.name + ".validator")


def _drop(part: Path) -> None:
    part.unlink(missing_ok=True)
    _validator_file(part).unlink(missing_ok=True)


def _transfer(url: str, part: Path, have: int, size: int | None, reporter: Reporter | None, timeout: float) -> int:
    """Append the rest of ``url`` to ``part`` (from byte ``have``); the bytes it now holds."""
    headers = {"User-Agent": "chateval-data/1", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
        if _validator_file(part).is_file():
            headers["If-Range"] = _validator_file(part).read_text(encoding="utf-8").strip()
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing after byte `have`
            whole = re.fullmatch(r"bytes \*/(\d+)", e.headers.get("Content-Range") or "")
            if whole and int(whole.group(1)) != have:  # longer than the file: not a prefix of it, start over
                _drop(part)
                return _transfer(url, part, 0, size, reporter, timeout)
            return have  # the .part already holds the whole file
        raise _http_error(url, e, part, have) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"{url}: cannot connect ({reason})" + _kept(part, have)) from None
    with resp:
        length = resp.headers.get("Content-Length")
        remaining = int(length) if length and length.isdigit() else None
        validator: str | None = None
        if have and resp.status == 206:
            start = _range_start(resp.headers.get("Content-Range"))
            if start != have:
                raise DownloadError(
                    f"{url}: the server resumed at byte {start}, not {have}; remove {part} and run the command again"
                )
            mode = "ab"
        elif resp.status == 200:
            have, mode = 0, "wb"  # a fresh start, or the server ignored Range / the file changed (If-Range)
            etag, modified = resp.headers.get("ETag"), resp.headers.get("Last-Modified")
            validator = etag if etag and not etag.startswith("W/") else modified
        else:
            raise DownloadError(f"{url}: unexpected HTTP {resp.status}" + _kept(part, have))
        total = have + remaining if remaining is not None else size
        if reporter:
            reporter.start(part.name.removesuffix(".part"), total, have)
        got = 0
        try:
            if mode == "wb":
                if validator:
                    _validator_file(part).write_text(validator, encoding="utf-8")
                else:
                    _validator_file(part).unlink(missing_ok=True)
            with open(part, mode) as out:
                while True:
                    try:
                        chunk = resp.read(CHUNK)
                    except (OSError, http.client.HTTPException) as e:
                        raise DownloadError(_interrupted(url, part, have + got, total, e)) from None
                    if not chunk:
                        break
                    out.write(chunk)
                    got += len(chunk)
                    if reporter:
                        reporter.advance(len(chunk))
        except OSError as e:  # the disk, not the network (read errors are caught above)
            raise DownloadError(
                f"cannot write {part}: {e.strerror or e}; make room and run the same command again to resume"
            ) from None
        finally:
            if reporter:
                reporter.finish()
        if remaining is not None and got < remaining:
            raise DownloadError(_interrupted(url, part, have + got, total, "connection closed early"))
    return have + got


def _kept(part: Path, have: int) -> str:
    return f"; {have:,} bytes kept in {part}: run the same command again to resume" if have else ""


def _interrupted(url: str, part: Path, have: int, total: int | None, why: object) -> str:
    of = f" of {total:,}" if total else ""
    return (
        f"{url}: download interrupted after {have:,}{of} bytes ({why}); the partial file {part} is kept: "
        "run the same command again to resume"
    )


def _range_start(value: str | None) -> int | None:
    m = re.match(r"bytes (\d+)-", value or "")
    return int(m.group(1)) if m else None


def get(
    ds: DataSet,
    root: Path,
    *,
    mirror: str | None = None,
    force: bool = False,
    reporter: Reporter | None = None,
    timeout: float = TIMEOUT_S,
) -> GetResult:
    """Put ``ds`` in the data folder ``root``: download what is missing (or everything with
    ``force``), verify it, and build the files the loaders read."""
    mirror = mirror_url(mirror)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{root}: cannot create the data folder ({e.strerror or e})") from None
    # Check what is already there before anything is downloaded or replaced.
    present: dict[str, str] = {}
    for f in ds.files:
        dest = root / f.path
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
            fetch(source_url(f, mirror), dest, sha256=f.sha256, size=f.size, reporter=reporter, timeout=timeout)
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
    "DownloadError",
    "FileResult",
    "GetResult",
    "Reporter",
    "fetch",
    "get",
    "mirror_url",
    "sha256_of",
    "source_url",
    "status",
]
