"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

It binds only to 127.0.0.1 on an ephemeral port and serves from a background thread (stdlib
``ThreadingHTTPServer``; no extra dependencies)::

    with FakeOpenAIServer() as server:
        server.script(["Score of Assistant 1: 8\\nScore of Assistant 2: 4", Fault("429", retry_after=0.05)])
        ...  # point a client at server.base_url
        assert len(server.requests) == 2

Each request consumes the next scripted action; when the script is empty, the random fault
mix (``faults={"429": 0.1, "500": 0.05}``, seeded) may pick a fault, and otherwise
``responder(request_body)`` gives the reply text. ``latency_s`` delays every answer.
``reject_response_format=True`` answers any request carrying ``response_format`` with HTTP 400.

A simulated prompt cache reports cached input tokens in each protocol's usage fields. OpenAI
style (automatic prefix caching): ``cached_tokens`` = the longest prefix the request's prompt
shares with a prompt answered earlier, in tokens (characters / 4), rounded down to
``cache_granularity`` tokens and 0 below ``cache_min_tokens`` (OpenAI: 128 and 1024; tests
lower them for short prompts). Anthropic style (explicit breakpoints): the system text up to the
last ``cache_control`` block is read from the cache when an earlier request had the same one,
else written to it (``cache_creation_input_tokens``).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import protocols
from .faults import FAULT_KINDS, GARBAGE_BODY, MAX_SLEEP_S, Action, Fault, FaultMix, trickle, with_usage
from .prompt_cache import SimulatedPromptCache

__all__ = ["DEFAULT_REPLY", "GARBAGE_BODY", "FAULT_KINDS", "Action", "FakeOpenAIServer", "Fault", "default_responder"]

DEFAULT_REPLY = (
    "Both responses address the question; Assistant 1 is more complete and accurate.\n"
    "Score of Assistant 1: 7\n"
    "Score of Assistant 2: 5"
)

# Idle keep-alive connections are dropped after this many seconds.
IDLE_TIMEOUT_S = 10.0

Responder = Callable[[dict[str, Any]], str]


