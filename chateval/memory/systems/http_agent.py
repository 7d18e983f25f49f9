"""http: a memory agent running as a service, in any language, behind protocol v1 (JSON over
HTTP POST). Each system instance is one *case* (a fresh memory): ``/reset`` once, ``/ingest``
per session in date order (or ``/ingest_batch``: many sessions a request, when the agent has
it), ``/respond`` per question or dialogue turn. What the agent returns as ``retrieved`` is
scored exactly like a built-in system's recall; its ``usage`` is metered.

One ``httpx.AsyncClient`` per system instance (per event loop) keeps its connections alive
across requests and cases; ``aclose()``/``close()`` close it."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import time
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ...models import CallRecord, UsageTotals, approx_tokens
from ...models.backends import split_query, without_credentials
from ...util import secrets
from ...util.http_limits import AGENT_MAX_RESPONSE_BYTES, ResponseTooLarge, request_capped
from ...util.options import check_base_url
from ..base import MemorySystem, last_user_text, memory_system
from ..types import MemoryItem, Response, Session, Turn

PROTOCOL = "chateval-memory-agent/1"


class HttpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(description="the agent's base URL, e.g. http://127.0.0.1:8080")
    timeout_s: float = Field(
        60.0, gt=0, description="seconds per request attempt, overall: connecting to the reply's last byte"
    )
    max_response_bytes: int = Field(
        AGENT_MAX_RESPONSE_BYTES, gt=0, description="the largest reply accepted; a larger one fails the request"
    )
    max_retries: int = Field(3, ge=0, description="retries on non-2xx replies, timeouts, connection errors, bad JSON")
    retry_base_delay_s: float = Field(0.5, ge=0, description="first backoff delay; doubles each retry, with jitter")
    api_key_env: str | None = Field(
        None,
        description="name of an environment variable whose value is sent as "
        "'Authorization: Bearer ...' (the key itself is never stored)",
    )
    case_prefix: str = Field("chateval", description="readable prefix of the case ids sent to the agent")
    ingest_batch: int = Field(
        64,
        ge=1,
        description="sessions per POST /ingest_batch when a case's sessions are ingested together; 1: one "
        "POST /ingest per session. An agent without /ingest_batch (404, 405 or 501) gets /ingest, remembered",
    )

    _url = field_validator("url")(check_base_url)

    @model_validator(mode="after")
    def _register_secrets(self) -> HttpSettings:
        # Configured here: from now on the URL's credentials and the key are scrubbed from every
        # file and line chateval writes (the agent may echo them; errors quote the URL).
        secrets.register_url(self.url)
        if self.api_key_env:
            secrets.register_env((self.api_key_env,))
        return self

    @property
    def public_url(self) -> str:
        """The URL as errors and records quote it: no user:password, no query values."""
        return secrets.redact_url(self.url) or ""

    def public_endpoint(self, path: str) -> str:
        """An endpoint's URL as errors quote it (its query after the path, values masked)."""
        parts = urlsplit(self.url)
        return secrets.redact_url(urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))) or ""

    def endpoint(self, path: str) -> tuple[str, dict[str, str] | None, httpx.BasicAuth | None, str | None]:
        """Where ``path`` is posted: the URL (base path + path, no credentials, no query), the
        base URL's query as parameters, Basic auth from its user:password, and the API key. With
        a key configured the key authenticates (httpx would replace its Bearer header by the
        URL's Basic auth)."""
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        parts = urlsplit(self.url)
        auth = None
        if parts.username is not None and not key:
            auth = httpx.BasicAuth(unquote(parts.username), unquote(parts.password or ""))
        base, query = split_query(without_credentials(self.url))
        return (base or "").rstrip("/") + path, query, auth, key or None


class Retrieved(BaseModel):
    session_id: str
    turn_id: str | None = None
    score: float | None = None


# Far above any one reply's real usage: an agent reporting more is wrong, and its count would
# be metered (a reply that fails this check fails the call, as negative counts do).
MAX_AGENT_TOKENS = 100_000_000


class AgentUsage(BaseModel):
    prompt_tokens: int = Field(0, ge=0, le=MAX_AGENT_TOKENS)
    completion_tokens: int = Field(0, ge=0, le=MAX_AGENT_TOKENS)


class RespondReply(BaseModel):
    answer: str
    context: str | None = None
    retrieved: list[Retrieved] | None = None
    usage: AgentUsage | None = None


class HttpAgentError(RuntimeError):
    """The agent kept failing (after the retries); the message quotes what it said."""


