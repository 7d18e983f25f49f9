"""``chateval view DIR --serve``: a local HTTP server (127.0.0.1 only) over a folder of runs. Pages
are rendered on request from the run folders, so a run still writing shows its newest records;
each page polls a small JSON status and reloads when the run's files change.

    /                      the run list (every run under the folder, at any depth)
    /run/REL               one run's page          /compare?run=REL&run=REL   runs side by side
    /api/runs              the list's status       /api/run/REL               one run's status
    /api/chunk?run=REL[&run=REL...]&n=N&v=VERSION      chunk N of that page's rows, as JSON

A page holds the list of its questions and the first chunk of rows; the others are asked for as
the reader opens them (:mod:`.paging`). The runs read for a page are kept (the last few pages) until
their files change, so a chunk costs its own rows' rendering, not a re-read of the run.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from ..util.errors import InputError
from ..util.secrets import scrub
from .build import Loaded, load_rows, render_chunk, render_index, render_page
from .load import VIEWED
from .paging import CHUNK_ROWS, check_chunk_rows, n_chunks
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
KEPT_PAGES = 2  # pages whose runs stay read (a 10,000-record run is ~10 s to read)
MAX_QUERY = 8192  # characters of a chunk request's query
MAX_RUNS = 32  # runs on one compared page


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        root: Path,
        port: int = DEFAULT_PORT,
        *,
        context_chars: int | None = None,
        poll_ms: int = POLL_MS,
        chunk_rows: int = CHUNK_ROWS,
    ) -> None:
        self.root = Path(root)
        self.context_chars = context_chars
        self.poll_ms = poll_ms
        self.chunk_rows = check_chunk_rows(chunk_rows)
        self._kept: OrderedDict[tuple[str, ...], tuple[str, Loaded]] = OrderedDict()
        self._lock = threading.Lock()
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def run_path(self, rel: str) -> Path | None:
        """The run folder named ``rel``, only if it is one of the runs listed (no path outside the folder)."""
        rel = rel.strip("/") or "."  # a browser turns "run/." (the served folder is the run) into "run/"
        return next((p for p in find_runs(self.root) if _rel(p, self.root) == rel), None)

    def loaded(self, runs: list[Path]) -> tuple[str, Loaded]:
        """The runs read (kept while their files are unchanged) and their version."""
        key = tuple(str(p) for p in runs)
        version = files_version(runs)
        with self._lock:  # one read at a time: two tabs on a large run do not read it twice
            kept = self._kept.get(key)
            if kept is None or kept[0] != version:
                kept = (version, load_rows(runs, self.context_chars))
            self._kept[key] = kept
            self._kept.move_to_end(key)
            while len(self._kept) > KEPT_PAGES:
                self._kept.popitem(last=False)
            return kept

    def page(self, runs: list[Path], rels: list[str], live: dict[str, Any]) -> str:
        version, loaded = self.loaded(runs)
        source = {"url": "/api/chunk?" + urlencode([("run", r) for r in rels] + [("v", version)])}
        return render_page(loaded, chunk_rows=self.chunk_rows, source=source, live=live)

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


def files_version(runs: list[Path]) -> str:
    """Changes when a file a page reads changes (size or time), in any of the runs or their sub-runs."""
    parts = []
    for run in runs:
        for d in [run, *sorted(p for p in run.iterdir() if p.is_dir() and not p.name.startswith("."))]:
            for f in [*(d / n for n in VIEWED), *sorted(d.glob("*.png"))]:
                try:
                    st = f.stat()
                except OSError:
                    continue
                parts.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]


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

    def _chunk(self, raw: str) -> None:
        """One chunk of a page's rows, as JSON. Only this server's own pages ask (a page elsewhere
        cannot read the answer, and a request marked cross-site is refused outright); only runs of
        the list are read; a chunk of an older version of the runs is a 409 (the page reloads)."""
        srv = self.server
        if self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            return self._error(HTTPStatus.FORBIDDEN, "chunks are for this viewer's own pages")
        try:
            query = parse_qs(raw, max_num_fields=MAX_RUNS + 2) if len(raw) <= MAX_QUERY else {}
        except ValueError:  # more fields than a page of MAX_RUNS runs asks with
            query = {}
        rels, n, version = query.get("run") or [], (query.get("n") or [""])[0], (query.get("v") or [""])[0]
        if not rels or len(rels) > MAX_RUNS or not (n.isascii() and n.isdigit()) or len(n) > 7:
            return self._error(HTTPStatus.BAD_REQUEST, f"a chunk is /api/chunk?run=REL&n=N (1 to {MAX_RUNS} runs)")
        runs = [srv.run_path(r) for r in rels]
        if any(r is None for r in runs):
            return self._error(HTTPStatus.NOT_FOUND, f"no run {rels} under {srv.root}")
        paths = [r for r in runs if r is not None]
        current, loaded = srv.loaded(paths)
        if version != current:
            return self._error(HTTPStatus.CONFLICT, "the runs changed since the page was made: reload it")
        if int(n) >= n_chunks(len(loaded.rows), srv.chunk_rows):
            return self._error(HTTPStatus.NOT_FOUND, f"no chunk {n}")
        self._json({"n": int(n), "html": render_chunk(loaded, int(n), srv.chunk_rows)})

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
                self._send(srv.page([run], [rel], live))
            elif path == "/compare":
                rels = query.get("run") or []
                runs = [srv.run_path(r) for r in rels]
                if len(rels) < 2 or any(r is None for r in runs):
                    return self._error(
                        HTTPStatus.BAD_REQUEST, f"compare needs two or more runs of the list (?run=A&run=B), not {rels}"
                    )
                live = {"poll": "/api/runs", "interval_ms": srv.poll_ms}
                self._send(srv.page([r for r in runs if r is not None], rels, live))
            elif path == "/api/chunk":
                self._chunk(url.query)
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no page {path}")
        except InputError as e:  # a run file half written or broken: say which, keep serving
            self._error(HTTPStatus.CONFLICT, str(e), retry=path.startswith("/run/"))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away mid-answer
