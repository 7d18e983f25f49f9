"""The shape of ``chateval/bench/`` (issue 40): a core of what every benchmark shares, and one
package per benchmark that a newcomer can read alone. A benchmark package imports the core (and
itself), never another benchmark package; the core imports no benchmark package; each package
has a README and its tests in ``tests/bench/<package>/``; its ``__init__`` imports nothing, so
``--help`` reads a settings module without loading the benchmark (tests/test_cli_startup.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from chateval.bench.registry import BUILTIN

from .test_layers import PKG, import_graph

BENCH = PKG / "bench"
TESTS = Path(__file__).resolve().parent / "bench"
PACKAGES = sorted(p.name for p in BENCH.iterdir() if (p / "__init__.py").is_file())


def _package(module: str) -> str | None:
    """The benchmark package a chateval.bench module belongs to; None for the core."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and parts[2] in PACKAGES) else None


def _arrows() -> list[tuple[str, str]]:
    graph = import_graph(deferred=True)  # imports inside functions and under TYPE_CHECKING too
    return [(m, t) for m, ts in graph.items() if m.startswith("chateval.bench.") for t in ts
            if t.startswith("chateval.bench.")]


def test_the_packages_are_the_built_in_benchmarks():
    assert PACKAGES == ["head2head", "judge_meta", "locomo", "longmemeval", "msc", "teafarm"]
    assert {module.split(".")[0] for module, _, _ in BUILTIN.values()} == set(PACKAGES)
    assert all(settings.split(".")[0] == module.split(".")[0] for module, settings, _ in BUILTIN.values())


def test_no_benchmark_package_imports_another():
    crossing = [f"{m} imports {t}" for m, t in _arrows()
                if _package(m) and _package(t) and _package(m) != _package(t)]
    assert crossing == [], "what two benchmarks share belongs in the core:\n" + "\n".join(crossing)


def test_the_core_imports_no_benchmark_package():
    up = [f"{m} imports {t}" for m, t in _arrows() if _package(m) is None and _package(t)]
    assert up == [], "\n".join(up)


def test_the_boundary_check_sees_a_crossing():
    assert _package("chateval.bench.locomo.report") == "locomo"
    assert _package("chateval.bench.locomo") == "locomo"
    assert _package("chateval.bench.report") is None
    assert _package("chateval.bench") is None


def test_the_core_folder_holds_under_20_modules():
    core = sorted(p.name for p in BENCH.glob("*.py"))
    assert len(core) < 20, core


def test_each_package_opens_with_a_readme_and_has_its_tests():
    for name in PACKAGES:
        readme = BENCH / name / "README.md"
        assert readme.is_file() and readme.read_text(encoding="utf-8").startswith("# "), readme
        assert any((TESTS / name).glob("test_*.py")), f"tests/bench/{name}/ has no tests"


def test_package_inits_import_nothing():
    for name in PACKAGES:
        body = ast.parse((BENCH / name / "__init__.py").read_text(encoding="utf-8")).body
        assert all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body), name
