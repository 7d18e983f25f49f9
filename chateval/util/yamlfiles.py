"""Reading the YAML data files (personas, presets) with one-line errors naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import ConfigError


def load_mapping(path: Path, what: str) -> dict[str, Any]:
    import yaml  # on first use: keeps `chateval --help` quick

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: invalid YAML ({getattr(e, 'problem', None) or 'syntax error'})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read {what} ({e})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a {what} must be a YAML mapping")
    return data
