"""Vector search on Qdrant: embedded (in memory or a folder) by default, or a server by URL."""

from __future__ import annotations

import uuid
from typing import Any, Iterable

import numpy as np

from ..errors import ChatevalError

# qdrant-client's version check runs in a background thread and warns (outside any error
# handling) when nothing answers; our own first request already reports that in one line.
_CLIENT_OPTIONS = {"timeout": 10, "check_compatibility": False}


class VectorStoreError(ChatevalError):
    exit_code = 2


def _point_id(key: str) -> str:
    # Qdrant ids must be integers or UUIDs; derive a stable UUID from our string id.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, key))


def check_server(url: str) -> None:
    """Fail fast, in one line, when no Qdrant server answers at ``url`` (before any work)."""
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(url=url, **_CLIENT_OPTIONS)
        client.get_collections()
        client.close()
    except Exception as e:
        raise VectorStoreError(f"cannot reach Qdrant at {url}: {type(e).__name__}: "
                               f"{str(e).splitlines()[0][:160] if str(e) else 'no answer'}") from None


class VectorStore:
    """Cosine search over string-keyed vectors. ``location``: ':memory:', a folder path, or
    an http(s):// URL of a Qdrant server (the same code path)."""

    def __init__(self, dim: int, *, location: str = ":memory:", collection: str | None = None) -> None:
        from qdrant_client import QdrantClient, models

        self._models = models
        self.dim, self.location = dim, location
        self.collection = collection or f"chateval-{uuid.uuid4().hex[:12]}"
        if location.startswith(("http://", "https://")):
            self.client = QdrantClient(url=location, **_CLIENT_OPTIONS)
        elif location == ":memory:":
            self.client = QdrantClient(location=":memory:")
        else:
            self.client = QdrantClient(path=location)
        try:
            if not self.client.collection_exists(self.collection):
                self.client.create_collection(
                    self.collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
                )
        except Exception as e:
            raise VectorStoreError(f"cannot reach Qdrant at {location}: {type(e).__name__}: "
                                   f"{str(e).splitlines()[0][:160] if str(e) else 'no answer'}") from None

    def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict[str, Any]] | None = None) -> None:
        if not ids:
            return
        payloads = payloads or [{} for _ in ids]
        points = [
            self._models.PointStruct(id=_point_id(i), vector=v.tolist(), payload={**p, "_key": i})
            for i, v, p in zip(ids, vectors, payloads)
        ]
        self.client.upsert(self.collection, points=points, wait=True)

    def search(self, vector: np.ndarray, k: int, *, only: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """Best-first (id, cosine similarity); ``only`` restricts the candidates."""
        query_filter = None
        if only is not None:
            keys = list(only)
            if not keys:
                return []
            query_filter = self._models.Filter(must=[self._models.HasIdCondition(has_id=[_point_id(x) for x in keys])])
        res = self.client.query_points(self.collection, query=vector.tolist(), limit=max(1, k),
                                       query_filter=query_filter, with_payload=["_key"])
        return [(p.payload["_key"], float(p.score)) for p in res.points]

    def vectors(self, ids: list[str]) -> np.ndarray:
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        got = self.client.retrieve(self.collection, ids=[_point_id(i) for i in ids], with_vectors=True,
                                   with_payload=["_key"])
        by_key = {p.payload["_key"]: p.vector for p in got}
        return np.asarray([by_key[i] for i in ids], dtype=np.float32)

    def delete(self, ids: list[str]) -> None:
        if ids:
            self.client.delete(self.collection, points_selector=self._models.PointIdsList(points=[_point_id(i) for i in ids]))

    def count(self) -> int:
        return self.client.count(self.collection, exact=True).count

    def reset(self) -> None:
        self.client.delete_collection(self.collection)
        self.client.create_collection(
            self.collection, vectors_config=self._models.VectorParams(size=self.dim, distance=self._models.Distance.COSINE)
        )

    def close(self) -> None:
        self.client.close()
