"""The up-front check that an HTTP agent is there at all: a dead agent stops the run before any
unit, in one line, as a dead model endpoint does (instead of every unit failing after its retries)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from ...util import secrets
from ...util.errors import EndpointUnreachable
from .http_agent import HttpSettings


def check_reachable(settings: HttpSettings, timeout_s: float = 5.0) -> None:
    """Fail fast, in one line, when nothing accepts connections at the agent's host and port:
    every unit would fail the same way after its retries (as for a model endpoint, the run stops
    with exit 2). Only a TCP connection is opened: the protocol has no request without effects."""
    parts = urlsplit(settings.url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if parts.scheme in getproxies() and not proxy_bypass(parts.hostname or ""):
        return  # httpx goes through the environment's proxy: a direct connection proves nothing
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=min(timeout_s, settings.timeout_s)):
            pass
    except OSError as e:
        why = {ConnectionRefusedError: "connection refused", TimeoutError: "no connection within the deadline"}.get(
            type(e), type(e).__name__
        )
        raise EndpointUnreachable(
            secrets.scrub(
                f"http agent {settings.public_url} cannot be reached ({why}); is the agent running and http.url right?"
            )
        ) from None
