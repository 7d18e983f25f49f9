"""Render run directories into one self-contained HTML file (inline CSS and JS, no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from .load import NotARunDir, RunView, load_run

# Persona colours: distinct, readable on white, assigned in order of first appearance.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]


def _env() -> Environment:
    env = Environment(loader=PackageLoader("chateval.view", "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["pretty"] = lambda v: v if isinstance(v, str) else json.dumps(v, indent=1, ensure_ascii=False)
    env.filters["num"] = _num
    return env


def _num(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _colours(runs: list[RunView]) -> dict[str, str]:
    out: dict[str, str] = {}
    for run in runs:
        for s in run.samples:
            for d in s.debates:
                for turns in d.order_turns.values():
                    for t in turns:
                        if t.get("kind") != "summary":
                            out.setdefault(t.get("speaker", ""), PALETTE[len(out) % len(PALETTE)])
    return out


def _rows(runs: list[RunView]) -> list[tuple[str, list[Any]]]:
    """Samples matched across runs by (sub-run, key): one row per key, one cell per run."""
    order: list[tuple[str, str]] = []
    cells: dict[tuple[str, str], list[Any]] = {}
    for i, run in enumerate(runs):
        for s in run.samples:
            k = (s.setting, s.key)
            if k not in cells:
                order.append(k)
                cells[k] = [None] * len(runs)
            cells[k][i] = s
    return [(f"{k[0]}/{k[1]}" if k[0] else k[1], cells[k]) for k in order]


# Shown in the config block (or not worth a header line), so left out of the headline numbers.
HEADER_KEYS = {"note", "config_hash", "data", "benchmark", "model", "task", "strategy", "agents", "turns",
               "wall_time_s", "mean_latency_s"}


def headline(run: RunView) -> dict[str, Any]:
    """The numbers for the header: the summary's own headline, else its top-level scalars."""
    s = run.summary
    if isinstance(s.get("headline"), dict):
        return s["headline"]
    return {k: v for k, v in s.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)
            and k not in HEADER_KEYS}


def build_view(run_dirs: list[Path], out: Path | None = None) -> Path:
    """Write one HTML page showing the given run directories side by side; returns its path.

    ``out`` defaults to ``view.html`` inside the first run directory.
    """
    if not run_dirs:
        raise NotARunDir("no run directory given")
    runs = [load_run(Path(p)) for p in run_dirs]
    out = Path(out) if out else Path(run_dirs[0]) / "view.html"
    samples = [s for r in runs for s in r.samples]
    facets = {
        "setting": sorted({s.setting for s in samples if s.setting}),
        "system": sorted({s.system for s in samples if s.system}),
        "category": sorted({s.category for s in samples if s.category}),
    }
    html = _env().get_template("view.html.j2").render(
        runs=runs, rows=_rows(runs), colours=_colours(runs), facets=facets, headline=headline,
        has_labels=any(s.disagrees is not None for s in samples),
        has_swap=any(len(d.order_turns) > 1 or d.orders for s in samples for d in s.debates),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
