"""Whole-file writes of a run (config, summary, reports): atomic, fsynced, secrets scrubbed, and
one line naming the file when the disk cannot take it."""

from __future__ import annotations

import errno
import itertools
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..util.errors import RunWriteError
from ..util.secrets import scrub

# Errors that mean "this disk cannot take more" rather than a bad path given by the user.
PART_CHARS = 1 << 20  # a file written as it is made goes out in parts of about this many characters
WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write a whole file or leave the old one: a disk that cannot take it raises RunWriteError
    (one line naming the file) and no partial file is left."""
    atomic_write_lines(path, [text])


def atomic_write_lines(path: Path, parts: Iterable[str]) -> None:
    """:func:`atomic_write` of the text ``parts`` make, written as they come (a large file, such
    as a resumed run's samples.jsonl, is never held whole). Each part is scrubbed on its own: a
    part is whole lines, and no secret spans two lines."""
    try:
        _atomic_write(path, (scrub(p) for p in parts))  # no configured secret reaches a run's files
    except OSError as e:
        if e.errno in WRITE_ERRNOS:
            raise RunWriteError(path, e) from None
        raise


def _atomic_write(path: Path, parts: Iterable[str]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes 0600 files; a run's files all get the mode open() gives (0666 less umask).
        os.fchmod(fd, 0o666 & ~_umask())
        # backslashreplace: a lone surrogate (from a model's reply, say) is written as the escape
        # "\\ud800", which JSON reads back as the same string, instead of failing the write.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            for text in parts:
                f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, data: Any) -> None:
    """``json.dumps(data, indent=2)`` and a newline, written as it is encoded (issue 38 item 3):
    the indenting encoder makes many small strings, and an audit's summary lists every variant,
    so the text and its pieces were held whole. The encoder yields each string value whole, and
    parts end only between pieces, so a secret in a value is never cut when each part is scrubbed."""
    pieces = json.JSONEncoder(indent=2, ensure_ascii=False, default=str).iterencode(data)
    atomic_write_lines(path, grouped(itertools.chain(pieces, ["\n"])))


def grouped(pieces: Iterable[str], size: int = PART_CHARS) -> Iterator[str]:
    """Text pieces joined into parts of about ``size`` characters, for a file written as it is
    made: a part ends only between two pieces."""
    buf: list[str] = []
    n = 0
    for p in pieces:
        buf.append(p)
        n += len(p)
        if n >= size:
            yield "".join(buf)
            buf, n = [], 0
    if buf:
        yield "".join(buf)


def write_json_list(path: Path, head: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """:func:`write_json` of ``head | {key: list(items)}``, the same text, with the list written an
    item at a time: a large list (TeaFarm's teabag.json) is never held whole as one string. The
    parts split the text only between JSON tokens, never inside a string, so each is scrubbed whole."""

    def dumps(x: Any) -> str:
        return json.dumps(x, indent=2, ensure_ascii=False, default=str)

    def parts() -> Iterator[str]:
        if not head:
            yield "{\n"
        else:
            yield dumps(head)[:-2] + ",\n"  # without its closing "\n}"
        yield f"  {dumps(key)}: ["
        n = 0
        for n, item in enumerate(items, 1):
            # An item's lines, indented to the list's depth (JSON strings hold no raw newline).
            yield ("," if n > 1 else "") + "\n" + "\n".join("    " + line for line in dumps(item).split("\n"))
        yield ("\n  ]" if n else "]") + "\n}\n"

    atomic_write_lines(path, parts())


def file_sha256(path: str | Path) -> str | None:
    """The content hash of an input file (part of a run's identity); None if it cannot be read."""
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()
