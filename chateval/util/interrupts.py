"""User code (a plugin memory system, strategy or task) that calls ``sys.exit()`` or raises
``KeyboardInterrupt`` fails its unit like any other exception; only a real Ctrl-C (SIGINT)
stops the run.

Why both are needed: asyncio re-raises SystemExit and KeyboardInterrupt out of the event loop
from whatever task raised them, so an unguarded one ends the whole run with no summary. A real
Ctrl-C is told apart from one raised by code: ``watch_sigint()`` (around a run) notes every
SIGINT delivered to the process before passing it on to the handler that was there (asyncio's,
which cancels the run), and a task being cancelled is an interruption too."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from .errors import ChatevalError

_sigints = 0  # SIGINTs delivered while a watch_sigint() was active
_watching = 0


class UserCodeExit(ChatevalError):
    """User code called sys.exit() or raised KeyboardInterrupt itself: its unit fails."""


def interrupted() -> bool:
    """True when the run is being stopped for real: a SIGINT arrived, or this task is being
    cancelled (asyncio's answer to Ctrl-C)."""
    if _sigints:
        return True
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return False
    return task is not None and task.cancelling() > 0


def describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the code called sys.exit({exc.code!r})"
    text = str(exc).strip()
    return "the code raised KeyboardInterrupt (not a Ctrl-C)" + (f": {text.splitlines()[0][:200]}" if text else "")


@contextlib.contextmanager
def contain_exits() -> Iterator[None]:
    """Around a call into user code: its SystemExit, or a KeyboardInterrupt that no real
    Ctrl-C caused, becomes ``UserCodeExit`` (an ordinary exception that fails the unit)."""
    try:
        yield
    except (SystemExit, KeyboardInterrupt) as exc:
        if isinstance(exc, KeyboardInterrupt) and interrupted():
            raise
        raise UserCodeExit(describe(exc)) from None


@contextlib.contextmanager
def watch_sigint() -> Iterator[None]:
    """Note each SIGINT (see ``interrupted``) while inside, then hand it to the handler that was
    installed (asyncio's, Python's default, ...). A no-op outside the main thread, where
    signals cannot be handled, or when SIGINT is ignored or left to the OS."""
    global _sigints, _watching
    prev = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(prev):
        yield
        return

    def noted(signum: int, frame: Any) -> Any:
        global _sigints
        _sigints += 1
        return prev(signum, frame)

    if _watching == 0:
        _sigints = 0  # an earlier run's Ctrl-C (in the same Python session) does not count
    _watching += 1
    signal.signal(signal.SIGINT, noted)
    try:
        yield
    finally:
        _watching -= 1
        if signal.getsignal(signal.SIGINT) is noted:
            signal.signal(signal.SIGINT, prev)


# --- SIGTERM and SIGHUP stop a command as Ctrl-C does ---------------------------------------------
STOP_SIGNALS = ("SIGTERM", "SIGHUP")
_stopped_by: int | None = None


def stopped_by() -> int | None:
    """The stop signal (SIGTERM, SIGHUP) that stopped this command, if one did."""
    return _stopped_by


def stop_name() -> str:
    """How the command was stopped, for its last line: 'interrupted', or 'stopped by SIGTERM'."""
    return f"stopped by {signal.Signals(_stopped_by).name}" if _stopped_by else "interrupted"


@contextlib.contextmanager
def stop_signals_like_ctrl_c() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP are handed to the SIGINT handler in place at that moment
    (asyncio's, which cancels the run, or Python's, which raises KeyboardInterrupt), so a run
    stopped by ``kill``, a closed terminal or a batch scheduler writes its summary like a Ctrl-C.
    A signal that is ignored on entry (``nohup`` ignores SIGHUP) stays ignored. The caller maps
    the result to exit 128 + the signal's number (``stopped_by``)."""
    global _stopped_by
    _stopped_by = None
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: Any) -> Any:
        global _stopped_by
        if _stopped_by is None:
            _stopped_by = signum
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored (a background job): still stop
            handler = signal.default_int_handler
        return handler(signal.SIGINT, frame)

    before: dict[int, Any] = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None or signal.getsignal(sig) == signal.SIG_IGN:
            continue
        before[sig] = signal.getsignal(sig)
        signal.signal(sig, forward)
    try:
        yield
    finally:
        for sig, handler in before.items():
            if signal.getsignal(sig) is forward:
                signal.signal(sig, handler)
