"""The package's layers: imports run one way (cli -> bench/view/integrations -> evaluator ->
debate, memory -> datasets, models -> utilities), so there are no import cycles between them;
inside a package no module-level import cycle either; argparse lives only in chateval/cli; no
module over 400 lines; no module uses another's underscore names."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "chateval"

# Higher may import lower (and itself); equal ranks may not import each other.
RANK = {
    "chateval": 20,  # the public facade
    "cli": 18,
    "calibration": 17,  # chateval calibrate: runs judges through the bench unit runner
    "auditing": 17,  # chateval audit: runs judges through the bench unit runner; the viewer reads its records
    "rejudging": 17,  # chateval rejudge: scores graded answer sets under several judges (bench unit runner)
    "bench": 16, "view": 16, "integrations": 16, "testing": 16,
    "evaluation": 14,  # chateval evaluate as a library: config, inputs, Evaluator, summary, report
    "records": 13,  # typed records of run directories (the viewer and auditing read them)
    "debate": 12, "memory": 12,
    "runs": 9,  # the run directory: lock, resume, atomic writes; gates, savings, progress
    "datasets": 8, "models": 8,
    "paired": 2,  # statistics: paired differences (reads stats.resample)
    "stats": 1,  # agreement, verdict labels, bootstrap resampling
    "util": 0,  # errors, text, secrets, jsonl, paths, yaml, interrupts, registries, plugins, options, prompts
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "chateval"


def _imports(path: Path) -> list[tuple[str, set[str]]]:
    """(imported chateval module, names) for every import in a file."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = {a.name for a in node.names}
            out.append((target, names))
        elif isinstance(node, ast.Import):
            out += [(a.name, set()) for a in node.names]
    return out


def test_imports_run_one_way():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        src = _group(_module(path))
        assert src in RANK, f"{path}: package '{src}' has no rank in tests/test_layers.py; add it"
        for target, names in _imports(path):
            if not target.startswith("chateval"):
                continue
            targets = {n for n in names if n in RANK} if target == "chateval" else {_group(target)}
            for dst in targets:
                if dst != src and RANK.get(dst, -1) >= RANK[src]:
                    bad.append(f"{path.relative_to(PKG.parent)} imports {target} ({src} -> {dst})")
    assert not bad, "\n".join(bad)


def test_argparse_only_in_the_cli_package():
    offenders = [str(p.relative_to(PKG.parent)) for p in PKG.rglob("*.py")
                 if _group(_module(p)) != "cli" and any(t == "argparse" for t, _ in _imports(p))]
    assert offenders == []


