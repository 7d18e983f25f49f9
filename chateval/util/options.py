"""One place for a setting's default, help and command-line spelling: ``opt()`` describes a
pydantic field; the CLI package builds its options from those fields, so a config model and its
command line cannot drift. ``merge_layers`` is the one CLI-over-file-over-default merge."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError
from .yamlfiles import load_mapping

M = TypeVar("M", bound=BaseModel)


def opt(
    default: Any = ...,
    help: str = "",
    *,
    flags: list[str] | None = None,
    metavar: str | None = None,
    repeat: bool = False,
    cli: bool = True,
    hidden: bool = False,
    **constraints: Any,
) -> Any:
    """A settings field. ``flags``: the option strings (default ``--field-name``); ``repeat``: a
    list given by repeating the flag instead of comma-separated; ``cli=False``: API/file only;
    ``hidden``: accepted on the command line (to explain why it does not apply) but not listed."""
    extra: dict[str, Any] = {"flags": flags, "metavar": metavar, "repeat": repeat, "cli": cli, "hidden": hidden}
    if default in (list, dict) or (callable(default) and not isinstance(default, type)):
        return Field(default_factory=default, description=help, json_schema_extra=extra, **constraints)
    return Field(default, description=help, json_schema_extra=extra, **constraints)


def flag_of(model: type[BaseModel], field: str) -> str:
    """How the command line spells a field (for error messages)."""
    extra = model.model_fields[field].json_schema_extra if field in model.model_fields else None
    # opt() stores the flags as a list of strings (or None)
    flags = cast(list[str] | None, extra.get("flags")) if isinstance(extra, dict) else None
    return flags[0] if flags else "--" + field.replace("_", "-")


def validation_message(model: type[BaseModel], e: ValidationError, source: str | None = None) -> str:
    where = f"{source}: " if source else ""
    missing = [".".join(str(x) for x in m["loc"]) for m in e.errors() if m["type"] == "missing"]
    if len(missing) > 1:  # every required setting at once, not one per attempt
        named = [
            f"'{f}'" + (f" ({flag_of(model, f)})" if not source and f in model.model_fields else "") for f in missing
        ]
        return f"{where}settings {', '.join(named)}: required"
    err = e.errors()[0]
    loc = [str(x) for x in err["loc"]]
    field = loc[0] if loc else "?"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "missing":
        msg = "required"
    if err["type"] == "extra_forbidden":
        msg = "unknown setting"
    flag = f" ({flag_of(model, field)})" if not source and field in model.model_fields else ""
    return f"{where}setting '{'.'.join(loc)}'{flag}: {msg[0].lower() + msg[1:] if msg else msg}"


def merge_layers(model: type[M], *layers: dict[str, Any], source: str | None = None) -> M:
    """Later layers win; ``None`` in a layer means 'not given'. Errors name the field."""
    data: dict[str, Any] = {}
    for layer in layers:
        data.update({k: v for k, v in layer.items() if v is not None})
    for k, v in data.items():  # NaN/inf would be written into config.json as invalid JSON
        if isinstance(v, float) and not math.isfinite(v):
            flag = f" ({flag_of(model, k)})" if k in model.model_fields else ""
            raise ConfigError(f"setting '{k}'{flag}: must be a finite number")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(validation_message(model, e, source)) from None


def load_config_file(model: type[BaseModel], path: str | Path) -> dict[str, Any]:
    """A YAML/JSON settings file for ``model``: keys are field names (``-`` or ``_``)."""
    data = {str(k).replace("-", "_"): v for k, v in load_mapping(Path(path), "config").items()}
    unknown = sorted(set(data) - set(model.model_fields))
    if unknown:
        raise ConfigError(f"{path}: unknown setting '{unknown[0]}'")
    return data


def check_base_url(value: str | list[str] | None) -> str | None:
    """One http(s) URL with a host, or several separated by commas or given as a list (a pool of
    endpoints); the result is the comma-separated form."""
    from urllib.parse import urlsplit

    from .secrets import redact_url

    if value is None:
        return None
    if isinstance(value, list):
        value = ",".join(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a URL, got {type(value).__name__}")
    for url in (u.strip() for u in value.split(",")):
        try:
            parts = urlsplit(url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
        except ValueError:  # a port that is not a number, a malformed IPv6 host
            ok = False
        if not ok:  # the URL quoted without its user:password or query values
            raise ValueError(f"'{(redact_url(url) or '')[:80]}' is not an http(s) URL (e.g. http://localhost:8000/v1)")
    return value


def check_names(value: list[str] | None) -> list[str] | None:
    """A list of names, when given (None: not given): at least one, none blank. An empty list
    would otherwise fall back to the defaults (or to everything) unseen."""
    if value is None:
        return None
    if not value:
        raise ValueError("give at least one name")
    if any(not str(n).strip() for n in value):
        raise ValueError("an empty name")
    return value


def check_dir(value: str | None) -> str | None:
    """A folder chateval may create and write (a cache); a file in the way or no permission is an error."""
    import os

    if value is None:
        return None
    path = Path(value)
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ValueError(f"{probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{probe} is not writable")
    return value
