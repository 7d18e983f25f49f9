"""Give freed heap memory back to the operating system (issue 38 item 3).

An audit builds its summary (every variant's record read, checked and summarised), lets most of
it go, then builds its page in the same process. glibc's malloc keeps the freed pages of its
heap, so the page's peak came on top of them. ``malloc_trim(0)`` returns them. Only glibc has it;
elsewhere (macOS, musl, Windows) this does nothing, and a failure is ignored: it changes how much
memory the process keeps, never what it computes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any

__all__ = ["release_freed"]


@cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None  # musl has no malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed() -> None:
    """Return the heap's free pages to the OS (glibc only; anything else: nothing)."""
    libc = _libc()
    if libc is None:
        return
    try:
        libc.malloc_trim(0)
    except (OSError, AttributeError, ctypes.ArgumentError):
        pass
