"""A debater's own endpoint: the model-spec fields a persona file, a preset's ``debater_models``
or ``--debater-model NAME.FIELD=VALUE`` may give one debater, so a panel can mix providers and
servers (PoLL: a panel of diverse models). Here, at the bottom of the import graph, because the
settings (evaluation), the personas (debate) and the command line all read it."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .errors import ConfigError
from .options import check_base_url

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FIELDS = ("model", "base_url", "api_key_env", "price", "max_connections")


class EndpointFields(BaseModel):
    """One debater's model spec. Unset fields fall back to the panel's (``base_url`` only when
    the provider is the panel's: another provider uses its own default or variable)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # model spec override for this debater (provider/<model> or offline)
    base_url: str | None = None  # its endpoint (comma-separated: a pool)
    api_key_env: str | None = None  # the variable holding its API key (instead of the provider's)
    price: tuple[float, float] | None = None  # USD per million input/output tokens of its model
    max_connections: int | None = Field(None, ge=1)  # its own limit of calls in flight

    _url = field_validator("base_url", mode="before")(check_base_url)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not ENV_NAME.match(v):
            raise ValueError(f"'{v}' is not an environment variable name")
        return v

    @field_validator("price", mode="before")
    @classmethod
    def _price(cls, v: Any) -> Any:
        if isinstance(v, str):  # "IN,OUT" as on the command line
            v = [p.strip() for p in v.split(",")]
        if v is not None and (len(v) != 2 or any(float(p) < 0 for p in v)):
            raise ValueError("expected two non-negative numbers: USD per million input, output tokens")
        return v

    def endpoint(self) -> EndpointFields | None:
        """These fields alone (without a persona's other fields), or None when none is set."""
        data = EndpointFields.model_validate(self.model_dump(include=set(FIELDS)))
        return data if data.model_dump(exclude_none=True) else None


def parse_debater_models(items: list[str]) -> dict[str, dict[str, Any]]:
    """``--debater-model`` values: ``NAME=SPEC`` (the debater's model) or ``NAME.FIELD=VALUE``
    (``base_url``, ``api_key_env``, ``price`` as IN,OUT, ``max_connections``), merged per name."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        name, dot, field = key.strip().partition(".")
        field = field.strip().replace("-", "_") if dot else "model"
        if not sep or not name or not value.strip():
            raise ConfigError(
                f"--debater-model '{item}': expected NAME=PROVIDER/MODEL or NAME.FIELD=VALUE "
                f"(fields: {', '.join(FIELDS)})"
            )
        if field not in FIELDS:
            raise ConfigError(f"--debater-model '{item}': unknown field '{field}' (fields: {', '.join(FIELDS)})")
        out.setdefault(name.strip(), {})[field] = value.strip()
    return out
