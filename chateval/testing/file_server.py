"""A static file server on 127.0.0.1 for tests of ``chateval data get``: serves a folder with
HTTP Range support (206 + Content-Range, 416 past the end), and misbehaves on request::

    with FileServer(folder) as server:
        server.truncate["faireval/raw/question.jsonl"] = 100  # announce the full length, send 100 bytes, close
        server.status["locomo/locomo10.json"] = 500
        ...  # download from server.base_url + "/" + path
        assert server.requests[-1] == ("/faireval/raw/question.jsonl", "bytes=100-")

A truncation or a status applies once (to the next request for that path) unless its path is
also in ``sticky``. ``ignore_range`` answers every request with the whole file (200), as
servers without Range support do. Each file has an ETag; a Range request whose If-Range differs
from it gets the whole file (200), as RFC 9110 says. ``/redirect/<path>`` answers 302 to ``/<path>`` (on ``redirect_base``, another server, when set).
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

__all__ = ["FileServer"]


class FileServer:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.truncate: dict[str, int] = {}
        self.status: dict[str, int] = {}
        self.sticky: set[str] = set()
        self.ignore_range = False
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.headers: list[dict[str, str]] = []
        self.auth: tuple[str, str] | None = None
        self.trickle: dict[str, float] = {}
        self.no_length: set[str] = set()
        self.redirect_base = ""  # where /redirect/<path> points: "" this server, or another's base_url
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _take(self, table: dict[str, int], rel: str) -> int | None:
        if rel not in table:
            return None
        return table[rel] if rel in self.sticky else table.pop(rel)

    def __enter__(self) -> Self:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                rng = self.headers.get("Range")
                server.requests.append((self.path, rng))
                server.headers.append(dict(self.headers.items()))
                if server.auth is not None:
                    want = "Basic " + base64.b64encode(":".join(server.auth).encode()).decode()
                    if self.headers.get("Authorization") != want:
                        return self._reply(401, b"authentication required")
                if self.path.startswith("/redirect/"):
                    self.send_response(302)
                    self.send_header("Location", server.redirect_base + self.path.removeprefix("/redirect"))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                rel = self.path.partition("?")[0].lstrip("/")
                code = server._take(server.status, rel)
                if code is not None:
                    return self._reply(code, f"error {code}".encode())
                path = server.root / rel
                if not path.is_file():
                    return self._reply(404, b"not found")
                data = path.read_bytes()
                etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
                start = 0
                m = re.fullmatch(r"bytes=(\d+)-", rng or "")
                if_range = self.headers.get("If-Range")
                if m and not server.ignore_range and (if_range is None or if_range == etag):
                    start = int(m.group(1))
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                body = data[start:]
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                if rel in server.no_length:
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("ETag", etag)
                self.end_headers()
                cut = server._take(server.truncate, rel)
                if cut is not None:  # the announced length, but only `cut` bytes, then the connection closes
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if rel in server.trickle:
                    try:
                        for i in range(0, len(body), 64):
                            self.wfile.write(body[i : i + 64])
                            self.wfile.flush()
                            time.sleep(server.trickle[rel])
                    except OSError:  # the client gave up
                        self.close_connection = True
                    return
                try:
                    self.wfile.write(body)
                except OSError:  # the client stopped reading (a size cap)
                    self.close_connection = True

            def _reply(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
