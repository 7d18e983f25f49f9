"""The benchmark registry, light enough for the command line's start-up. The built-in benchmarks
are registered by name and imported on first use (``BENCHMARKS.get``); ``describe`` gives what a
benchmark's parser shows (description, settings model) from its light ``settings`` module, so
``chateval bench NAME --help`` does not import the benchmark and the numpy, matplotlib, openai and
autogen behind it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, TypeVar

from ..util.registry import Registry

if TYPE_CHECKING:
    from .config import BenchConfig

# Benchmark classes (subclasses of bench.base.Benchmark). Typed loosely: this module is what the
# command line imports at start-up, and base imports it, so it cannot import base back.
BENCHMARKS: Registry[Any] = Registry("benchmark", entry_points="chateval.benchmarks")


class Named(Protocol):
    """What ``@benchmark`` needs of the class it registers (bench.base.Benchmark has it)."""

    name: ClassVar[str]


B = TypeVar("B", bound=Named)

# name -> (module under chateval.bench that registers it, the light module beside it that declares
# its DESCRIPTION, GATE_METRICS and settings model, and that model's class name). Each built-in is a
# package (bench/<package>/) whose __init__ imports nothing, so reading its settings module does
# not import the benchmark.
BUILTIN = {
    "faireval": ("judge_meta.faireval", "judge_meta.faireval_settings", "FairEvalConfig"),
    "head2head": ("head2head.head2head", "head2head.settings", "Head2HeadConfig"),
    "locomo": ("locomo.locomo", "locomo.settings", "LoCoMoConfig"),
    "longmemeval": ("longmemeval.longmemeval", "longmemeval.settings", "LongMemEvalConfig"),
    "msc-response": ("msc.msc_response", "msc.settings", "MSCResponseConfig"),
    "teafarm": ("teafarm.teafarm", "teafarm.settings", "TeaFarmConfig"),
    "topical-chat": ("judge_meta.topical_chat", "judge_meta.topical_chat_settings", "TopicalChatConfig"),
}
for _name, (_module, _, _) in BUILTIN.items():
    BENCHMARKS.register_lazy(_name, f"{__package__}.{_module}")


def benchmark(name: str, *, replace: bool = False) -> Callable[[type[B]], type[B]]:
    def deco(cls: type[B]) -> type[B]:
        BENCHMARKS.register(name, replace=replace)(cls)
        cls.name = name
        return cls

    return deco


class Description(NamedTuple):
    """What a benchmark's parser shows."""

    description: str
    config_model: type[BenchConfig]
    gate_metrics: list[str]  # what --fail-under can name


def describe(name: str) -> Description:
    """A registered benchmark's description, settings model and gate metrics. A built-in not
    imported yet (and not replaced by a plugin) is read from its settings module; any other from
    its class."""
    if name in BUILTIN and name in BENCHMARKS and name not in BENCHMARKS.snapshot():
        _, module, config = BUILTIN[name]
        settings = importlib.import_module(f"{__package__}.{module}")
        return Description(settings.DESCRIPTION, getattr(settings, config), list(settings.GATE_METRICS))
    cls = BENCHMARKS.get(name)
    return Description(cls.description, cls.config_model, list(cls.gate_metrics))
