"""Evaluation settings: one pydantic model, merged CLI-over-preset-over-default."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError
from .paths import search_path
from .yamlfiles import load_mapping

# The order in which personas are added when only --agents is given (ChatEval's five roles).
DEFAULT_PERSONAS = ["general_public", "critic", "news_author", "psychologist", "scientist"]


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: Literal["pairwise", "score", "correctness"] = "pairwise"
    strategy: str = "one_by_one"
    personas: list[str] | None = None
    agents: int | None = Field(default=None, ge=1)
    turns: int = Field(default=2, ge=1)
    aggregate: Literal["vote", "mean"] | None = None  # None: vote for comparisons, mean for ratings
    swap: bool = False
    keep_raw_history: bool = False
    structured: Literal["auto", "on", "off"] = "auto"
    aspects: list[str] | None = None  # score task: default aspects for samples that name none

    model: str = "offline"
    base_url: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = 1024
    seed: int | None = None

    max_connections: int = Field(default=8, ge=1)
    max_retries: int = Field(default=4, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    retry_base_delay_s: float = Field(default=1.0, ge=0)  # first backoff delay; doubles each retry
    cache: bool = True
    cache_dir: str | None = None
    persona_dirs: list[str] = Field(default_factory=list)
    prompt_dirs: list[str] = Field(default_factory=list)
    plugins: list[str] = Field(default_factory=list)

    @classmethod
    def merged(cls, *layers: dict[str, Any]) -> "EvalConfig":
        """Later layers win; ``None`` in a layer means 'not given'."""
        data: dict[str, Any] = {}
        for layer in layers:
            data.update({k: v for k, v in layer.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            raise ConfigError(f"setting '{field}': {err['msg'].lower()}") from None

    # Settings that change verdicts; the run's config hash covers these (plus persona texts
    # and template sources), so --resume refuses a run made with different ones.
    JUDGING_FIELDS: ClassVar[tuple[str, ...]] = (
        "task", "strategy", "turns", "aggregate", "swap", "keep_raw_history", "structured", "aspects",
        "model", "base_url", "temperature", "max_tokens", "seed",
    )

    def judging_payload(self) -> dict[str, Any]:
        data = self.model_dump()
        out = {k: data[k] for k in self.JUDGING_FIELDS}
        out["base_url"] = redact_url(out["base_url"])
        return out

    def public(self) -> dict[str, Any]:
        """The config as written to config.json: no secrets (keys live only in the environment)."""
        data = self.model_dump()
        data["base_url"] = redact_url(data["base_url"])
        return data


def redact_url(url: str | None) -> str | None:
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))
    return url


def find_preset(name: str, extra_dirs: list[str] | None = None) -> Path:
    p = Path(name)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.is_file():
            raise ConfigError(f"{p}: preset file not found")
        return p
    for d in search_path("strategies", extra_dirs):
        for ext in (".yaml", ".yml"):
            cand = d / f"{name}{ext}"
            if cand.is_file():
                return cand
    known = sorted({f.stem for d in search_path("strategies", extra_dirs) if d.is_dir() for f in d.glob("*.y*ml")})
    raise ConfigError(f"unknown preset '{name}' (known: {', '.join(known)})")


def load_preset(path: Path) -> dict[str, Any]:
    data = load_mapping(path, "preset")
    unknown = sorted(set(data) - set(EvalConfig.model_fields))
    if unknown:
        raise ConfigError(f"{path}: unknown setting '{unknown[0]}'")
    try:
        EvalConfig.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"{path}: field '{'.'.join(map(str, err['loc']))}': {err['msg'].lower()}") from None
    return data


def config_hash(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
