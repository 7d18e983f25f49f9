"""Plots and number formats of the judge meta-benchmarks' comparison reports."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from . import plots


def sweep_lines(path: Path, xs: Sequence[int], series: dict[str, list[float | None]], *, title: str,
                xlabel: str, ylabel: str, ylim: tuple[float, float],
                baselines: dict[str, float] | None = None) -> Path:
    """Lines over a whole-number sweep (agents, turns), with whole-number ticks; an undefined
    point is a gap in its line, marked with an x on the axis."""
    plt = plots.plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, ys), colour in zip(series.items(), plots.colours(len(series))):
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name, color=colour)
        gaps = [x for x, y in zip(xs, ys) if y is None]
        if gaps:
            ax.plot(gaps, [ylim[0]] * len(gaps), marker="x", linestyle="", color=colour, clip_on=False)
    for k, (name, value) in enumerate((baselines or {}).items()):
        ax.axhline(value, color="black", linestyle=(0, (4, 2 + k)), linewidth=1, label=name)
    ax.set_xticks(list(xs))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(*ylim)
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return plots._save(fig, path)


def bars(path: Path, groups: Sequence[str], series: dict[str, list[float | None]], *, title: str,
         ylabel: str, baselines: dict[str, float] | None = None) -> Path | str:
    """Grouped bars with a legend outside the axes and a zero line (correlations can be negative);
    an undefined value is a marked gap ("n/a"), never a bar of height 0."""
    return plots.grouped_bars(path, groups, series, title=title, ylabel=ylabel, ylim=_ylim(series),
                              baselines=baselines, legend_outside=True, skip_empty=False)


def _ylim(series: dict[str, list[float | None]]) -> tuple[float, float]:
    vals = [v for vs in series.values() for v in vs if v is not None]
    lo = min([0.0] + vals)
    return (lo - 0.05 if lo < 0 else 0.0, 1.0)


def fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"
