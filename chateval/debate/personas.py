"""Personas: one YAML file each (name, role description, optional model and endpoint of its own)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import ConfigDict, ValidationError, field_validator

from ..util.endpoints import EndpointFields
from ..util.errors import ConfigError
from ..util.paths import search_path
from ..util.registry import did_you_mean
from ..util.yamlfiles import load_mapping


class Persona(EndpointFields):
    """A debater: its name and role, and optionally its own model spec (``model``, ``base_url``,
    ``api_key_env``, ``price``, ``max_connections``; see ``EndpointFields``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    role: str
    description: str | None = None  # one line for `chateval personas`

    @field_validator("name", "role")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v.strip()

    @property
    def slug(self) -> str:
        return slugify(self.name)


# The judge of ``framing: none`` (ChatEval's single-agent setting): its role is never rendered
# into a prompt; the name labels it in transcripts and reports.
NO_PERSONA = Persona(
    name="Judge",
    role="no persona (ChatEval's single-agent setting)",
    description="the single judge without persona or panel framing",
)


def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def load_persona(path: Path) -> Persona:
    data = load_mapping(path, "persona file")
    try:
        return Persona.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "?"
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].lower()
        raise ConfigError(f"{path}: field '{field}': {msg}") from None


class PersonaLibrary:
    """All personas visible from the given folders (user folders first, then the built-ins).

    Lookup is by file stem or by slug of the persona's name, case-insensitively, so
    ``general_public``, ``General Public`` and ``general-public`` all work.
    """

    def __init__(self, extra_dirs: Sequence[str | Path] | None = None) -> None:
        self._by_key: dict[str, tuple[Path, Persona | None]] = {}
        for d in reversed(search_path("personas", extra_dirs)):  # later (user) folders override
            if not d.is_dir():
                if d in [Path(p) for p in (extra_dirs or [])]:
                    raise ConfigError(f"{d}: persona folder does not exist")
                continue
            for f in sorted(d.glob("*.y*ml")):
                self._by_key[slugify(f.stem)] = (f, None)

    def get(self, name: str) -> Persona:
        key = slugify(name)
        entry = self._by_key.get(key)
        if entry is None:
            # Fall back to matching the name inside the files (file stem may differ).
            for k in list(self._by_key):
                if slugify(self._load(k).name) == key:
                    return self._load(k)
            known = ", ".join(sorted(self._by_key)) or "none"
            raise ConfigError(f"unknown persona '{name}'{did_you_mean(key, self._by_key)} (known: {known})")
        return self._load(key)

    def _load(self, key: str) -> Persona:
        path, persona = self._by_key[key]
        if persona is None:
            persona = load_persona(path)
            self._by_key[key] = (path, persona)
        return persona

    def names(self) -> list[str]:
        return sorted(self._by_key)

    def all(self) -> list[Persona]:
        return [self._load(k) for k in self.names()]


def agent_names(personas: list[Persona]) -> list[str]:
    """Valid, unique Python identifiers for autogen agent names ('General Public' -> General_Public)."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for p in personas:
        base = re.sub(r"\W+", "_", p.name).strip("_") or "agent"
        if base[0].isdigit():
            base = "agent_" + base
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}_{seen[base]}")
    return names
