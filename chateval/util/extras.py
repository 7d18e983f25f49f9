"""Optional extras: the judge (evaluate, calibrate, audit, view) runs on the core install; the
memory systems and benchmarks need ``pip install 'chateval[memory]'``. A command that needs an
extra checks for it before any work, so a missing package costs one line, not a half-done run."""

from __future__ import annotations

import importlib.util

from .errors import ConfigError

# The top-level modules each extra installs (pyproject.toml's optional-dependencies).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "memory": ("scipy", "networkx", "qdrant_client", "bm25s", "nltk", "rouge_score", "matplotlib"),
    "stats": ("scipy",),
    "plots": ("matplotlib",),
}


def missing(extra: str) -> list[str]:
    return [m for m in EXTRA_MODULES[extra] if not _importable(m)]


def require(extra: str, what: str) -> None:
    """Raise a one-line ConfigError naming the extra when one of its modules is not installed."""
    gone = missing(extra)
    if gone:
        raise ConfigError(
            f"{what} needs the {extra} extra: pip install 'chateval[{extra}]' (missing module '{gone[0]}')"
        )


def not_drawn(extra: str = "plots") -> str | None:
    """Why a report's figures are not drawn (their extra is missing), or None when they can be."""
    gone = missing(extra)
    return f"{gone[0]} is not installed (pip install 'chateval[{extra}]')" if gone else None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (a test, a shim)
        return False
