"""Figures drawn once per set of inputs: a figure's PNG carries the hash of what drew it (its
function's code, arguments and file name) in a text chunk, so a report written again from the
same numbers (``--resume`` of a finished run) keeps the file instead of drawing it again — and
never imports matplotlib. :func:`chateval.bench.plots.never_fatal` checks and sets the stamp."""

from __future__ import annotations

import contextvars
import functools
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAMP = "chateval-inputs"
CURRENT_STAMP: contextvars.ContextVar[str | None] = contextvars.ContextVar("chateval_figure_stamp", default=None)


@functools.cache
def _code_hash(module: str) -> str:
    h = hashlib.sha256()
    for name in sorted({"chateval.bench.plots", __name__, module}):
        file = getattr(sys.modules.get(name), "__file__", None)
        h.update(Path(file).read_bytes() if file else name.encode())
    return h.hexdigest()


def inputs_stamp(fn: Callable[..., Any], path: Path, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The hash of a figure's inputs; None when an argument has no stable text form."""
    text = repr((fn.__qualname__, Path(path).name, args, sorted(kwargs.items())))
    if " at 0x" in text:  # an object's identity, not its value: never "the same inputs"
        return None
    return hashlib.sha256((_code_hash(fn.__module__) + text).encode()).hexdigest()


def png_stamp(path: Path) -> str | None:
    """The inputs stamp written into a PNG by ``save`` (None: no PNG there, or no stamp)."""
    try:
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                return None
            while len(head := f.read(8)) == 8:
                size, kind = int.from_bytes(head[:4], "big"), head[4:]
                if kind == b"tEXt":
                    key, _, value = f.read(size).partition(b"\0")
                    if key.decode("latin-1") == STAMP:
                        return value.decode("latin-1")
                    f.seek(4, 1)
                else:
                    f.seek(size + 4, 1)
    except OSError:
        return None
    return None
