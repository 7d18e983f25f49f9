"""One HTTP transfer into ``FILE.part`` for ``chateval data get``: continued with a Range request
(If-Range with the saved ETag, so a file that changed is not spliced), bounded in size (the
catalog's exact size, else a cap) and in time (seconds without data, and an overall deadline)."""

from __future__ import annotations

import http.client
import re
import time
import urllib.error
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from ..util.errors import ChatevalError
from .mirror import open_url, shown

CHUNK = 1 << 16
TIMEOUT_S = 60.0  # seconds without data before a transfer gives up
DEADLINE_S = 4 * 3600.0  # the whole `data get`, every file: a trickling server cannot hold it for ever
MAX_BYTES = 4 << 30  # a file the catalog has no exact size for stops here (LongMemEval-M is about 2.7 GB)


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


def _http_error(url: str, e: urllib.error.HTTPError, part: Path, have: int) -> DownloadError:
    kept = f"; {have:,} bytes kept in {part} for the next try" if have else ""
    hint = " (not found: the file may have moved; check the URL or use --mirror)" if e.code == 404 else ""
    hint = " (the mirror refused the credentials in its URL, or wants some)" if e.code in (401, 403) else hint
    return DownloadError(f"{shown(url)}: HTTP {e.code} {e.reason}{hint}{kept}")


class Limits(BaseModel):
    timeout: float  # seconds without data
    max_bytes: int  # when the catalog has no exact size
    deadline: float | None  # time.monotonic() by which the transfer must be over


def read_validator(part: Path) -> str | None:
    """The saved ETag / Last-Modified, or None when there is none or it is not one (a
    hand-edited file: a newline or a non-ASCII byte would make an invalid If-Range header)."""
    path = validator_file(part)
    try:
        raw = path.read_bytes()[:1024] if path.is_file() else None
    except OSError:
        return None
    text = raw.decode("ascii", "replace").strip() if raw is not None else ""
    ok = 0 < len(text) <= 512 and all(" " <= c <= "~" for c in text) and raw is not None and len(raw) < 1024
    return text if ok else None


def validator_file(part: Path) -> Path:
    """Beside FILE.part: the server's ETag (or Last-Modified) for it, sent back as If-Range on a
    resume so a file that changed at the source is downloaded whole rather than spliced."""
    return part.with_name(part.name + ".validator")


def drop_part(part: Path) -> None:
    part.unlink(missing_ok=True)
    validator_file(part).unlink(missing_ok=True)


