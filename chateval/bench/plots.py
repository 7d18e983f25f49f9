"""matplotlib figures for reports (Agg backend: files only, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def grouped_bars(path: Path, groups: Sequence[str], series: dict[str, Sequence[float | None]], *,
                 title: str, ylabel: str, ylim: tuple[float, float] | None = (0, 1)) -> Path:
    # About a quarter inch per bar, between 6 and 14 inches wide: readable, never a banner.
    bars = len(groups) * max(1, len(series))
    fig, ax = plt.subplots(figsize=(min(14, max(6, 1.5 + 0.22 * bars)), 4.5))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name)
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def scatter(path: Path, points: dict[str, tuple[float, float]], *, title: str, xlabel: str, ylabel: str,
            logx: bool = False) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, (x, y) in points.items():
        ax.scatter([x], [y])
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    if logx and all(x > 0 for x, _ in points.values()):
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def stacked_bars(path: Path, rows: dict[str, Sequence[float | None]], segments: Sequence[str], *, title: str,
                 xlabel: str = "share of cases", colors: Sequence[str] | None = None) -> Path:
    """Horizontal stacked bars, one row per label and one segment per share (each row sums to
    1), labelled with percentages: the win/tie/loss layout of THEANINE's Figure 5."""
    labels = list(rows)
    colors = list(colors or ["#4c72b0", "#b8b8b8", "#dd8452", "#55a868", "#8172b3"])
    fig, ax = plt.subplots(figsize=(7.5, 1.4 + 0.45 * len(labels)))
    left = [0.0] * len(labels)
    for j, seg in enumerate(segments):
        vals = [(rows[lab][j] if j < len(rows[lab]) else None) or 0.0 for lab in labels]
        ax.barh(range(len(labels)), vals, left=left, height=0.6, label=seg, color=colors[j % len(colors)])
        for i, v in enumerate(vals):
            if v >= 0.06:
                ax.text(left[i] + v / 2, i, f"{100 * v:.0f}%", ha="center", va="center", fontsize=8)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_xticklabels(["0%", "25%", "50%", "75%", "100%"])
    ax.set_xlabel(xlabel)
    ax.set_title(title, pad=24)
    ax.legend(ncol=len(segments), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def line_panels(path: Path, xs: Sequence[float], panels: dict[str, dict[str, Sequence[float | None]]], *,
                title: str, xlabel: str, ylabel: str) -> Path:
    """Side-by-side line charts sharing one colour per series and one legend outside the axes."""
    names = list(dict.fromkeys(n for series in panels.values() for n in series))
    colours = {n: plt.get_cmap("tab20")(i % 20) for i, n in enumerate(names)}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 2.2, 4), sharey=True, squeeze=False)
    for ax, (panel, series) in zip(axes[0], panels.items()):
        for name, ys in series.items():
            pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=colours[name], label=name)
        ax.set_title(panel)
        ax.set_xlabel(xlabel)
        ax.set_xticks(list(xs))
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel(ylabel)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1 - 2.0 / (4.2 * len(panels) + 2.2), 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
