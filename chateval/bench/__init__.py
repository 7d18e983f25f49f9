"""Benchmarks: a registry, typed settings per benchmark, a crash-safe unit runner, and the Python
API (``config_model``, ``run``, ``arun``).

Names load on first use and the built-in benchmarks register lazily (``registry.py``), so the
CLI builds ``chateval bench NAME --help`` from a benchmark's settings without importing it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports
from .registry import BENCHMARKS, benchmark

_EXPORTS = {
    "Benchmark": "base",
    "BenchConfig": "config",
    "JudgeMetaConfig": "config",
    "MemoryBenchConfig": "config",
    "arun": "api",
    "config_model": "api",
    "make_config": "api",
    "run": "api",
}

__all__ = [
    "BENCHMARKS",
    "BenchConfig",
    "Benchmark",
    "JudgeMetaConfig",
    "MemoryBenchConfig",
    "arun",
    "benchmark",
    "config_model",
    "make_config",
    "run",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # for type checkers and IDEs
    from .api import arun, config_model, make_config, run
    from .base import Benchmark
    from .config import BenchConfig, JudgeMetaConfig, MemoryBenchConfig
