"""The package's layers: imports run one way (cli -> bench/view/integrations -> evaluator ->
debate, memory -> datasets, models -> utilities), so there are no import cycles between them,
and argparse lives only in chateval/cli."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "chateval"

# Higher may import lower (and itself); equal ranks may not import each other.
RANK = {
    "chateval": 20,  # the public facade
    "cli": 18,
    "calibration": 17,  # chateval calibrate: runs judges through the bench unit runner
    "auditing": 17,  # chateval audit: runs judges through the bench unit runner; the viewer reads its records
    "bench": 16, "view": 16, "integrations": 16, "testing": 16,
    "evaluation": 14,  # chateval evaluate as a library: config, inputs, Evaluator, summary, report
    "records": 13,  # typed records of run directories (the viewer and auditing read them)
    "debate": 12, "memory": 12,
    "runs": 9,  # the run directory: lock, resume, atomic writes; gates, savings, progress
    "datasets": 8, "models": 8,
    "paired": 2, "stats": 2,  # statistics: paired differences; agreement and verdict labels
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
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450}
    assert long == {}


def test_benchmarks_build_their_judges_without_the_evaluator_facade():
    # A benchmark builds its panels as Judges (chateval.evaluation.judges); the Evaluator is the
    # public facade for `evaluate` and the Python API, not a part of the benchmarks.
    def facade(target: str, names: set[str]) -> bool:
        return (target == "chateval.evaluation.evaluator" or (target == "chateval.evaluation" and "evaluator" in names)
                or (target == "chateval" and "Evaluator" in names))

    users = [f"{p.relative_to(PKG.parent)} imports {t} {sorted(n)}" for p in sorted((PKG / "bench").rglob("*.py"))
             for t, n in _imports(p) if facade(t, n)]
    assert users == []
