"""Vector search on Qdrant: embedded (in memory or a folder) by default, or a server by URL.

One code path for all three: qdrant-client's ``AsyncQdrantClient``, awaited from the memory
systems' coroutines (its local mode runs the same client API in-process). A store owns one
collection named ``<prefix>-<8 hex>``: a benchmark passes a readable per-run prefix, and the
collection is deleted on ``aclose()``/``close()`` and replaced by a fresh one on ``reset()``,
so a Qdrant server keeps nothing once a run is over. A collection named by the caller is the
caller's: it is kept (that is how a folder store persists)."""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Coroutine, Iterable
from typing import Any

import numpy as np

from ..util import secrets
from ..util.errors import ChatevalError

# qdrant-client's version check runs in a background thread and warns (outside any error
# handling) when nothing answers; our own first request already reports that in one line.
_CLIENT_OPTIONS = {"timeout": 10, "check_compatibility": False}
API_KEY_ENV = "QDRANT_API_KEY"  # read from the environment only: a key never sits in config.json

# Deletions started by a synchronous close()/reset() inside a running loop: kept referenced
# until done (asyncio holds tasks weakly); ``settle()`` awaits them.
_PENDING: set[asyncio.Task[None]] = set()


class VectorStoreError(ChatevalError):
    exit_code = 2


def _point_id(key: str) -> str:
    # Qdrant ids must be integers or UUIDs; derive a stable UUID from our string id.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, key))


def _key(point: Any) -> str:
    # Points are always read with_payload=["_key"]: the payload is there.
    assert point.payload is not None
    return point.payload["_key"]


def is_server(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def collection_prefix(*parts: str, base: str = "chateval") -> str:
    """A readable collection-name prefix: ``base`` and free text (run folder, system name) in
    the characters Qdrant accepts (letters, digits, '-' and '_')."""
    words = [re.sub(r"[^A-Za-z0-9_-]+", "-", p).strip("-")[:32] for p in parts if p]
    return "-".join([base, *[w for w in words if w]])


def _unreachable(location: str, e: Exception) -> VectorStoreError:
    first = str(e).splitlines()[0][:160] if str(e) else "no answer"
    where = secrets.redact_url(location) if is_server(location) else location
    return VectorStoreError(secrets.scrub(f"cannot reach Qdrant at {where}: {type(e).__name__}: {first}"))


def server_options(url: str) -> dict[str, Any]:
    """Client options for a server: the URL, and the API key from $QDRANT_API_KEY if set."""
    secrets.register_url(url)
    secrets.register_env((API_KEY_ENV,))
    return {"url": url, "api_key": os.environ.get(API_KEY_ENV) or None, **_CLIENT_OPTIONS}


def check_server(url: str) -> None:
    """Fail fast, in one line, when no Qdrant server answers at ``url`` (before any work)."""
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(**server_options(url))
        client.get_collections()
        client.close()
    except Exception as e:
        raise _unreachable(url, e) from None


def _run_now(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run a cleanup coroutine from synchronous code: as a task when a loop is running in this
    thread (benchmarks close systems inside one), else to completion right away."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return None
    task = loop.create_task(coro)
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)
    return task


async def settle() -> None:
    """Wait for deletions started by synchronous close()/reset() calls in this loop."""
    loop = asyncio.get_running_loop()
    while mine := [t for t in _PENDING if t.get_loop() is loop]:
        await asyncio.gather(*mine, return_exceptions=True)


class VectorStore:
    """Cosine search over string-keyed vectors. ``location``: ':memory:', a folder path, or
    an http(s):// URL of a Qdrant server (the same code path). The collection is created on
    first use."""

    def __init__(
        self, dim: int, *, location: str = ":memory:", collection: str | None = None, prefix: str = "chateval"
    ) -> None:
        from qdrant_client import AsyncQdrantClient, models

        self._models = models
        self.dim, self.location = dim, location
        self.owned = collection is None  # ours to delete when closed
        self.collection = collection or f"{prefix}-{uuid.uuid4().hex[:8]}"
        if is_server(location):
            self.client = AsyncQdrantClient(**server_options(location))
        elif location == ":memory:":
            self.client = AsyncQdrantClient(location=":memory:")
        else:
            self.client = AsyncQdrantClient(path=location)
        self._ready = False
        self._dropping: asyncio.Task[None] | None = None  # a reset()'s deletion, awaited before reuse

    async def _ensure(self) -> None:
        if self._dropping is not None:
            await self._dropping  # several callers may await the one task
            self._dropping = None
        if self._ready:
            return
        try:
            if not await self.client.collection_exists(self.collection):
                await self.client.create_collection(
                    self.collection,
                    vectors_config=self._models.VectorParams(size=self.dim, distance=self._models.Distance.COSINE),
                )
        except Exception as e:
            raise _unreachable(self.location, e) from None
        self._ready = True

    async def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict[str, Any]] | None = None) -> None:
        if not ids:
            return
        await self._ensure()
        payloads = payloads or [{} for _ in ids]
        points = [
            self._models.PointStruct(id=_point_id(i), vector=v.tolist(), payload={**p, "_key": i})
            for i, v, p in zip(ids, vectors, payloads)
        ]
        await self.client.upsert(self.collection, points=points, wait=True)

    async def search(self, vector: np.ndarray, k: int, *, only: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """Best-first (id, cosine similarity); ``only`` restricts the candidates."""
        query_filter = None
        if only is not None:
            keys = list(only)
            if not keys:
                return []
            query_filter = self._models.Filter(must=[self._models.HasIdCondition(has_id=[_point_id(x) for x in keys])])
        await self._ensure()
        res = await self.client.query_points(
            self.collection, query=vector.tolist(), limit=max(1, k), query_filter=query_filter, with_payload=["_key"]
        )
        return [(_key(p), float(p.score)) for p in res.points]

    async def vectors(self, ids: list[str]) -> np.ndarray:
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        await self._ensure()
        got = await self.client.retrieve(
            self.collection, ids=[_point_id(i) for i in ids], with_vectors=True, with_payload=["_key"]
        )
        by_key = {_key(p): p.vector for p in got}
        return np.asarray([by_key[i] for i in ids], dtype=np.float32)

    async def delete(self, ids: list[str]) -> None:
        if ids:
            await self._ensure()
            await self.client.delete(
                self.collection, points_selector=self._models.PointIdsList(points=[_point_id(i) for i in ids])
            )

    async def count(self) -> int:
        await self._ensure()
        return (await self.client.count(self.collection, exact=True)).count

    async def collections(self) -> list[str]:
        """Every collection at this location (to see what a run leaves behind)."""
        return [c.name for c in (await self.client.get_collections()).collections]

    async def _drop(self) -> None:
        if await self.client.collection_exists(self.collection):
            await self.client.delete_collection(self.collection)

    def reset(self) -> None:
        """Empty the store: the collection is deleted now (or, inside a running loop, before the
        next call uses the store) and created again on next use."""
        self._ready = False
        self._dropping = _run_now(self._drop())

    async def aclose(self) -> None:
        """Delete the collection if this store made it, then close the client."""
        try:
            if self._dropping is not None:
                await self._dropping
            if self.owned:
                await self._drop()
        finally:
            await self.client.close()

    def close(self) -> None:
        """``aclose()`` from synchronous code (see ``_run_now``)."""
        _run_now(self.aclose())
