"""The URLs ``chateval data get`` reads: a mirror checked before anything is downloaded, a file's
path joined before the mirror's query string, credentials in the URL sent as HTTP Basic auth
(and never on to another host), and every URL shown in a message with its credentials masked."""

from __future__ import annotations

import base64
import urllib.request
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ..util import secrets
from ..util.errors import InputError

SCHEMES = ("http", "https")


def check_mirror(mirror: str, where: str = "--mirror") -> str:
    """``mirror`` if it is an http(s) URL with a host, else a one-line InputError. Its credentials
    (user:password, token=/sig=/key= query values) are registered, so no message shows them."""
    shown_as = shown(mirror)
    try:
        secrets.register_url(mirror)
        parts = urlsplit(mirror.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as e:
        raise InputError(f"{where} {shown_as}: not a URL ({e})") from None
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise InputError(
            f"{where} {shown_as}: not an http(s) URL (give http://HOST/... or https://HOST/..., a server "
            "holding a data folder's layout)"
        )
    if parts.fragment:
        raise InputError(f"{where} {shown_as}: a mirror URL has no #fragment")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), parts.query, ""))


def join(mirror: str, rel: str) -> str:
    """``MIRROR/rel``, the path joined before the mirror's query string (``?sig=...`` stays last)."""
    parts = urlsplit(mirror)
    path = parts.path.rstrip("/") + "/" + quote(rel.lstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def shown(url: str) -> str:
    """``url`` fit for a message: user:password and every query value masked, then scrubbed of
    every registered secret."""
    return secrets.scrub(secrets.redact_url(url) or "")


def split_auth(url: str) -> tuple[str, str | None]:
    """``url`` without user:password, and the Basic Authorization header value they make (None
    when there are none). urllib does not use a URL's user info itself."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    secrets.register(token)
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), f"Basic {token}"


class _SameOriginAuth(urllib.request.HTTPRedirectHandler):
    """A redirect keeps the Authorization header only when it stays on the same scheme, host and
    port: credentials for a mirror are not handed to whatever host it redirects to."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get("Authorization")
        if new is not None and auth:
            old, nxt = urlsplit(req.full_url), urlsplit(new.full_url)
            if (old.scheme, old.hostname, old.port) == (nxt.scheme, nxt.hostname, nxt.port):
                new.add_unredirected_header("Authorization", auth)
        return new


def open_url(url: str, headers: dict[str, str], timeout: float) -> Any:
    """GET ``url`` (following redirects) with ``headers``, its user info as Basic auth."""
    bare, auth = split_auth(url)
    request = urllib.request.Request(bare, headers=headers)
    if auth:
        request.add_unredirected_header("Authorization", auth)  # not copied onto a redirect by urllib
    opener = urllib.request.build_opener(_SameOriginAuth())
    return opener.open(request, timeout=timeout)


__all__ = ["SCHEMES", "check_mirror", "join", "open_url", "shown", "split_auth"]
