"""Backends do one model call each; the layer around them adds cache, limits and retries."""

from __future__ import annotations

import functools
import json
import os
from abc import ABC, abstractmethod
from typing import Any, Literal, Sequence
from urllib.parse import urlsplit, urlunsplit

from autogen_core.models import ChatCompletionClient, LLMMessage, ModelInfo
from pydantic import BaseModel

from ..errors import ConfigError, ModelCallError
from .offline import run_offline_step
from .retry import BadResponse, RetryPolicy
from .spec import ModelSpec
from .usage import approx_tokens


class GenParams(BaseModel):
    temperature: float = 0.0
    max_tokens: int | None = 1024
    seed: int | None = None


class Completion(BaseModel):
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_approx: bool = False
    finish_reason: str = "stop"
    cached: bool = False  # set by the layer on a cache hit; never stored in the cache


class StepContext(BaseModel):
    """What a call is for, in typed form. Real models ignore it; the offline model reads it."""

    name: str
    inputs: Any = None


class Backend(ABC):
    model_info: ModelInfo
    # True when ``response_format`` goes to a server (the layer then sends it only while the
    # endpoint accepts it); False for backends that read the output type locally (offline).
    sends_schema: bool = True

    @abstractmethod
    async def complete(
        self,
        messages: Sequence[LLMMessage],
        *,
        step: StepContext | None,
        response_format: type[BaseModel] | None,
        params: GenParams,
    ) -> Completion: ...

    async def close(self) -> None:  # pragma: no cover - trivial
        return None


@functools.lru_cache(maxsize=256)
def json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema, built once (pydantic rebuilds it on every call, at a cost per request)."""
    return schema.model_json_schema()


def response_format_arg(schema: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": json_schema(schema), "strict": False},
    }


class AutogenBackend(Backend):
    """Any autogen ``ChatCompletionClient``: the OpenAI client for real endpoints, the replay
    client in tests. A ``response_format`` given is requested as a JSON-schema response format
    (the layer decides when); the reply text is validated by the caller so a bad reply is kept."""

    def __init__(self, client: ChatCompletionClient) -> None:
        self.client = client
        self.model_info = client.model_info

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        extra: dict[str, Any] = {}
        if response_format is not None:
            extra["response_format"] = response_format_arg(response_format)
        try:
            result = await self.client.create(list(messages), extra_create_args=extra)
        except (AttributeError, TypeError, IndexError) as exc:
            # A 200 reply that is not a chat completion: openai hands a non-JSON body (a proxy's
            # HTML page) back as a str, and JSON without choices leaves autogen indexing None or [].
            raise BadResponse(f"the reply is not a chat completion ({type(exc).__name__}: {exc})") from None
        if not isinstance(result.content, str):
            raise BadResponse("the model returned a tool call instead of text")
        usage = result.usage
        return Completion(
            text=result.content,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            finish_reason=str(result.finish_reason),
        )

    async def close(self) -> None:
        await self.client.close()


class OfflineBackend(Backend):
    """Deterministic heuristic model: answers each typed step from its inputs, never the prompt."""

    sends_schema = False  # the output type is read here, not sent anywhere
    model_info: ModelInfo = {
        "vision": False,
        "function_calling": False,
        "json_output": True,
        "family": "offline",
        # Debate verdicts come back as text lines, so offline transcripts read like real ones;
        # typed steps still get JSON because they always pass their schema.
        "structured_output": False,
        "multiple_system_messages": True,
    }

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        if step is None:
            raise ModelCallError("the offline model answers only typed steps, and this call named none")
        out = run_offline_step(step.name, step.inputs, response_format)
        text = out.model_dump_json() if isinstance(out, BaseModel) else str(out)
        prompt_chars = sum(len(m.content) if isinstance(m.content, str) else 0 for m in messages)
        return Completion(
            text=text,
            prompt_tokens=approx_tokens("x" * prompt_chars),
            completion_tokens=approx_tokens(text),
            tokens_approx=True,
        )


_DEFAULT_INFO: ModelInfo = {
    "vision": False,
    "function_calling": False,
    "json_output": True,
    "family": "unknown",
    "structured_output": False,
    "multiple_system_messages": True,
}


Structured = Literal["auto", "on", "off"]


def build_backend(
    spec: ModelSpec,
    params: GenParams,
    retry: RetryPolicy,
    structured: Structured = "auto",
) -> Backend:
    """The backend for ``spec``. ``structured``: "on"/"off" force JSON-schema requests on or off;
    "auto" asks for them wherever the model may support them (OpenAI models by autogen's table,
    every OpenAI-compatible server), and the layer stops asking an endpoint that rejects them."""
    if spec.is_offline:
        return OfflineBackend()
    import openai

    from .openai_backend import OpenAIBackend

    if spec.provider == "openai":
        api_key = os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise ConfigError(f"model '{spec.label}' needs the OPENAI_API_KEY environment variable")
        info = _known_openai_info(spec.model)
    else:
        api_key = os.environ.get("CHATEVAL_API_KEY") or "not-needed"
        # vLLM, SGLang, llama.cpp, Ollama and LM Studio accept json_schema; others answer 400 once.
        info = {**_DEFAULT_INFO, "structured_output": True}  # type: ignore[assignment]
    if structured != "auto":
        info = {**info, "structured_output": structured == "on"}  # type: ignore[assignment]

    def client(url: str | None) -> OpenAIBackend:
        if url and api_key != "not-needed":
            # httpx turns user:password in a URL into Basic auth, which replaces the API key's Bearer
            # header: with a key configured, the key is what authenticates, so the URL goes without them.
            url = _without_credentials(url)
        # The layer retries (honouring Retry-After) and meters each attempt: the SDK must not.
        sdk = openai.AsyncOpenAI(api_key=api_key, base_url=url, max_retries=0, timeout=retry.timeout_s)
        return OpenAIBackend(sdk, spec.model, info)

    urls = [u.strip() for u in spec.base_url.split(",")] if spec.base_url else [None]
    if len(urls) == 1:
        return client(urls[0])
    from .pool import Endpoint, EndpointPool, endpoint_name

    return EndpointPool([Endpoint(endpoint_name(u), client(u)) for u in urls if u])


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _known_openai_info(model: str) -> ModelInfo:
    from autogen_ext.models.openai._model_info import get_info

    try:
        return get_info(model)
    except (KeyError, ValueError):
        return {**_DEFAULT_INFO, "family": "unknown", "structured_output": True}  # type: ignore[return-value]


def parse_json_reply(text: str) -> Any:
    """JSON from a reply that may wrap it in a code fence or add prose around it."""
    s = text.strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[1] if "\n" in s else ""
        s = s.rsplit("```", 1)[0]
    try:
        return json.loads(s)
    except ValueError:
        start, end = s.find("{"), s.rfind("}")
        if start != -1 and end > start:
            return json.loads(s[start : end + 1])
        raise
