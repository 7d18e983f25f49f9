"""Model spec strings: ``offline`` or ``provider/<model>`` (``openai``, ``openai-compatible``, ``azure``,
``gemini``, ``anthropic``, ``ollama``, or one a plugin registers)."""

from __future__ import annotations

from pydantic import BaseModel

from ..util.errors import ConfigError
# A spec names a registered provider; the providers module builds the backends.
from .providers import PROVIDERS


class ModelSpec(BaseModel):
    provider: str  # "offline" or a registered provider (chateval.models.providers.PROVIDERS)
    model: str
    base_url: str | None = None  # the effective endpoint: given, from the provider's variable, or its default

    @classmethod
    def parse(cls, spec: str, base_url: str | None = None) -> "ModelSpec":
        spec = spec.strip()
        if spec == "offline":
            return cls(provider="offline", model="offline")
        provider, sep, model = spec.partition("/")
        known = ", ".join(["offline", *PROVIDERS])
        if not sep or not model:
            raise ConfigError(f"model spec '{spec}': expected 'provider/<model>' or 'offline' (providers: {known})")
        if provider not in PROVIDERS:
            raise ConfigError(f"model spec '{spec}': unknown provider '{provider}' (known: {known})")
        entry = PROVIDERS.get(provider)
        url = entry.endpoint(base_url)
        if entry.needs_url and not url:
            where = " or ".join(["--base-url", *entry.url_env])
            raise ConfigError(f"model spec '{spec}' needs {where} (e.g. http://localhost:8000/v1)")
        return cls(provider=provider, model=model, base_url=url)

    @property
    def label(self) -> str:
        return "offline" if self.provider == "offline" else f"{self.provider}/{self.model}"

    @property
    def is_offline(self) -> bool:
        return self.provider == "offline"
