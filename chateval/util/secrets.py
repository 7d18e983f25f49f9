"""The secrets this process was configured with, and the one scrub that everything chateval
writes or prints goes through.

A secret is registered where it is configured: a model's API key when its client is built,
the password and credential-looking query values of --base-url, the HTTP agent's key and URL,
a remote embedder's key. Run files (``runs.atomic_write``/``write_json``/``RunDir.append``),
the viewer page, the command line's output and log records replace each of them (in its raw,
JSON-escaped, HTML-escaped and URL-quoted forms) by ``***``. So are the transforms an endpoint
may echo of a secret of ``VARIANT_MIN_LENGTH`` characters or more: any mix of upper and lower
case, split by whitespace or newlines (or their JSON escapes), reversed, hex, and base64 (of the
secret alone or inside a longer string such as ``Bearer <key>``). URLs in configs are also
masked by their shape (``redact_url``), so a credential is hidden there even if it was never
registered.

The registry is per process: a Ray worker registers what its own model layers and systems are
configured with, and records it sends back are scrubbed again when the driver writes them.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "***"
# Shorter values would mask ordinary words ("pass", "user") in every answer and record; a
# credential this short is still masked inside URLs (redact_url), just not in free text.
MIN_LENGTH = 6
# Every API key variable chateval reads (model providers, remote embeddings).
KEY_ENV_VARS = ("OPENAI_API_KEY", "CHATEVAL_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "GEMINI_API_KEY")
# Query parameters whose values are credentials (api_key, key, token, sig, auth, password, ...).
_SECRET_QUERY = ("key", "token", "secret", "pass", "sig", "auth", "cred", "session")

# Secrets this long or longer are also masked in their transforms (case, spacing, reversed, hex,
# base64); a shorter one could match ordinary words spelled another way.
VARIANT_MIN_LENGTH = 10
# Between the characters of a transform: whitespace (zero-width spaces and joiners too), or its
# escape in JSON text (a whole file scrubbed after serialising, as config.json and summary.json are).
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
_GAP = rf"(?:[\s{_ZERO_WIDTH}]|\\[nrt]|\\u[0-9a-fA-F]{{4}})*"
_JSON_ESCAPE = re.compile(rb"\\u[0-9a-f]{4}")  # in the lower-cased bytes of a JSON text

_secrets: set[str] = set()
_forms: tuple[str, ...] = ()  # every spelling of every secret, longest first
# The transforms, lower-cased and without whitespace (a quick test on a squeezed text), and one
# pattern that finds them in the text itself (case ignored, whitespace allowed between characters).
_variants: tuple[str, ...] = ()
_variant_re: re.Pattern[str] | None = None
_variants_ascii: tuple[bytes, ...] = ()  # the same, as bytes: what an ASCII text can hold
# Whitespace deleted by translate: far quicker than "".join(text.split()) on prose, and quicker
# still on the bytes of an ASCII text (most records).
_NO_SPACE = {c: None for c in range(0x3000 + 1) if chr(c).isspace()} | {ord(c): None for c in _ZERO_WIDTH}
_ASCII_SPACE = bytes(c for c in range(128) if chr(c).isspace())
_lock = threading.Lock()
_log_hook_installed = False


def _spellings(secret: str) -> set[str]:
    """The forms a secret takes in the files we write: raw, inside JSON strings (either
    ensure_ascii setting), HTML-escaped (jinja's and the stdlib's spelling) and URL-quoted."""
    forms = {
        secret,
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1],
        html.escape(secret),
        html.escape(secret).replace("&#x27;", "&#39;").replace("&quot;", "&#34;"),
        quote(secret, safe=""),
        quote_plus(secret),
    }
    return {f for f in forms if f}


def _b64_inside(data: bytes) -> set[str]:
    """The base64 characters that ``data`` alone decides, at each of the three offsets it can
    start at inside a longer string (``Bearer <key>``, ``user:<key>``), standard and URL-safe."""
    out = set()
    for k in range(3):
        start, end = -(-8 * k // 6), 8 * (k + len(data)) // 6  # 6-bit groups within data's bits
        encoded = base64.b64encode(b"\0" * k + data).decode("ascii")[start:end]
        out |= {encoded, encoded.translate(str.maketrans("+/", "-_"))}
    return out


def _transforms(secret: str) -> set[str]:
    """What an endpoint may echo of a secret besides its spellings, lower-cased, no whitespace."""
    s = "".join(secret.split())
    if len(s) < VARIANT_MIN_LENGTH:
        return set()
    raw = s.encode("utf-8")
    out = {s, s[::-1], raw.hex(), *_b64_inside(raw)}
    return {v.lower() for v in out if len(v) >= VARIANT_MIN_LENGTH}


def register(*values: str | None) -> None:
    """Add secrets to scrub from now on (empty, None and very short values are ignored)."""
    global _forms, _variants, _variants_ascii, _variant_re
    new = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH} - _secrets
    if not new:
        return
    with _lock:
        _secrets.update(new)
        _forms = tuple(sorted({f for s in _secrets for f in _spellings(s)}, key=len, reverse=True))
        variants = sorted({v for s in _secrets for v in _transforms(s)}, key=len, reverse=True)
        _variants = tuple(variants)
        _variants_ascii = tuple(v.encode("ascii") for v in variants if v.isascii())
        pattern = "|".join(_GAP.join(re.escape(c) for c in v) for v in variants)
        _variant_re = re.compile(pattern, re.IGNORECASE) if variants else None
    _install_log_hook()


def register_url(url: str | None) -> None:
    """Register the credentials a URL (or comma-separated URLs) carries: its password (and the
    Basic-auth header value built from it), a bare user that is really a token, and the values of
    credential-looking query parameters."""
    for one in (url or "").split(","):
        parts = urlsplit(one.strip())
        try:
            user, password = parts.username, parts.password
        except ValueError:
            continue
        if password:
            plain = unquote(password)
            basic = base64.b64encode(f"{unquote(user or '')}:{plain}".encode()).decode()
            register(password, plain, basic)
        elif user:  # https://TOKEN@host: the user name is the credential
            register(user, unquote(user))
        for pair in parts.query.split("&"):
            name, _, value = pair.partition("=")
            if value and any(s in unquote_plus(name).lower() for s in _SECRET_QUERY):
                register(value, unquote_plus(value))


def register_env(names: tuple[str, ...] = KEY_ENV_VARS) -> list[str]:
    """Register (and return) the values of the given key variables that are set."""
    values = [v for v in (os.environ.get(n, "") for n in names) if v]
    register(*values)
    return values


def registered() -> bool:
    return bool(_forms)


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    if not _forms or not isinstance(text, str):
        return text
    for form in _forms:
        if form in text:
            text = text.replace(form, MASK)
    if _variant_re is not None and len(text) >= len(_variants[-1]) and _may_hold_variant(text):
        text = _variant_re.sub(MASK, text)  # the slow pass: only for a text that holds one
    return text


def _may_hold_variant(text: str) -> bool:
    """A quick test: the text, lower-cased and squeezed of whitespace (and JSON's escapes of it),
    contains a transform. Plain substring searches, so a record without one costs little."""
    low = text.lower()
    if low.isascii():
        data = low.encode("ascii")
        if b"\\" in data:
            data = data.replace(b"\\n", b"").replace(b"\\r", b"").replace(b"\\t", b"")
            if b"\\u" in data:  # JSON's escapes of other spaces (zero-width ones included)
                data = _JSON_ESCAPE.sub(b"", data)
        data = data.translate(None, _ASCII_SPACE)
        return any(v in data for v in _variants_ascii)
    if "\\" in low:
        low = low.replace("\\n", "").replace("\\r", "").replace("\\t", "")
    squeezed = low.translate(_NO_SPACE)
    return any(v in squeezed for v in _variants)


def scrub_obj(obj: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string scrubbed; keys too."""
    if not _forms:
        return obj
    if isinstance(obj, str):
        return scrub(obj)
    if isinstance(obj, dict):
        return {scrub_obj(k): scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_obj(v) for v in obj]
    return obj


def redact_url(url: str | None) -> str | None:
    """A URL (or comma-separated URLs) fit for config.json and error lines: user:password and
    every query value masked (keys sometimes travel as ``?api_key=...``)."""
    if not url:
        return url
    if "," in url:
        return ",".join(redact_url(u.strip()) or "" for u in url.split(","))
    try:
        parts = urlsplit(url)
    except ValueError:  # not parseable (a bad IPv6 host): mask whatever sits where credentials go
        return re.sub(r"([?&][^=&#]*)=[^&#]*", rf"\1={MASK}", re.sub(r"//[^/?#]*@", f"//{MASK}@", url))
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    pairs = (q.partition("=") for q in parts.query.split("&") if q)
    query = "&".join(f"{k}={MASK}" if sep else k for k, sep, _ in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


# --- what is printed ------------------------------------------------------------------------------
def _install_log_hook() -> None:
    """Scrub every log record's message as it is made (httpx logs each request's URL at INFO,
    query string and user:password included)."""
    global _log_hook_installed
    with _lock:
        if _log_hook_installed:
            return
        _log_hook_installed = True
        make = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if _forms:
            try:
                message = record.getMessage()
            except Exception:  # a malformed record is the logging module's business
                return record
            clean = scrub(message)
            if clean != message:
                record.msg, record.args = clean, ()
        return record

    logging.setLogRecordFactory(factory)


class ScrubbingStream:
    """A text stream that scrubs what is written to it, delegating everything else."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """While the block runs, stdout and stderr (rich consoles, print, warnings) are scrubbed."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingStream(out), ScrubbingStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def install_excepthook() -> None:
    """Scrub the traceback of an exception nothing caught (printed after ``main`` returned, when
    the streams are no longer wrapped)."""
    if getattr(sys.excepthook, "_chateval_scrubs", False):
        return
    original = sys.excepthook

    def hook(*exc: Any) -> None:
        with scrubbed_output():
            original(*exc)

    hook._chateval_scrubs = True  # type: ignore[attr-defined]
    sys.excepthook = hook
