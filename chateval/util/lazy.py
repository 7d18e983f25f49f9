"""Package facades whose names load on first use, so ``import chateval`` (and the command line's
start-up) does not pay for openai, autogen, numpy or the benchmarks before a name is used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each public name to the
    module that defines it, relative to the package (``"config"``, or ``"..records.audit"``)."""
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        where = exports[name]
        value = getattr(importlib.import_module(where if where.startswith(".") else f".{where}", package), name)
        namespace[name] = value  # loaded once: later lookups find it without this function
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return getattr_, dir_
