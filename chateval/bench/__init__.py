"""Benchmarks: a registry, typed settings per benchmark, a crash-safe unit runner, and the Python
API (``config_model``, ``run``, ``arun``)."""

from .base import BENCHMARKS, Benchmark, benchmark
from .config import BenchConfig, JudgeMetaConfig, MemoryBenchConfig
from . import longmemeval  # noqa: F401  (registration)
from . import locomo  # noqa: F401  (registration)
from . import head2head  # noqa: F401  (registration)
from . import faireval  # noqa: F401  (registration)
from . import topical_chat  # noqa: F401  (registration)
from . import teafarm  # noqa: F401  (registration)
from . import msc_response  # noqa: F401  (registration)
from .api import arun, config_model, make_config, run

__all__ = ["BENCHMARKS", "BenchConfig", "Benchmark", "JudgeMetaConfig", "MemoryBenchConfig", "arun", "benchmark",
           "config_model", "make_config", "run"]
