"""A fake Qdrant REST server for tests: the part of the API chateval's vector store uses
(collections, upsert, query by cosine, retrieve, delete, count), kept in memory.

Binds to 127.0.0.1 on an ephemeral port and serves from a background thread::

    with FakeQdrantServer() as server:
        ...  # point --qdrant-url / VectorStore(location=server.url) at it
        assert server.collections == {}          # everything the run created was deleted
        assert all(r.api_key == "k" for r in server.requests)

It exists so the *server* code path of qdrant-client (its async REST client, our API key
header) is exercised on the wire; what it answers is deliberately minimal.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

import numpy as np

__all__ = ["FakeQdrantServer", "QdrantRequest"]


@dataclass
class QdrantRequest:
    method: str
    path: str
    api_key: str | None
    body: Any = None


@dataclass
class _Collection:
    points: dict[Any, dict[str, Any]] = field(default_factory=dict)  # id -> {"vector", "payload"}


def _ok(result: Any) -> dict[str, Any]:
    return {"result": result, "status": "ok", "time": 0.0}


class FakeQdrantServer:
    def __init__(self) -> None:
        self.requests: list[QdrantRequest] = []
        self.collections: dict[str, _Collection] = {}
        self.created: list[str] = []  # every collection ever created, in order
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeQdrantServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- the API -------------------------------------------------------------------------
    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if parts == ["collections"] and method == "GET":
            return 200, _ok({"collections": [{"name": n} for n in self.collections]})
        if len(parts) < 2 or parts[0] != "collections":
            return 404, {"status": {"error": f"not found: {path}"}}
        name, rest = parts[1], parts[2:]
        coll = self.collections.get(name)
        if rest == ["exists"]:
            return 200, _ok({"exists": coll is not None})
        if not rest and method == "PUT":
            self.collections[name] = _Collection()
            self.created.append(name)
            return 200, _ok(True)
        if not rest and method == "DELETE":
            return 200, _ok(self.collections.pop(name, None) is not None)
        if coll is None:
            return 404, {"status": {"error": f"Collection `{name}` doesn't exist!"}}
        if rest == ["points"] and method == "PUT":
            for p in body["points"]:
                coll.points[p["id"]] = {"vector": p["vector"], "payload": p.get("payload") or {}}
            return 200, _ok({"operation_id": 0, "status": "completed"})
        if rest == ["points", "delete"]:
            for pid in body.get("points", []):
                coll.points.pop(pid, None)
            return 200, _ok({"operation_id": 0, "status": "completed"})
        if rest == ["points", "count"]:
            return 200, _ok({"count": len(coll.points)})
        if rest == ["points", "query"]:
            return 200, _ok({"points": self._query(coll, body)})
        if rest == ["points"] and method == "POST":  # retrieve by ids
            return 200, _ok(
                [
                    {"id": pid, "payload": coll.points[pid]["payload"], "vector": coll.points[pid]["vector"]}
                    for pid in body["ids"]
                    if pid in coll.points
                ]
            )
        return 404, {"status": {"error": f"not supported by the fake: {method} {path}"}}

    @staticmethod
    def _query(coll: _Collection, body: dict[str, Any]) -> list[dict[str, Any]]:
        query = body["query"]
        if isinstance(query, dict):  # {"nearest": [...]} as the client sends a plain vector query
            query = query.get("nearest", query)
        q = np.asarray(query, dtype=np.float64)
        allowed = None
        for cond in (body.get("filter") or {}).get("must") or []:
            if "has_id" in cond:
                allowed = set(cond["has_id"])
        scored = []
        for pid, p in coll.points.items():
            if allowed is not None and pid not in allowed:
                continue
            v = np.asarray(p["vector"], dtype=np.float64)
            score = float(q @ v / ((np.linalg.norm(q) * np.linalg.norm(v)) or 1.0))
            scored.append({"id": pid, "version": 0, "score": score, "payload": p["payload"]})
        scored.sort(key=lambda s: -s["score"])
        return scored[: int(body.get("limit", 10))]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                path = urlparse(self.path).path
                with server._lock:
                    server.requests.append(QdrantRequest(self.command, path, self.headers.get("api-key"), body))
                    try:
                        status, reply = server.handle(self.command, re.sub(r"/+", "/", path), body)
                    except Exception as e:  # a request the fake does not understand: say so
                        status, reply = 500, {"status": {"error": f"fake Qdrant: {type(e).__name__}: {e}"}}
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _serve

        return Handler
