"""Model providers: how the ``provider`` of a spec (``provider/<model>``) becomes a backend.

Built in: ``openai``, ``openai-compatible``, ``azure``, ``gemini`` (OpenAI's wire format, sent by
the lean ``OpenAIBackend``), ``anthropic`` (the anthropic SDK, with prompt-cache breakpoints) and
``ollama`` (autogen-ext's client), both in the ``providers`` extra. Every backend sits inside the one model layer, so the cache, retries,
concurrency limit, metering and structured-output fallback are the same for all. Register
another with ``@provider("name")`` (in a ``--plugin`` file, or as a ``chateval.providers`` entry point of
an installed package): a function ``(spec, url, params, retry, structured) -> Backend``; a
comma-separated base URL becomes a pool of such backends. The registry itself is in ``spec``
(a spec names a registered provider); ``build_backend`` lives here, beside the built-in builders,
so the base types (``backends``) import nothing above them."""

from __future__ import annotations

import os
from typing import Any, cast
from urllib.parse import urlsplit

from autogen_core.models import ModelInfo

from ..util import secrets
from ..util.errors import ConfigError
from ..util.http_limits import NO_COMPRESSION, size_cap_hook
from .backends import AutogenBackend, Backend, GenParams, OfflineBackend, Structured, split_query, without_credentials
from .pool import Endpoint, EndpointPool, endpoint_name
from .retry import RetryPolicy
from .spec import PROVIDERS, Builder, ModelSpec, Provider, provider  # noqa: F401  (provider: the public decorator)

GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
OLLAMA_URL = "http://localhost:11434"
AZURE_API_VERSION = "2024-10-21"  # the latest GA version of the Azure OpenAI data-plane API at writing


def build_backend(spec: ModelSpec, params: GenParams, retry: RetryPolicy, structured: Structured = "auto") -> Backend:
    """The backend for ``spec`` (its provider's builder; several base URLs make a pool).
    ``structured``: "on"/"off" force JSON-schema requests on or off; "auto" asks for them wherever
    the model may take them, and the layer stops asking an endpoint that rejects them."""
    if spec.is_offline:
        return OfflineBackend()
    build = PROVIDERS.get(spec.provider).build
    urls = [u.strip() for u in spec.base_url.split(",")] if spec.base_url else [None]
    if len(urls) == 1:
        return build(spec, urls[0], params, retry, structured)
    return EndpointPool([Endpoint(endpoint_name(u), build(spec, u, params, retry, structured)) for u in urls if u])


def info(structured: Structured, auto: bool, **extra: Any) -> ModelInfo:
    """Model info for names autogen's tables do not know; ``auto``: whether "auto" asks for schemas."""
    base: ModelInfo = {
        "vision": False,
        "function_calling": False,
        "json_output": True,
        "family": "unknown",
        "structured_output": auto if structured == "auto" else structured == "on",
        "multiple_system_messages": True,
    }
    # ``extra`` names further ModelInfo keys (family=..., vision=...), which a TypedDict cannot take as **kwargs.
    return cast(ModelInfo, {**base, **extra})


# Every API key a spec may read: their values are scrubbed from everything written or printed.
KEY_ENV_VARS = secrets.KEY_ENV_VARS


def env_secrets() -> list[str]:
    """The key variables' values (registered with chateval.util.secrets as they are read)."""
    return secrets.register_env(KEY_ENV_VARS)


def key(spec: ModelSpec, env: str, required: bool = True) -> str | None:
    if spec.api_key_env:  # the spec names its own variable: it must be set
        env, required = spec.api_key_env, True
    value = os.environ.get(env)
    secrets.register(value)
    if not value and required:
        raise ConfigError(f"model '{spec.label}' needs the {env} environment variable")
    return value or None


