"""An endpoint that cannot be reached at all (connection refused, no such host) is not a failure
of one sample: no retry or later sample fares better. A run watches for it (``watch_endpoints``)
so that the model layer's first such error stops the run: calls not yet made fail at once, and
the runner schedules nothing more."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..util.errors import EndpointUnreachable

# The run's box for the first unreachable-endpoint error; a list so that the tasks a run starts
# (which copy the context) all see the one the run set.
_DOWN: ContextVar[list[EndpointUnreachable] | None] = ContextVar("chateval_endpoint_down", default=None)


def cannot_connect(exc: BaseException) -> bool:
    """Whether a call failed because no connection could be made (not a reset or a timeout):
    a ConnectionRefusedError or an httpx/httpcore ConnectError anywhere in the exception's chain."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError) or type(e).__name__ == "ConnectError":
            return True
        e = e.__cause__ or e.__context__
    return False


@contextmanager
def watch_endpoints() -> Iterator[list[EndpointUnreachable]]:
    """Within this block, the first unreachable endpoint is kept in the yielded list and every
    later model call fails at once with it. Nested blocks share the outer one's list."""
    box = _DOWN.get()
    if box is not None:
        yield box
        return
    box = []
    token = _DOWN.set(box)
    try:
        yield box
    finally:
        _DOWN.reset(token)


def endpoint_down() -> EndpointUnreachable | None:
    box = _DOWN.get()
    return box[0] if box else None


def mark_down(error: EndpointUnreachable) -> None:
    box = _DOWN.get()
    if box is not None and not box:
        box.append(error)
