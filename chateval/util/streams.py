"""A closed output pipe does not stop the work (``chateval evaluate ... 2>&1 | head -c1``).

Python ignores SIGPIPE, so once the reader of stdout or stderr has gone every progress line
raises BrokenPipeError, which used to end a run after its first samples. ``surviving_output()``
wraps both streams: the first write or flush that finds its pipe closed points the stream's file
descriptor at /dev/null (so nothing else that holds the stream, a logging handler or the
interpreter's flush at exit, fails on it either), notes which stream was lost, and the work
goes on. ``lost_output()`` says so; run directories put it in summary.json (``output_lost``)."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

# EPIPE: the reader closed the pipe; EIO: the terminal went away (a closed ssh session).
BROKEN = (errno.EPIPE, errno.EIO)
_lost: dict[str, str] = {}  # stream name -> why


def lost_output() -> dict[str, str]:
    """The output streams this process lost while it ran (name -> why), empty when none."""
    return dict(_lost)


class SurvivingStream:
    """Delegates to ``stream``; a write or flush to a closed pipe is dropped, not raised."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as e:
            self._lose(e)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            self._lose(e)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _lose(self, e: OSError) -> None:
        if e.errno not in BROKEN:
            raise e
        _lost.setdefault(self._name, f"{self._name} was closed ({os.strerror(e.errno or 0).lower()}); output dropped")
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()  # what was buffered goes to /dev/null now


@contextlib.contextmanager
def surviving_output() -> Iterator[None]:
    """While the block runs, a closed stdout or stderr is noted and written past, not raised."""
    _lost.clear()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SurvivingStream(out, "stdout"), SurvivingStream(err, "stderr")
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


__all__ = ["SurvivingStream", "lost_output", "surviving_output"]