def needs_extra(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise ConfigError(
            f"models of this provider need the extra: pip install 'chateval[providers]' "
            f"(missing module '{module.split('.')[0]}')"
        ) from None


# --- OpenAI's wire format --------------------------------------------------------------------
def _openai(spec: ModelSpec, client: Any, model_info: ModelInfo, cache_key_param: bool = False) -> Backend:
    from .openai_backend import OpenAIBackend

    return OpenAIBackend(client, spec.model, model_info, cache_key_param=cache_key_param)


def capped_http(sdk: Any, retry: RetryPolicy) -> dict[str, Any]:
    """An SDK client's arguments for the size cap (``sdk``: the openai or anthropic module): its
    own default HTTP client with the cap's response hook, asking for uncompressed replies so the
    bytes counted are the bytes kept."""
    hook = size_cap_hook(retry.max_response_bytes)
    return {
        "default_headers": NO_COMPRESSION,
        "http_client": sdk.DefaultAsyncHttpxClient(timeout=retry.timeout_s, event_hooks={"response": [hook]}),
    }


def openai_sdk(api_key: str | None, url: str | None, retry: RetryPolicy) -> Any:
    """An ``AsyncOpenAI`` client for one endpoint, retrying nothing itself."""
    import openai

    secrets.register(api_key)
    secrets.register_url(url)
    if url and api_key:
        # httpx turns user:password in a URL into Basic auth, which replaces the API key's Bearer
        # header: with a key configured, the key is what authenticates, so the URL goes without them.
        url = without_credentials(url)
    url, query = split_query(url)
    # The layer retries (honouring Retry-After) and meters each attempt: the SDK must not.
    return openai.AsyncOpenAI(
        api_key=api_key or "not-needed",
        base_url=url,
        default_query=query,
        max_retries=0,
        timeout=retry.timeout_s,
        **capped_http(openai, retry),
    )


@provider("openai", url_env=("OPENAI_BASE_URL",))
def _build_openai(spec, url, params, retry, structured) -> Backend:
    from autogen_ext.models.openai._model_info import get_info

    try:
        known: ModelInfo = get_info(spec.model)
    except (KeyError, ValueError):
        known = info("auto", True)
    model_info = {
        **known,
        "structured_output": known.get("structured_output", True) if structured == "auto" else structured == "on",
    }
    return _openai(
        spec,
        openai_sdk(key(spec, "OPENAI_API_KEY"), url, retry),
        model_info,  # type: ignore[arg-type]
        cache_key_param=True,
    )


@provider("openai-compatible", url_env=("CHATEVAL_BASE_URL",), needs_url=True)
def _build_compatible(spec, url, params, retry, structured) -> Backend:
    # vLLM, SGLang, llama.cpp, Ollama and LM Studio accept json_schema; others answer 400 once.
    return _openai(spec, openai_sdk(key(spec, "CHATEVAL_API_KEY", required=False), url, retry), info(structured, True))


@provider("gemini", default_url=GEMINI_URL)
def _build_gemini(spec, url, params, retry, structured) -> Backend:
    # Gemini's OpenAI-compatible endpoint takes response_format json_schema.
    return _openai(spec, openai_sdk(key(spec, "GEMINI_API_KEY"), url, retry), info(structured, True))


@provider("azure", url_env=("AZURE_OPENAI_ENDPOINT",), needs_url=True)
def _build_azure(spec, url, params, retry, structured) -> Backend:
    import openai

    version = os.environ.get("OPENAI_API_VERSION") or os.environ.get("AZURE_OPENAI_API_VERSION") or AZURE_API_VERSION
    secrets.register_url(url)
    url, query = split_query(url)
    # The SDK routes /chat/completions to /openai/deployments/{model}/...: the spec's model is the deployment.
    client = openai.AsyncAzureOpenAI(
        azure_endpoint=url,
        api_key=key(spec, "AZURE_OPENAI_API_KEY"),
        api_version=version,
        default_query=query,
        max_retries=0,
        timeout=retry.timeout_s,
        **capped_http(openai, retry),
    )
    return _openai(spec, client, info(structured, True))


# --- autogen-ext's clients ---------------------------------------------------------------------
@provider("anthropic", url_env=("ANTHROPIC_BASE_URL",))
def _build_anthropic(spec, url, params, retry, structured) -> Backend:
    needs_extra("anthropic")
    import anthropic

    from .anthropic_backend import AnthropicBackend

    kw: dict[str, Any] = {
        "api_key": key(spec, "ANTHROPIC_API_KEY"),
        "max_retries": 0,
        "timeout": retry.timeout_s,
        **capped_http(anthropic, retry),
    }
    if url:
        secrets.register_url(url)
        kw["base_url"], query = split_query(url)
        if query:  # appended to the base URL's text by the SDK otherwise
            kw["default_query"] = query
    # No JSON-schema response format in the Messages API: schemas are described in the prompt.
    return AnthropicBackend(anthropic.AsyncAnthropic(**kw), spec.model, info("off", False, family="claude"))


@provider("ollama", url_env=("OLLAMA_HOST",), default_url=OLLAMA_URL)
def _build_ollama(spec, url, params, retry, structured) -> Backend:
    needs_extra("autogen_ext.models.ollama")
    from autogen_ext.models.ollama import OllamaChatCompletionClient

    secrets.register_url(url)
    parts = urlsplit(url or "")
    if parts.query or "@" in parts.netloc:
        # The ollama client keeps only scheme, host, port and path: it would drop these silently.
        raise ConfigError(
            f"ollama endpoint '{secrets.redact_url(url)}': the ollama client cannot send a query "
            "string or user:password; put a proxy in front, or use openai-compatible/<model> with "
            "Ollama's /v1 endpoint"
        )

    options: dict[str, Any] = {"temperature": params.temperature}
    if params.max_tokens is not None:
        options["num_predict"] = params.max_tokens
    if params.seed is not None:
        options["seed"] = params.seed
    client = OllamaChatCompletionClient(
        model=spec.model,
        host=url,
        timeout=retry.timeout_s,
        options=options,
        model_info=info(structured, True, family="unknown"),
    )
    # autogen passes only the host to ollama's client: its timeout and the size cap are set here.
    from ollama import AsyncClient

    client._client = AsyncClient(
        host=url,
        timeout=retry.timeout_s,
        headers=NO_COMPRESSION,
        event_hooks={"response": [size_cap_hook(retry.max_response_bytes)]},
    )
    # Ollama's native API takes the JSON schema as `format` (autogen's json_output).
    return AutogenBackend(client, schema_arg="json_output")
