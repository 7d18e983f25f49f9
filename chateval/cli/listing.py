"""``chateval personas`` and ``chateval strategies``: what is available to a panel."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..util.tables import print_table

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console


def add_parsers(sub: Any) -> None:
    pp = sub.add_parser("personas", help="list the available personas")
    pp.add_argument("--persona-dir", action="append", dest="persona_dirs")
    sp = sub.add_parser("strategies", help="list communication strategies and presets")
    sp.add_argument("--plugin", action="append", dest="plugins")
    tp = sub.add_parser("perturbations", help="list the perturbations `chateval audit` can apply")
    tp.add_argument("--plugin", action="append", dest="plugins")


def personas(args: argparse.Namespace, console: Console) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..debate import PersonaLibrary

    lib = PersonaLibrary(args.persona_dirs)
    table = Table("name", "persona", "description", "model")
    for key in lib.names():
        p = lib.get(key)
        table.add_row(key, p.name, p.description or p.role[:80], p.model or "-")
    print_table(Console(), table)
    return 0


def strategies(args: argparse.Namespace, console: Console) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..debate import STRATEGIES
    from ..evaluation.config import load_preset
    from ..util.paths import search_path
    from ..util.plugins import load_plugins

    load_plugins(args.plugins or [])
    out = Console()
    table = Table("strategy", "description")
    for name in STRATEGIES.names():
        table.add_row(name, STRATEGIES.get(name).description)
    print_table(out, table)
    presets = Table("preset", "settings")
    for d in search_path("strategies"):
        for f in sorted(d.glob("*.y*ml")) if d.is_dir() else []:
            data = load_preset(f)
            presets.add_row(f.stem, ", ".join(f"{k}={v}" for k, v in data.items()))
    print_table(out, presets)
    return 0


def perturbations(args: argparse.Namespace, console: Console) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..auditing import PERTURBATIONS, get_perturbation
    from ..util.plugins import load_plugins

    load_plugins(args.plugins or [])
    table = Table("perturbation", "bias", "tasks", "description")
    for name in PERTURBATIONS.names():
        p = get_perturbation(name)
        table.add_row(name, p.bias, ", ".join(p.tasks), p.description)
    print_table(Console(), table)
    return 0
