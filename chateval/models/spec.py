"""Model spec strings: ``offline`` or ``provider/<model>`` (``openai``, ``openai-compatible``, ``azure``,
``gemini``, ``anthropic``, ``ollama``, or one a plugin registers), and the registry of providers a
spec names. The built-in providers register themselves when ``providers`` is imported, which the
registry does the first time one of them is asked for; so this module imports nothing above the
base types and the import graph has no cycle."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..util.errors import ConfigError
from ..util.registry import Registry, did_you_mean
from .backends import Backend, GenParams, Structured
from .retry import RetryPolicy

Builder = Callable[["ModelSpec", "str | None", GenParams, RetryPolicy, Structured], Backend]


# A bare model name's likely provider (a newcomer's `--model gpt-4o-mini`): by its family's prefix.
_FAMILIES = {
    "gpt-": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "claude": "anthropic",
    "gemini": "gemini",
}


def _bare_hint(spec: str) -> str:
    if not spec or "/" in spec:
        return ""
    provider = next((p for prefix, p in _FAMILIES.items() if spec.lower().startswith(prefix)), None)
    if provider:
        return f"; did you mean '{provider}/{spec}'?"
    return f"; a model on your own server is 'openai-compatible/{spec}' with --base-url URL"


@dataclass(frozen=True)
class Provider:
    build: Builder
    url_env: tuple[str, ...] = ()  # variables naming the endpoint when --base-url is not given
    default_url: str | None = None  # else this (None: the SDK's own default)
    needs_url: bool = False  # no default at all: --base-url or a variable is required

    def endpoint(self, given: str | None) -> str | None:
        """The endpoint calls go to, as config.json records it (redacted there)."""
        return given or next((os.environ[v] for v in self.url_env if os.environ.get(v)), None) or self.default_url

    @property
    def __wrapped__(self) -> Builder:
        """The builder this entry stands for: the same function registered twice is no clash."""
        return self.build


def _as_provider(obj: Any) -> Provider:
    """A ``chateval.providers`` entry point names a Provider or a bare builder function."""
    if isinstance(obj, Provider):
        return obj
    if callable(obj):
        return Provider(obj)
    raise ConfigError(f"a provider entry point must name a builder function, not {type(obj).__name__}")


PROVIDERS: Registry[Provider] = Registry("provider", entry_points="chateval.providers", from_entry_point=_as_provider)


def provider(
    name: str,
    *,
    url_env: tuple[str, ...] = (),
    default_url: str | None = None,
    needs_url: bool = False,
    replace: bool = False,
) -> Callable[[Builder], Builder]:
    """Register a provider's backend builder under ``name`` (usable as ``name/<model>``). A name
    that is taken (a built-in, another plugin) is an error unless ``replace=True``."""
    if "/" in name or not name.strip() or name == "offline":
        raise ConfigError(f"provider name '{name}': expected a name without '/' other than 'offline'")

    def register(fn: Builder) -> Builder:
        PROVIDERS.register(name, replace=replace)(Provider(fn, url_env, default_url, needs_url))
        return fn

    return register


BUILT_IN = ("openai", "openai-compatible", "gemini", "azure", "anthropic", "ollama")
for _name in BUILT_IN:
    PROVIDERS.register_lazy(_name, "chateval.models.providers")


class ModelSpec(BaseModel):
    provider: str  # "offline" or a registered provider (PROVIDERS below)
    model: str
    base_url: str | None = None  # the effective endpoint: given, from the provider's variable, or its default
    # The variable holding the API key, instead of the provider's own (a debater on its own
    # server, with its own key); the value is read when the backend is built, never stored.
    api_key_env: str | None = None

    @classmethod
    def parse(cls, spec: str, base_url: str | None = None, api_key_env: str | None = None) -> ModelSpec:
        spec = spec.strip()
        if spec == "offline":
            return cls(provider="offline", model="offline")
        provider, sep, model = spec.partition("/")
        known = ", ".join(["offline", *PROVIDERS])
        if not sep or not model:
            raise ConfigError(
                f"model spec '{spec}': expected 'provider/<model>' or 'offline'{_bare_hint(spec)} (providers: {known})"
            )
        if provider not in PROVIDERS:
            hint = did_you_mean(provider, ["offline", *PROVIDERS])
            raise ConfigError(f"model spec '{spec}': unknown provider '{provider}'{hint} (known: {known})")
        entry = PROVIDERS.get(provider)
        url = entry.endpoint(base_url)
        if entry.needs_url and not url:
            where = " or ".join(["--base-url", *entry.url_env])
            raise ConfigError(f"model spec '{spec}' needs {where} (e.g. http://localhost:8000/v1)")
        return cls(provider=provider, model=model, base_url=url, api_key_env=api_key_env)

    @property
    def label(self) -> str:
        return "offline" if self.provider == "offline" else f"{self.provider}/{self.model}"

    @property
    def is_offline(self) -> bool:
        return self.provider == "offline"