def default_responder(request: dict[str, Any]) -> str:
    return DEFAULT_REPLY


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # close() wakes and joins handlers itself, with a bound
    allow_reuse_address = False
    request_queue_size = 256  # many clients connect at once (the default backlog of 5 refuses them)

    owner: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real endpoint; every reply has a length
    timeout = IDLE_TIMEOUT_S
    # Headers and body go out in one segment with TCP_NODELAY: otherwise Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every reply, which would swamp latency benchmarks.
    disable_nagle_algorithm = True
    wbufsize = -1
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return None

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    # --- responses ------------------------------------------------------------------------
    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        length: int | None = None,  # the Content-Length of a body written after this call
    ) -> bool:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            return True
        except OSError:  # the client gave up (e.g. after its own timeout)
            self.close_connection = True
            return False

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> bool:
        return self._send(status, json.dumps(payload).encode("utf-8"), headers=headers)

    def _send_completion(self, payload: dict[str, Any]) -> None:
        # Record before writing: the client may read the reply (and a test inspect
        # ``completions``) before this thread runs again after the write.
        self.server.owner._sent(payload)
        if not self._send_json(200, payload):  # the client gave up: it never got this one
            self.server.owner._unsent(payload)

    def _error(
        self, status: int, message: str, type_: str, code: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_json(
            status, protocols.error(getattr(self, "protocol", protocols.OPENAI), message, type_, code), headers
        )

    def _reset(self) -> None:
        """Drop the connection with a TCP RST and no response at all."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self.connection.close()  # fd is released once rfile/wfile close in finish()
        except OSError:
            pass

    # --- routes ---------------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(
                200, {"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "fake"}]}
            )
        else:
            self._error(404, f"no route for GET {self.path}", "invalid_request_error")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        self.protocol = protocols.route(self.path) or protocols.OPENAI
        if protocols.route(self.path) is None:
            self._error(404, f"no route for POST {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw or b"null")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self._error(400, "request body is not a JSON object", "invalid_request_error")
            return
        owner = self.server.owner
        action = owner._next_action(body, {k.lower(): v for k, v in self.headers.items()} | {":path": self.path})
        if owner.reject_response_format and body.get("response_format"):
            self._error(400, "response_format is not supported by this server", "invalid_request_error")
            return
        if owner.latency_s > 0 and owner._stop.wait(min(owner.latency_s, MAX_SLEEP_S)):
            self._reset()  # shutting down
            return
        if isinstance(action, str):
            self._send_completion(owner._completion(self.protocol, body, action))
            return
        kind = action.kind
        if kind == "429":
            headers = {} if action.retry_after is None else {"Retry-After": f"{action.retry_after:g}"}
            self._error(
                429,
                "Rate limit reached for test-model. Please try again later.",
                "rate_limit_error",
                "rate_limit_exceeded",
                headers,
            )
        elif kind == "500":
            self._error(500, "The server had an error while processing your request.", "server_error")
        elif kind == "401":
            self._error(401, "Incorrect API key provided.", "authentication_error", "invalid_api_key")
        elif kind == "503":
            self._error(503, "The engine is currently overloaded, please try again later.", "server_error")
        elif kind == "timeout":
            if owner._stop.wait(action.delay):
                self._reset()
                return
            self._send_completion(owner._completion(self.protocol, body, owner._reply_text(body)))
        elif kind == "reset":
            self._reset()
        elif kind == "garbage":
            body_text = action.body if action.body is not None else GARBAGE_BODY
            self._send(200, body_text.encode("utf-8"), content_type=action.content_type)
        elif kind == "truncated":
            full = json.dumps(owner._completion(self.protocol, body, owner._reply_text(body))).encode("utf-8")
            self._send(200, full[: len(full) // 2])
        elif kind == "empty":
            self._send_completion(owner._completion(self.protocol, body, ""))
        elif kind == "usage":
            self._send_completion(with_usage(owner._completion(self.protocol, body, "ok"), action.usage or {}))
        elif kind == "huge":
            self._send_completion(owner._completion(self.protocol, body, "x" * action.size))
        elif kind == "trickle":
            data = json.dumps(owner._completion(self.protocol, body, owner._reply_text(body))).encode("utf-8")
            if self._send(200, b"", length=len(data)):  # the headers now, the body a few bytes at a time
                self.close_connection = not trickle(self.wfile, data, action.delay, owner._stop)


class FakeOpenAIServer:
    """A scripted, fault-injecting OpenAI-compatible endpoint on 127.0.0.1 (see module doc)."""

    def __init__(
        self,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        faults: Mapping[str | Fault, float] | None = None,
        seed: int = 0,
        reject_response_format: bool = False,
        embedding_dim: int = 8,
        cache_min_tokens: int = 1024,
        cache_granularity: int = 128,
    ) -> None:
        if not 0 <= latency_s <= MAX_SLEEP_S:
            raise ValueError(f"latency_s must be between 0 and {MAX_SLEEP_S}")
        self.responder: Responder = responder or default_responder
        self.latency_s = latency_s
        self.reject_response_format = reject_response_format  # a 400, as servers without JSON mode give
        self.embedding_dim = embedding_dim  # the length of /v1/embeddings vectors
        self.faults = FaultMix(faults or {}, seed)  # drawn from when the script is empty
        self.cache = SimulatedPromptCache(cache_min_tokens, cache_granularity)
        self._lock = threading.Lock()
        self._queue: deque[Action] = deque()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._completions: list[dict[str, Any]] = []
        self._actions: list[str] = []
        self._counter = 0
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._closed = False

        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()

    # --- public API -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The parsed JSON bodies of the chat-completion requests received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The HTTP headers (lower-cased names) of each request in ``requests``, with the request's
        path and query under ``:path`` (a copy)."""
        with self._lock:
            return list(self._headers)

    @property
    def completions(self) -> list[dict[str, Any]]:
        """The chat.completion payloads written in full (with their ``usage``), in order (a copy)."""
        with self._lock:
            return list(self._completions)

    @property
    def actions(self) -> list[str]:
        """What each request got, in order: "reply" or a fault kind."""
        with self._lock:
            return list(self._actions)

    @property
    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(self._actions)

    @property
    def pending(self) -> int:
        """Scripted actions not consumed yet."""
        with self._lock:
            return len(self._queue)

    def script(self, actions: Iterable[Action]) -> FakeOpenAIServer:
        """Queue actions (reply texts or ``Fault``s) consumed one per request, in order."""
        items = list(actions)
        for a in items:
            if not isinstance(a, (str, Fault)):
                raise TypeError(f"a scripted action is a reply str or a Fault, not {type(a).__name__}")
        with self._lock:
            self._queue.extend(items)
        return self

    def reset(self) -> None:
        """Forget received requests and pending script (the random stream continues)."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._headers.clear()
            self._completions.clear()
            self._actions.clear()
        self.cache.clear()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()  # wakes handlers sleeping on latency or a timeout fault
        self._httpd.shutdown()  # stops serve_forever (bounded by poll_interval)
        self._httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:  # unblock keep-alive handlers waiting for a next request
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - safety net
        try:
            self.close()
        except Exception:
            pass

    # --- used by the handler ----------------------------------------------------------------
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _next_action(self, body: dict[str, Any], headers: dict[str, str]) -> Action:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)
            if self._queue:
                action: Action | None = self._queue.popleft()
            else:
                action = self.faults.draw()
            self._actions.append("reply" if isinstance(action, str) or action is None else action.kind)
        if action is None:
            action = self._reply_text(body)
        return action

    def _unsent(self, payload: dict[str, Any]) -> None:
        with self._lock:
            if payload in self._completions:
                self._completions.remove(payload)

    def _sent(self, payload: dict[str, Any]) -> None:
        with self._lock:
            self._completions.append(payload)

    def _reply_text(self, body: dict[str, Any]) -> str:
        text = self.responder(body)
        if not isinstance(text, str):
            raise TypeError("the responder must return a str")
        return text

    def _completion(self, protocol: str, body: dict[str, Any], text: str) -> dict[str, Any]:
        with self._lock:
            self._counter += 1
            n = self._counter
        read, write = self.cache.usage(protocol, body) if text else (0, 0)
        return protocols.completion(protocol, body, text, n, self.embedding_dim, read, write)
