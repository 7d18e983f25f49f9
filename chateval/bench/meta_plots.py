"""Plots and number formats of the judge meta-benchmarks' comparison reports."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from . import plots  # noqa: F401  (selects the Agg backend before pyplot is imported)


def sweep_lines(path: Path, xs: Sequence[int], series: dict[str, list[float | None]], *, title: str,
                xlabel: str, ylabel: str, ylim: tuple[float, float]) -> Path:
    """Lines over a whole-number sweep (agents, turns), with whole-number ticks."""
    import matplotlib.pyplot as plt  # the Agg backend is selected by .plots

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, ys in series.items():
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xticks(list(xs))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(*ylim)
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def bars(path: Path, groups: Sequence[str], series: dict[str, list[float | None]], *, title: str,
         ylabel: str) -> Path:
    """Grouped bars with a legend outside the axes and a zero line (correlations can be negative);
    a missing (undefined) value is drawn as no bar."""
    import matplotlib.pyplot as plt  # the Agg backend is selected by .plots

    n = max(1, len(series))
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 0.28 * len(groups) * n + 3)), 4.2))
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [g + i * width for g, v in enumerate(values) if v is not None]
        ax.bar(xs, [v for v in values if v is not None], width, label=name)
    ax.set_xticks([g + width * (n - 1) / 2 for g in range(len(groups))])
    long = max((len(g) for g in groups), default=0) > 12
    ax.set_xticklabels(groups, rotation=15 if long else 0, ha="right" if long else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(*_ylim(series))
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ylim(series: dict[str, list[float | None]]) -> tuple[float, float]:
    vals = [v for vs in series.values() for v in vs if v is not None]
    lo = min([0.0] + vals)
    return (lo - 0.05 if lo < 0 else 0.0, 1.0)


def fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"
