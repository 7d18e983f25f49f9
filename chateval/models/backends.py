"""Backends do one model call each; the layer around them adds cache, limits and retries."""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from autogen_core.models import ChatCompletionClient, LLMMessage, ModelInfo
from pydantic import BaseModel

from ..util.errors import ModelCallError
from .offline import run_offline_step
from .retry import BadResponse
from .usage import approx_tokens, reported


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
    cache_read_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of prompt_tokens, written to it (Anthropic reports these)


class PromptPrefix(BaseModel):
    """The part of a call's first (system) message that every call of one sample repeats
    byte for byte (the task and its data, before any persona). Backends turn it into the
    provider's cache hint: an Anthropic ``cache_control`` breakpoint after ``chars``
    characters, an OpenAI ``prompt_cache_key``. It never changes what the model is asked."""

    chars: int  # length of the shared part at the start of the first message's content
    key: str  # stable per sample and shared text: routes a sample's calls to the same cache


class StepContext(BaseModel):
    """What a call is for, in typed form. Real models ignore ``inputs`` (the offline model reads
    them); ``prefix`` is a provider prompt-cache hint."""

    name: str
    inputs: Any = None
    prefix: PromptPrefix | None = None


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
    """Any autogen ``ChatCompletionClient``: autogen-ext's Anthropic and Ollama clients, the
    replay client in tests. ``schema_arg`` says how the client takes a JSON schema: OpenAI's
    ``response_format`` (extra create args), autogen's ``json_output`` (Ollama's ``format``), or
    not at all (the layer then relies on the schema the prompt describes). The reply text is
    validated by the caller so a bad reply is kept."""

    def __init__(
        self,
        client: ChatCompletionClient,
        schema_arg: Literal["response_format", "json_output"] | None = "response_format",
    ) -> None:
        self.client = client
        self.model_info = client.model_info
        self.schema_arg = schema_arg
        self.sends_schema = schema_arg is not None

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        kw: dict[str, Any] = {}
        if response_format is not None and self.schema_arg == "response_format":
            kw["extra_create_args"] = {"response_format": response_format_arg(response_format)}
        elif response_format is not None and self.schema_arg == "json_output":
            kw["json_output"] = response_format
        try:
            result = await self.client.create(list(messages), **kw)
        except (AttributeError, TypeError, IndexError) as exc:
            # A 200 reply that is not a completion: an SDK hands a non-JSON body (a proxy's HTML
            # page) back as a str, and JSON without choices leaves a client indexing None or [].
            raise BadResponse(f"the reply is not a chat completion ({type(exc).__name__}: {exc})") from None
        if not isinstance(result.content, str):
            raise BadResponse("the model returned a tool call instead of text")
        usage = result.usage
        return Completion(
            text=result.content,
            prompt_tokens=reported("prompt_tokens", usage.prompt_tokens),
            completion_tokens=reported("completion_tokens", usage.completion_tokens),
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


Structured = Literal["auto", "on", "off"]


def without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def split_query(url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """A base URL without its query string, and that query as parameters. SDKs append the
    request path to the base URL's text (``/v1?api_key=X`` + ``chat/completions``): a gateway's
    ``?api_key=...`` must travel as query parameters of every request instead."""
    if not url:
        return url, None
    parts = urlsplit(url)
    if not parts.query:
        return url, None
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment)), dict(
        parse_qsl(parts.query, keep_blank_values=True)
    )


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
