"""Benchmarks: registry, shared runner and one module per benchmark."""

from .base import BENCHMARKS, Benchmark, benchmark
from . import longmemeval  # noqa: F401  (registration)

__all__ = ["BENCHMARKS", "Benchmark", "benchmark"]
from . import locomo  # noqa: F401  (registration)
from . import head2head  # noqa: F401  (registration)
from . import faireval  # noqa: F401  (registration)
from . import topical_chat  # noqa: F401  (registration)
from . import teafarm  # noqa: F401  (registration)