class _Unsupported(Exception):
    """An optional endpoint the agent does not have (404, 405 or 501): not retried."""


UNSUPPORTED = (404, 405, 501)
# Base URLs whose agent answered /ingest_batch with UNSUPPORTED: later cases of the run go
# straight to /ingest (one probe per agent and process, not one per case).
_NO_BATCH: set[str] = set()
# Clients closed by a synchronous close() inside a running loop: referenced until done.
_CLOSING: set[asyncio.Task[None]] = set()


@functools.cache
def _tls() -> Any:
    """httpx's default verification context, built once: building it (reading the CA bundle)
    costs ~20 ms of CPU, which every new client would otherwise pay (one per case)."""
    return httpx.create_ssl_context()


def _turn(t: Turn) -> dict[str, str]:
    return {"turn_id": t.id, "role": t.role, "content": t.content}


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def _session(s: Session) -> dict[str, Any]:
    return {"session_id": s.id, "date": _iso(s.date), "turns": [_turn(t) for t in s.turns]}


@memory_system("http")
class HttpAgent(MemorySystem[HttpSettings]):
    description = "an agent running as a service (any language), reached over HTTP protocol v1"
    uses_embedder = False
    paper = "chateval's HTTP agent protocol v1 (see README: HTTP agents)"
    Settings = HttpSettings
    supports_recall = True  # served by /respond: the agent's `retrieved` list

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._queue: list[Session] | None = None  # sessions held for /ingest_batch (in ingest_all)
        self._new_case()

    def _new_case(self) -> None:
        self.case_id = f"{self.settings.case_prefix}-{uuid.uuid4().hex[:12]}"
        self._reset_sent = False
        self._turns = 0

    # --- the wire ------------------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        """This instance's client for the running loop (a client belongs to the loop it was
        made in: a system used from a new ``asyncio.run`` gets a new one)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop or self._client.is_closed:
            self._client = httpx.AsyncClient(timeout=self.settings.timeout_s, verify=_tls())
            self._client_loop = loop
        return self._client

    async def _post(self, path: str, payload: dict[str, Any], *, optional: bool = False) -> dict[str, Any]:
        """POST with bounded retries; a reply that is not a JSON object counts as a failure.
        ``optional``: the endpoint may be missing (404, 405, 501): ``_Unsupported``, no retry."""
        s = self.settings
        url, query, auth, key = s.endpoint(path)
        headers = {"Content-Type": "application/json; charset=utf-8", "X-Chateval-Protocol": PROTOCOL}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last = ""
        for attempt in range(1, s.max_retries + 2):
            body = ""
            try:
                # Within timeout_s overall and max_response_bytes: a trickling or endless reply
                # stops there (httpx's own timeout bounds each read, not the reply); a reply cut
                # off closes its connection, the others go back to the pool.
                reply, raw = await request_capped(
                    self._http(),
                    "POST",
                    url,
                    deadline_s=s.timeout_s,
                    max_bytes=s.max_response_bytes,
                    content=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
                    params=query,
                    headers=headers,
                    # no Basic auth: the client's default, which is none
                    auth=auth if auth is not None else httpx.USE_CLIENT_DEFAULT,
                )
                body = raw.decode(reply.encoding or "utf-8", errors="replace")
                if optional and reply.status_code in UNSUPPORTED:
                    raise _Unsupported(reply.status_code)
                if reply.is_success:
                    data = json.loads(body) if body.strip() else {}
                    if isinstance(data, dict):
                        return data
                    last = f"reply is not a JSON object: {body[:200]!r}"
                else:
                    last = f"HTTP {reply.status_code}: {' '.join(body.split())[:200]!r}"
            except (TimeoutError, httpx.TimeoutException):
                last = f"no reply within {s.timeout_s:g} s"
            except ResponseTooLarge as e:
                last = str(e)
                break  # the same request would get the same reply
            except httpx.TransportError as e:
                last = f"connection failed ({type(e).__name__})"
            except (json.JSONDecodeError, UnicodeDecodeError):
                last = f"reply is not valid JSON: {body[:200]!r}"
            if attempt <= s.max_retries:
                delay = s.retry_base_delay_s * 2 ** (attempt - 1)
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
        raise HttpAgentError(
            secrets.scrub(f"http agent {s.public_endpoint(path)}: {last} (after {attempt} attempt(s))")
        )

    async def _ensure_case(self) -> None:
        if not self._reset_sent:
            await self._post("/reset", {"case_id": self.case_id})
            self._reset_sent = True

    # --- the MemorySystem interface -------------------------------------------------------------
    async def ingest_all(self, sessions: list[Session]) -> None:
        """The base class's checks and order; the sessions then go ``ingest_batch`` at a time."""
        if self.settings.ingest_batch < 2 or self.settings.url in _NO_BATCH:
            return await super().ingest_all(sessions)
        queued: list[Session] = []
        self._queue = queued
        try:
            await super().ingest_all(sessions)  # each _ingest() adds to the queue
        finally:
            self._queue = None
            # Sent even when a later session was refused: those before it count as ingested.
            t0 = time.perf_counter()
            await self._send(queued)
            self._stats.ingest_s += time.perf_counter() - t0

    async def _ingest(self, session: Session) -> None:
        if self._queue is not None:
            self._queue.append(session)
        else:
            await self._send([session])

    async def _send(self, sessions: list[Session]) -> None:
        if not sessions:
            return
        await self._ensure_case()
        size = self.settings.ingest_batch
        for lo in range(0, len(sessions), size):
            chunk = sessions[lo : lo + size]
            if len(chunk) > 1 and self.settings.url not in _NO_BATCH:
                try:
                    await self._post(
                        "/ingest_batch",
                        {"case_id": self.case_id, "sessions": [_session(x) for x in chunk]},
                        optional=True,
                    )
                    self._turns += sum(len(x.turns) for x in chunk)
                    continue
                except _Unsupported:
                    _NO_BATCH.add(self.settings.url)  # this agent has the one-session form only
            for x in chunk:
                await self._post("/ingest", {"case_id": self.case_id, **_session(x)})
                self._turns += len(x.turns)

    async def respond(self, query: str | list[Turn], now: datetime) -> Response:
        dialogue = None if isinstance(query, str) else list(query)
        question = query if isinstance(query, str) else last_user_text(dialogue or [])
        await self._ensure_case()
        t0 = time.perf_counter()
        data = await self._post(
            "/respond",
            {
                "case_id": self.case_id,
                "question": question,
                "date": _iso(now),
                "dialogue": None if dialogue is None else [_turn(t) for t in dialogue],
            },
        )
        latency = time.perf_counter() - t0
        try:
            reply = RespondReply.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            raise HttpAgentError(
                f"http agent {self.settings.public_endpoint('/respond')}: field "
                f"'{'.'.join(map(str, err['loc']))}': {err['msg'].lower()} "
                f"(reply: {secrets.scrub(json.dumps(data))[:200]})"
            ) from None
        usage = reply.usage or AgentUsage()
        # The agent's own model calls count in the run's accounting (price unknown: cost None).
        self.log.add(
            CallRecord(
                model=f"http-agent:{self.settings.public_url}",
                step="agent_respond",
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                tokens_approx=reply.usage is None,
                latency_s=latency,
            )
        )
        context = reply.context or ""
        self._stats.respond_s += latency
        return Response(
            answer=reply.answer,
            context=context,
            context_tokens=approx_tokens(context),
            recalled=self._items(reply.retrieved or [], now),
            usage=UsageTotals.of(self.log.records[-1:]),
            latency_s=latency,
        )

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        resp = await self.respond(query, now)
        return resp.recalled[:k] if k else resp.recalled

    def _items(self, retrieved: list[Retrieved], now: datetime) -> list[MemoryItem]:
        by_id = {s.id: s for s in self.sessions}
        items = []
        for n, r in enumerate(retrieved):
            session = by_id.get(r.session_id)
            items.append(
                MemoryItem(
                    id=f"{r.session_id}:{r.turn_id or '*'}:{n}",
                    text="",
                    session_id=r.session_id,
                    time=session.date if session else now,
                    turn_ids=[r.turn_id] if r.turn_id else [],
                    score=r.score,
                    meta={} if session else {"unknown_session": True},
                )
            )
        return items

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        return ""  # the agent builds its own context; /respond returns it

    def item_count(self) -> int:
        return self._turns

    def _reset(self) -> None:
        self._new_case()  # a new case id: the agent starts a fresh, empty memory on the next call
        # (the client stays: its connections serve the next case too)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()

    def close(self) -> None:
        """From synchronous code: inside the client's running loop the client is closed by a
        task; otherwise its loop is gone and so are its connections' transports."""
        client, self._client = self._client, None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if client is not None and self._client_loop is loop:
            task = loop.create_task(client.aclose())
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)