def transfer(
    url: str, part: Path, have: int, size: int | None, reporter: Reporter | None, limits: Limits
) -> tuple[int, bool]:
    """Append the rest of ``url`` to ``part`` (from byte ``have``); the bytes it now holds, and
    whether they are known to be the whole file (the announced length arrived)."""
    headers = {"User-Agent": "chateval-data/1", "Accept-Encoding": "identity"}
    if have:
        validator_now = read_validator(part)
        if validator_now is None and validator_file(part).exists():  # unreadable: cannot resume safely
            drop_part(part)
            have = 0
        else:
            headers["Range"] = f"bytes={have}-"
            if validator_now:
                headers["If-Range"] = validator_now
    cap = size if size is not None else limits.max_bytes
    try:
        resp = open_url(url, headers, _wait(limits, url, part, have))
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing after byte `have`
            whole = re.fullmatch(r"bytes \*/(\d+)", e.headers.get("Content-Range") or "")
            if whole and int(whole.group(1)) != have:  # longer than the file: not a prefix of it, start over
                drop_part(part)
                return transfer(url, part, 0, size, reporter, limits)
            return have, whole is not None  # the .part already holds the whole file
        raise _http_error(url, e, part, have) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"{shown(url)}: cannot connect ({reason})" + _kept(part, have)) from None
    with resp:
        length = resp.headers.get("Content-Length")
        remaining = int(length) if length and length.isdigit() else None
        validator: str | None = None
        if have and resp.status == 206:
            start = _range_start(resp.headers.get("Content-Range"))
            if start != have:
                raise DownloadError(
                    f"{shown(url)}: the server resumed at byte {start}, not {have}; remove {part} and run the "
                    "command again"
                )
            mode = "ab"
        elif resp.status == 200:
            have, mode = 0, "wb"  # a fresh start, or the server ignored Range / the file changed (If-Range)
            etag, modified = resp.headers.get("ETag"), resp.headers.get("Last-Modified")
            validator = etag if etag and not etag.startswith("W/") else modified
        else:
            raise DownloadError(f"{shown(url)}: unexpected HTTP {resp.status}" + _kept(part, have))
        if remaining is not None and have + remaining > cap:  # refused before a byte is written
            raise _too_big(url, part, have, have + remaining, size, limits, announced=True)
        total = have + remaining if remaining is not None else size
        if reporter:
            reporter.start(part.name.removesuffix(".part"), total, have)
        got = 0
        try:
            if mode == "wb":
                if validator:
                    validator_file(part).write_text(validator, encoding="utf-8")
                else:
                    validator_file(part).unlink(missing_ok=True)
            with open(part, mode) as out:
                while True:
                    _wait(limits, url, part, have + got)
                    try:
                        chunk = resp.read1(CHUNK)  # what has arrived: a trickle cannot hold a full read
                    except (OSError, http.client.HTTPException) as e:
                        raise DownloadError(_interrupted(url, part, have + got, total, e)) from None
                    if not chunk:
                        break
                    if have + got + len(chunk) > cap:  # more than the file can be: stop here
                        out.write(chunk[: cap - have - got])
                        out.flush()
                        raise _too_big(url, part, have, None, size, limits, announced=False)
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
    return have + got, remaining is not None


def _wait(limits: Limits, url: str, part: Path, have: int) -> float:
    """The socket timeout to use now: ``limits.timeout``, shortened to the time left before the
    deadline; a DownloadError (the .part kept) once the deadline has passed."""
    if limits.deadline is None:
        return limits.timeout
    left = limits.deadline - time.monotonic()
    if left <= 0:
        raise DownloadError(
            f"{shown(url)}: not finished within the deadline (--deadline){_kept(part, have) or ''}"
            + ("" if have else "; run the same command again to try again")
        )
    return min(limits.timeout, left)


def _too_big(
    url: str, part: Path, have: int, announced_size: int | None, size: int | None, limits: Limits, *, announced: bool
) -> ChatevalError:
    """More bytes than the file can have: the catalog's exact size (the source differs: refused
    and removed), or the cap for files of unknown size (kept: a larger --max-size resumes it)."""
    what = f"announces {announced_size:,} bytes, more" if announced and announced_size is not None else "sends more"
    if size is not None:
        drop_part(part)
        return ChecksumError(
            f"{shown(url)}: the server {what} than the catalog's {size:,}; refused and removed (the file at "
            "the source differs from the catalog's: check it, or use --mirror)"
        )
    return DownloadError(
        f"{shown(url)}: the server {what} than the {limits.max_bytes:,}-byte cap for a file of unknown size; "
        f"stopped{_kept(part, have)} (raise --max-size if the file really is that large)"
    )


def _kept(part: Path, have: int) -> str:
    return f"; {have:,} bytes kept in {part}: run the same command again to resume" if have else ""


def _interrupted(url: str, part: Path, have: int, total: int | None, why: object) -> str:
    of = f" of {total:,}" if total else ""
    return (
        f"{shown(url)}: download interrupted after {have:,}{of} bytes ({why}); the partial file {part} is kept: "
        "run the same command again to resume"
    )


def _range_start(value: str | None) -> int | None:
    m = re.match(r"bytes (\d+)-", value or "")
    return int(m.group(1)) if m else None


__all__ = [
    "CHUNK",
    "DEADLINE_S",
    "MAX_BYTES",
    "TIMEOUT_S",
    "ChecksumError",
    "DownloadError",
    "Limits",
    "Reporter",
    "drop_part",
    "read_validator",
    "transfer",
    "validator_file",
]
