"""Model spec strings: ``openai/<model>``, ``openai-compatible/<model>`` and ``offline``."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel

from ..errors import ConfigError

Provider = Literal["openai", "openai-compatible", "offline"]


class ModelSpec(BaseModel):
    provider: Provider
    model: str
    base_url: str | None = None

    @classmethod
    def parse(cls, spec: str, base_url: str | None = None) -> "ModelSpec":
        spec = spec.strip()
        if spec == "offline":
            return cls(provider="offline", model="offline")
        provider, sep, model = spec.partition("/")
        if not sep or not model:
            raise ConfigError(
                f"model spec '{spec}': expected 'openai/<model>', 'openai-compatible/<model>' or 'offline'"
            )
        if provider == "openai":
            # The openai SDK reads OPENAI_BASE_URL itself; naming it here records where calls went.
            return cls(provider="openai", model=model, base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None)
        if provider == "openai-compatible":
            url = base_url or os.environ.get("CHATEVAL_BASE_URL")
            if not url:
                raise ConfigError(
                    f"model spec '{spec}' needs --base-url or CHATEVAL_BASE_URL (e.g. http://localhost:8000/v1)"
                )
            return cls(provider="openai-compatible", model=model, base_url=url)
        raise ConfigError(
            f"model spec '{spec}': unknown provider '{provider}' (known: openai, openai-compatible, offline)"
        )

    @property
    def label(self) -> str:
        return "offline" if self.provider == "offline" else f"{self.provider}/{self.model}"

    @property
    def is_offline(self) -> bool:
        return self.provider == "offline"
