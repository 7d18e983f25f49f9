"""Remote embeddings in OpenAI's format (``POST /embeddings``): OpenAI itself, or any server
that speaks it (vLLM, TEI, Ollama's OpenAI-compatible endpoint, LM Studio). Every batch goes
through the model layer: its concurrency limit (shared with the chat calls), retry policy and
metering (step ``embed``, input tokens, cost where the price is known)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
from typing import Any

from ..util.errors import ConfigError
from .layer import ModelLayer
from .providers import openai_sdk
from .retry import BadResponse
from .spec import ModelSpec
from .usage import CallLog
from .usage_check import max_request_tokens


class EmbeddingClient:
    def __init__(
        self, spec: str, *, layer: ModelLayer | None = None, base_url: str | None = None, batch_size: int = 128
    ) -> None:
        provider, _, model = spec.partition("/")
        if provider == "openai":
            key = os.environ.get("OPENAI_API_KEY")
            if not key:
                raise ConfigError(f"embedding model '{spec}' needs the OPENAI_API_KEY environment variable")
            url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        elif provider == "openai-compatible":
            key = os.environ.get("CHATEVAL_API_KEY") or None
            url = base_url or os.environ.get("CHATEVAL_BASE_URL")
            if not url:
                raise ConfigError(
                    f"embedding model '{spec}' needs --embedder-base-url (or --base-url, "
                    "CHATEVAL_BASE_URL), e.g. http://localhost:8080/v1"
                )
        else:
            raise ConfigError(f"embedding spec '{spec}': expected openai/<model> or openai-compatible/<model>")
        if batch_size < 1:
            raise ConfigError(f"embedding batch size {batch_size}: expected 1 or more")
        url = url.split(",")[0].strip() if url else None  # a chat pool's first endpoint
        self.label, self.model, self.url, self.batch_size = spec, model, url, batch_size
        # A private layer when none is shared: the limit, retries and metering still apply.
        self.layer = layer or ModelLayer(ModelSpec.parse("offline"))
        self.log = CallLog()  # these calls alone (the layer's totals mix them with chat calls)
        self._client = openai_sdk(key, url, self.layer.retry)

    @property
    def cache_id(self) -> str:
        """Model and endpoint, for cache keys: the same name served elsewhere is another model.
        The URL is hashed so a credential in it never reaches the cache."""
        return f"{self.label}@{hashlib.sha256((self.url or '').encode()).hexdigest()[:16]}"

    async def _batch(self, texts: list[str]) -> Any:
        from openai.types import CreateEmbeddingResponse

        reply = await self._client.post(
            "/embeddings",
            cast_to=CreateEmbeddingResponse,
            body={"model": self.model, "input": texts, "encoding_format": "float"},
        )
        data = getattr(reply, "data", None)
        if not isinstance(reply, CreateEmbeddingResponse) or not data or len(data) != len(texts):
            raise BadResponse(f"the reply is not {len(texts)} embedding(s)")
        usage = getattr(reply, "usage", None)
        tokens = getattr(usage, "prompt_tokens", 0) if usage is not None else 0
        limit = max_request_tokens(texts)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= limit:
            # It would be metered and priced: negative or absurd usage is a bad response (usage_check)
            raise BadResponse(
                f"the endpoint reported impossible usage: prompt_tokens={tokens!r} for a request of at most {limit}"
            )
        return reply

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order; batches run concurrently under the layer's limit."""

        def usage(reply: Any) -> int:
            return reply.usage.prompt_tokens if getattr(reply, "usage", None) else 0

        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        replies = await asyncio.gather(
            *(
                self.layer.call(
                    functools.partial(self._batch, b),
                    model=self.label,
                    step="embed",
                    price_model=self.model,
                    tokens=usage,
                    log=self.log,
                )
                for b in batches
            )
        )
        return [d.embedding for reply in replies for d in sorted(reply.data, key=lambda d: d.index)]

    async def close(self) -> None:
        await self._client.close()