def test_no_module_is_much_over_400_lines():
    long = {str(p.relative_to(PKG.parent)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_time_nodes(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: its top level, inside ``try:`` and plain
    ``if`` blocks and class bodies, but not under ``if TYPE_CHECKING:`` (never run) nor inside
    functions (run later, after every module has loaded)."""
    out: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If):
            out += _import_time_nodes(node.orelse if _is_type_checking(node.test) else node.body + node.orelse)
        elif isinstance(node, ast.Try):
            out += _import_time_nodes(node.body + node.orelse + node.finalbody
                                      + [s for h in node.handlers for s in h.body])
        elif isinstance(node, (ast.ClassDef, ast.With)):
            out += _import_time_nodes(node.body)
    return out


def _every_import(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    return [n for stmt in body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))]


def import_graph(deferred: bool = False, root: Path = PKG) -> dict[str, set[str]]:
    """Module of the package at ``root`` -> the package's modules it imports at import time (with
    ``deferred``: also inside functions and under ``if TYPE_CHECKING:``). ``from pkg import name``
    points at the submodule ``pkg.name`` when there is one, else at ``pkg`` (its __init__)."""
    find = _every_import if deferred else _import_time_nodes

    def module(path: Path) -> str:
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    paths = {module(p): p for p in root.rglob("*.py")}

    def known(name: str) -> str | None:  # the module itself, or the one defining the attribute
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        edges = graph.setdefault(mod, set())
        for node in find(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1]) if node.level else ""
                src = ".".join(x for x in (base, node.module or "") if x)
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in paths else src for a in node.names]
            edges |= {t for t in map(known, targets) if t and t != mod}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles, each once, as a chain [a, b, ..., a]: for every module on a cycle, the
    shortest way back to itself."""
    found: dict[frozenset[tuple[str, str]], list[str]] = {}
    for start in sorted(graph):
        back: dict[str, str] = {}
        frontier, chain = [start], None
        while frontier and chain is None:
            nxt = []
            for m in frontier:
                for t in sorted(graph.get(m, ())):
                    if t == start:
                        chain = [start]
                        while m != start:
                            chain.append(m)
                            m = back[m]
                        chain = [start, *reversed(chain[1:]), start]
                        break
                    if t not in back:
                        back[t] = m
                        nxt.append(t)
                if chain:
                    break
            frontier = nxt
        if chain:
            found.setdefault(frozenset(itertools.pairwise(chain)), chain)
    return sorted(found.values())


def test_the_cycle_finder_sees_a_cycle_and_only_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_leaves_out_deferred_imports_only_when_asked(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("from . import b\nA = 1\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nimport json\n"
                              "if TYPE_CHECKING:\n    from .a import A\n"
                              "try:\n    from .sub.c import C\nexcept ImportError:\n    C = None\n"
                              "def f():\n    from pkg import a\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from .. import b as _b\nC = 2\n")
    assert import_graph(root=pkg) == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.sub.c"},
                                      "pkg.sub": set(), "pkg.sub.c": {"pkg.b"}}
    assert import_graph(deferred=True, root=pkg)["pkg.b"] == {"pkg.a", "pkg.sub.c"}
    assert import_cycles(import_graph(root=pkg)) == [["pkg.b", "pkg.sub.c", "pkg.b"]]


def test_no_import_cycle_inside_the_package():
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles (move what both need into a lower module):\n" + \
        "\n".join(" -> ".join(c) for c in cycles)


def test_no_deferred_import_closes_a_cycle():
    """An import moved into a function or under TYPE_CHECKING still makes two modules need each
    other (the three cycles of issue 29 all hid that way): the lower one must not know the higher."""
    cycles = import_cycles(import_graph(deferred=True))
    assert not cycles, "import cycles through deferred imports (move what both need into a lower module):\n" + \
        "\n".join(" -> ".join(c) for c in cycles)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str, mod: str, modules: set[str], is_package: bool = False) -> list[str]:
    """The underscore names of other chateval modules that module ``mod`` uses: ``from m import
    _name``, or ``m._name`` on a module it imported (``from pkg import m``, ``import pkg.m as m``)."""
    pkg = mod if is_package else mod.rpartition(".")[0]
    tree = ast.parse(source)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1]) if node.level else ""
            src = ".".join(x for x in (base, node.module or "") if x)
            if not src.startswith("chateval"):
                continue
            for a in node.names:
                if f"{src}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{src}.{a.name}"
                elif _private(a.name) and src != mod:
                    found.append(f"{node.lineno}: from {src} import {a.name}")
        elif isinstance(node, ast.Import):
            aliases |= {a.asname: a.name for a in node.names if a.asname and a.name in modules}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr) \
                and aliases.get(node.value.id, mod) != mod:
            found.append(f"{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_private_uses_are_seen():
    modules = {"chateval.bench", "chateval.bench.plots", "chateval.bench.report", "chateval.bench.probe"}
    source = ("from . import plots\nfrom .report import _cost, pct\nfrom .probe import _own\n"
              "def f():\n    return plots._save, plots.save, _cost, pct, _own\n")
    assert private_uses(source, "chateval.bench.probe", modules) == [
        "2: from chateval.bench.report import _cost", "5: chateval.bench.plots._save"]


def test_no_module_uses_another_modules_underscore_names():
    """A helper other modules need is public (no underscore): its module says it is shared."""
    paths = sorted(PKG.rglob("*.py"))
    modules = {_module(p) for p in paths}
    found = [f"{p.relative_to(PKG.parent)}:{use}" for p in paths
             for use in private_uses(p.read_text(encoding="utf-8"), _module(p), modules, p.name == "__init__.py")]
    assert found == [], "\n".join(found)
def test_benchmarks_build_their_judges_without_the_evaluator_facade():
    # A benchmark builds its panels as Judges (chateval.evaluation.judges); the Evaluator is the
    # public facade for `evaluate` and the Python API, not a part of the benchmarks.
    def facade(target: str, names: set[str]) -> bool:
        return (target == "chateval.evaluation.evaluator" or (target == "chateval.evaluation" and "evaluator" in names)
                or (target == "chateval" and "Evaluator" in names))

    users = [f"{p.relative_to(PKG.parent)} imports {t} {sorted(n)}" for p in sorted((PKG / "bench").rglob("*.py"))
             for t, n in _imports(p) if facade(t, n)]
    assert users == []
