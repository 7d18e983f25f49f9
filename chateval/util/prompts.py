"""Prompt templates: jinja2 in a sandbox with StrictUndefined.

Candidate answers, contexts and other user data are passed as *variables* and inserted with
the ``fence`` filter, which wraps them in labelled delimiters and defuses delimiter
look-alikes inside the data. They are never compiled as template source, so ``{{ }}`` or
``{% %}`` inside an answer stays literal text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    DictLoader,
    FileSystemLoader,
    StrictUndefined,
    Template,
    TemplateNotFound,
    TemplateSyntaxError,
    UndefinedError,
)
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from .errors import ConfigError
from .paths import search_path

FENCE_OPEN = "<<<"
FENCE_CLOSE = ">>>"


# Any run of three or more angle brackets: a plain replace("<<<", "< < <") would turn "<<<<<"
# into "< < <<<", which still holds a delimiter.
_BRACKET_RUNS = re.compile(r"<{3,}|>{3,}")


def fence(text: Any, label: str) -> str:
    label = inline(label)  # labels may carry data (a memory's id, a speaker): one safe line
    body = "" if text is None else str(text)
    # Break up anything that could be read as one of our delimiters.
    body = _BRACKET_RUNS.sub(lambda m: " ".join(m.group()), body)
    return f"{FENCE_OPEN}BEGIN {label}{FENCE_CLOSE}\n{body}\n{FENCE_OPEN}END {label}{FENCE_CLOSE}"


def inline(text: Any, limit: int = 80) -> str:
    """Short dataset labels (speaker roles, turn ids) shown outside a fence: one line, no
    delimiter look-alikes, bounded length, so a crafted label cannot open or close a block."""
    flat = " ".join(("" if text is None else str(text)).split())
    flat = _BRACKET_RUNS.sub(lambda m: " ".join(m.group()), flat)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Prompts:
    def __init__(self, extra_dirs: tuple[str | Path, ...] = (), templates: Mapping[str, str] | None = None) -> None:
        """``templates``: name -> source of templates that code ships (a plugin's task format),
        found after every folder, so a --prompt-dir file of the same name overrides them."""
        dirs = search_path("prompts", list(extra_dirs))
        for d in dirs[:-1]:
            if not Path(d).is_dir():
                raise ConfigError(f"{d}: prompt folder does not exist")
        self._extra_dirs, self._templates = tuple(extra_dirs), dict(templates or {})
        loaders: list[BaseLoader] = [FileSystemLoader(str(d)) for d in dirs]
        if self._templates:
            loaders.append(DictLoader(self._templates))
        self.env = SandboxedEnvironment(
            loader=ChoiceLoader(loaders),
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=False,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["fence"] = fence
        self.env.filters["inline"] = inline
        self.dirs = dirs

    def with_templates(self, templates: Mapping[str, str]) -> Prompts:
        """These prompts and ``templates`` (name -> source) behind them."""
        return Prompts(self._extra_dirs, {**templates, **self._templates})

    def template(self, name: str) -> Template:
        """A compiled template; a missing one or a syntax error is one line naming file and line."""
        try:
            return self.env.get_template(name)
        except TemplateNotFound:
            raise ConfigError(f"prompt template '{name}' not found in {', '.join(map(str, self.dirs))}") from None
        except TemplateSyntaxError as e:
            where = e.filename or name
            raise ConfigError(f"{where}:{e.lineno}: template syntax error ({e.message})") from None

    def render(self, name: str, **variables: Any) -> str:
        template = self.template(name)
        try:
            return template.render(**variables).strip()
        except UndefinedError as e:
            raise ConfigError(f"prompt template '{template.filename or name}': {e}") from None
        except (SecurityError, OverflowError) as e:  # the sandbox's refusals
            raise ConfigError(f"prompt template '{template.filename or name}': blocked by the sandbox ({e})") from None

    def source_digest(self, names: list[str]) -> str:
        """Hash of the template sources in use: part of the run's config hash."""
        import hashlib

        h = hashlib.sha256()
        for n in sorted(names):
            self.template(n)  # compiled now: a broken template fails before any model call
            src, _, _ = self.env.loader.get_source(self.env, n)  # type: ignore[union-attr]
            h.update(n.encode() + b"\0" + src.encode())
        return h.hexdigest()[:16]


@lru_cache(maxsize=8)
def get_prompts(extra_dirs: tuple[str, ...] = ()) -> Prompts:
    return Prompts(extra_dirs)
