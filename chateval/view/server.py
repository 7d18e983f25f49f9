"""``chateval view DIR --serve``: a local HTTP server (127.0.0.1 only) over a folder of runs. Pages
are rendered on request from the run folders, so a run still writing shows its newest records;
each page polls a small JSON status and reloads when the run's files change.

    /                      the run list (every run under the folder, at any depth)
    /run/REL               one run's page          /compare?run=REL&run=REL   runs side by side
    /api/runs              the list's status       /api/run/REL               one run's status
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..util.errors import InputError
from ..util.secrets import scrub
from .build import render_index, render_view
from .runlist import RunEntry, find_runs, list_runs, run_entry

HOST = "127.0.0.1"  # never another interface: the pages quote prompts, answers and data
# The names a request may use for this server. Another name pointing here (DNS rebinding: a page
# the user visits resolves its own host name to 127.0.0.1) must not read the runs, so the Host
# header is checked, not only the interface.
LOCAL_NAMES = frozenset({HOST, "localhost", "[::1]"})
# What the pages need: their own inline style and script, data: images (plots), polls of this
# server; nothing framed, nothing fetched from elsewhere, no form posted anywhere.
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
DEFAULT_PORT = 8765
POLL_MS = 2000


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, root: Path, port: int = DEFAULT_PORT, *, context_chars: int | None = None, poll_ms: int = POLL_MS
    ) -> None:
        self.root = Path(root)
        self.context_chars = context_chars
        self.poll_ms = poll_ms
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def run_path(self, rel: str) -> Path | None:
        """The run folder named ``rel``, only if it is one of the runs listed (no path outside the folder)."""
        rel = rel.strip("/") or "."  # a browser turns "run/." (the served folder is the run) into "run/"
        return next((p for p in find_runs(self.root) if _rel(p, self.root) == rel), None)

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (tests, and the CLI which waits on it); ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="chateval-view", daemon=True)
        thread.start()
        return thread


def host_allowed(host: str | None, port: int) -> bool:
    """``Host`` names this server: a loopback name (or the bound address), with this port or none."""
    if not host:
        return False
    h = host.strip().lower()
    if h.startswith("["):  # an IPv6 literal: "[::1]" or "[::1]:8765"
        name, _, rest = h.partition("]")
        name, given = name + "]", rest[1:]
        if rest and not rest.startswith(":"):
            return False
    else:
        name, _, given = h.partition(":")
    return name in LOCAL_NAMES and given in ("", str(port))


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


def _signature(e: RunEntry) -> list[Any]:
    return [e.rel, e.status, e.n_records, e.mtime]


def _run_status(e: RunEntry) -> dict[str, Any]:
    return {
        "rel": e.rel,
        "status": e.status,
        "n_records": e.n_records,
        "mtime": e.mtime,
        "signature": _signature(e),
        "summary": f"{e.status}, {e.n_records} records, {e.date}",
    }


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # the terminal shows the server's address, not a line per request

    def _send(self, body: str, ctype: str = "text/html; charset=utf-8", code: int = 200) -> None:
        data = scrub(body).encode("utf-8")  # as a written page: no configured secret leaves the process
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(data)

    def _json(self, data: Any) -> None:
        self._send(json.dumps(data), "application/json")

    def _error(self, code: HTTPStatus, text: str, retry: bool = False) -> None:
        from html import escape

        # A run just started has no readable file yet: its page retries until it has.
        again = f"<meta http-equiv='refresh' content='{max(1, self.server.poll_ms // 1000)}'>" if retry else ""
        self._send(
            f"<!DOCTYPE html><meta charset='utf-8'>{again}<title>{code.value}</title><p>{escape(text)}</p>"
            "<p><a href='/'>all runs</a></p>",
            code=code.value,
        )

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlsplit(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        srv = self.server
        if not host_allowed(self.headers.get("Host"), srv.server_address[1]):
            # Not even the run list: a foreign name is a page elsewhere reading this one.
            return self._error(HTTPStatus.MISDIRECTED_REQUEST, "this viewer answers only to 127.0.0.1 and localhost")
        try:
            if path in ("/", "/index.html"):
                self._send(render_index(srv.root, list_runs(srv.root), live={"interval_ms": srv.poll_ms}))
            elif path == "/api/runs":
                entries = list_runs(srv.root)
                counts = {s: sum(e.status == s for e in entries) for s in {e.status for e in entries}}
                self._json(
                    {
                        "runs": [_run_status(e) for e in entries],
                        "signature": [_signature(e) for e in entries],
                        "summary": ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no runs",
                    }
                )
            elif path.startswith("/api/run/"):
                run = srv.run_path(path[len("/api/run/") :])
                if run is None:
                    return self._error(HTTPStatus.NOT_FOUND, f"no run {path[len('/api/run/') :]!r} under {srv.root}")
                self._json(_run_status(run_entry(run, srv.root)))
            elif path.startswith("/run/"):
                rel = path[len("/run/") :]
                run = srv.run_path(rel)
                if run is None:
                    return self._error(HTTPStatus.NOT_FOUND, f"no run {rel!r} under {srv.root}")
                live = {"poll": "/api/run/" + url.path[len("/run/") :], "interval_ms": srv.poll_ms}
                self._send(render_view([run], context_chars=srv.context_chars, live=live))
            elif path == "/compare":
                rels = query.get("run") or []
                runs = [srv.run_path(r) for r in rels]
                if len(rels) < 2 or any(r is None for r in runs):
                    return self._error(
                        HTTPStatus.BAD_REQUEST, f"compare needs two or more runs of the list (?run=A&run=B), not {rels}"
                    )
                self._send(
                    render_view(
                        [r for r in runs if r is not None],
                        context_chars=srv.context_chars,
                        live={"poll": "/api/runs", "interval_ms": srv.poll_ms},
                    )
                )
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no page {path}")
        except InputError as e:  # a run file half written or broken: say which, keep serving
            self._error(HTTPStatus.CONFLICT, str(e), retry=path.startswith("/run/"))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away mid-answer
