"""Command-line options generated from pydantic settings models (``chateval.util.options.opt``), so a
config model and its command line cannot drift. Every option defaults to None ('not given'),
which lets the CLI layer over a config file and the model's own defaults."""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ..util.errors import ConfigError


def csv(flag: str) -> Any:
    """The parser of a comma-separated option: '' is the empty list (some options read it as
    'none'); an empty name among others (',', 'a,,b', ' , a') is a mistake that would otherwise
    fall back to the defaults unseen. Raised as ConfigError, which argparse passes through, so the
    CLI prints it as its usual one line (exit 2) rather than argparse's usage block."""

    def parse(value: str) -> list[str]:
        if not value.strip():
            return []
        items = [v.strip() for v in value.split(",")]
        if not all(items):
            raise ConfigError(f"{flag} '{value}': an empty name (expected NAME1,NAME2,...)")
        return items

    return parse


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> X."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    return annotation


def _extra(field: Any) -> dict[str, Any]:
    return field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}


def _default_text(field: Any) -> str:
    if _required(field):
        return " (required)"
    value = field.get_default(call_default_factory=True)
    if value in (None, [], {}, False):
        return ""
    if isinstance(value, list):
        value = ",".join(map(str, value))
    return f" (default: {value})"


class UsageFormatter(argparse.HelpFormatter):
    """Shows the options a settings model requires without brackets in the usage line. argparse
    cannot require them itself (``--config FILE`` may give them); the model says what is missing."""

    def _format_usage(self, usage: Any, actions: Any, groups: Any, prefix: Any) -> str:
        needed = [a for a in actions if getattr(a, "model_required", False) and not a.required]
        for a in needed:
            a.required = True
        try:
            return super()._format_usage(usage, actions, groups, prefix)
        finally:
            for a in needed:
                a.required = False


def _required(field: Any) -> bool:
    return field.default is PydanticUndefined and field.default_factory is None


REQUIRED_TITLE = "required (here or in --config FILE)"


def add_model_options(
    parser: argparse.ArgumentParser | Any,
    model: type[BaseModel],
    *,
    exclude: Iterable[str] = (),
    title: str | None = None,
) -> None:
    """One option per field of ``model`` (except ``exclude`` and fields marked ``cli=False``).
    Fields without a default come first, in a group of their own, and are marked for
    ``UsageFormatter`` (shown unbracketed in the usage line)."""
    target = parser.add_argument_group(title) if title else parser
    skip = set(exclude)
    fields = sorted(model.model_fields.items(), key=lambda kv: not _required(kv[1]))
    needed = None
    for name, field in fields:
        extra = _extra(field)
        if name in skip or not extra.get("cli", True):
            continue
        flags = extra.get("flags") or ["--" + name.replace("_", "-")]
        kw: dict[str, Any] = {"dest": name, "default": None, "help": (field.description or "") + _default_text(field)}
        ann = _unwrap(field.annotation)
        origin = typing.get_origin(ann)
        if ann is bool:
            kw["action"] = "store_false" if flags[0].startswith("--no-") else "store_true"
            default = field.get_default(call_default_factory=True)
            if default is True and not flags[0].startswith("--no-"):
                flags = ["--no-" + flags[0][2:]]
                kw["action"] = "store_false"
            # A `--no-X` flag turns off what the (positive) field describes: say so, not the opposite.
            desc = field.description or ""
            kw["help"] = f"do not {desc}" if kw["action"] == "store_false" and desc else desc
        elif origin is Literal:
            kw["choices"] = list(typing.get_args(ann))
        elif origin in (list, dict) or ann is list:
            item = (typing.get_args(ann) or (str,))[0] if origin is list else str
            if extra.get("repeat"):
                kw["action"] = "append"
                if typing.get_origin(item) is Literal:
                    kw["choices"] = list(typing.get_args(item))
            else:
                kw["type"] = csv(flags[0])
        elif extra.get("repeat"):  # one value per flag, collected into a list the field's validator joins
            kw["action"] = "append"
        elif ann in (int, float):
            kw["type"] = ann
        if extra.get("hidden"):
            kw["help"] = argparse.SUPPRESS
        if extra.get("metavar"):
            kw["metavar"] = extra["metavar"]
        if _required(field) and not extra.get("hidden"):
            if needed is None:
                needed = parser.add_argument_group(REQUIRED_TITLE if not title else f"{title}: required")
            needed.add_argument(*flags, **kw).model_required = True  # type: ignore[union-attr]  # our marker on argparse's Action
            continue
        target.add_argument(*flags, **kw)


def given(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The fields of ``model`` given on the command line (None = not given)."""
    return {k: v for k, v in vars(args).items() if k in model.model_fields and v is not None}


def data_set_input(given: str, *, names: tuple[str, ...] = ("faireval", "topical-chat")) -> str:
    """A positional input that is not a file here but names a data set `data get` fetched
    (``chateval calibrate faireval``): the data folder's copy, as ``--data`` finds it."""
    if Path(given).exists() or given not in names:
        return given
    from ..datasets.locate import find_data

    # Its folder, as the docs give it (`../shared/data/faireval`): Topical-Chat reads two files there.
    return str(find_data(given, given).parent)
