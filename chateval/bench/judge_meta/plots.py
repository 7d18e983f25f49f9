"""Plots and number formats of the judge meta-benchmarks' comparison reports.

One chart per unit: a benchmark describes its comparison figures as :class:`Chart` s (FairEval:
accuracy in % and Cohen's kappa on its own -1..1 axis; Topical-Chat: Spearman ρ), so two
quantities with different scales never share an axis, and each axis uses its table's unit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

from .. import plots

if TYPE_CHECKING:
    from matplotlib.axes import Axes

KAPPA_RANGE = (-1.0, 1.0)


@dataclass
class Chart:
    """One comparison figure: one value per setting (sweep point) for each series, all in one unit."""

    key: str  # file-name suffix: settings_<key>.png, sweep_<dim>_<key>.png
    name: str  # in titles: "accuracy", "Cohen's kappa"
    ylabel: str
    series: dict[str, list[float | None]]
    ns: list[int]  # n behind each setting's value, written under its group / tick
    pct: bool = False  # fractions drawn as % (the table's unit)
    ylim: tuple[float, float] | None = None  # fraction scale; None: fit to the data
    intervals: dict[str, list[plots.Interval]] | None = None  # 95% intervals, fraction scale
    baselines: dict[str, float] | None = None  # horizontal reference lines, fraction scale

    def limits(self) -> tuple[float, float]:
        if self.ylim is not None:
            return self.ylim
        return (0.0, 1.0) if self.pct else _ylim(self.series)

    def baseline_note(self) -> list[str]:
        base = self.baselines or {}
        return (
            [
                "Dashed line"
                + ("s" if len(base) > 1 else "")
                + f" ({self.key}): "
                + "; ".join(f"{name} = {_num(value, self.pct)}" for name, value in base.items())
                + ".",
                "",
            ]
            if base
            else []
        )


@plots.never_fatal
def sweep_lines(path: Path, xs: Sequence[int], chart: Chart, *, title: str, xlabel: str) -> Path:
    """Lines over a whole-number sweep (agents, turns), with whole-number ticks and n under each;
    an undefined point breaks its line and is marked with an x on the axis; intervals are whiskers."""
    plt = plots.load()
    scale = 100.0 if chart.pct else 1.0
    lo, hi = (v * scale for v in chart.limits())
    fig, ax = plt.subplots(figsize=(6, 4))
    label_points = len(chart.series) <= 2  # more series: the numbers would overlap
    for (name, ys), colour in zip(chart.series.items(), plots.colours(len(chart.series))):
        # NaN, not a skipped point: the line stops at an undefined value instead of bridging it.
        ax.plot(list(xs), [math.nan if y is None else y * scale for y in ys], marker="o", label=name, color=colour)
        for x, y, ci in zip(xs, ys, (chart.intervals or {}).get(name) or [None] * len(ys)):
            if y is not None and ci is not None:
                ax.errorbar([x], [y * scale], yerr=plots.whisker(y, ci, scale), color=colour, capsize=3, linewidth=1)
            if y is not None and label_points:
                ax.annotate(
                    plots.fmt(y * scale, chart.pct),
                    (x, y * scale),
                    textcoords="offset points",
                    xytext=(6, 4),
                    fontsize=7,
                    color=colour,
                )
        gaps = [x for x, y in zip(xs, ys) if y is None]
        if gaps:
            ax.plot(gaps, [lo] * len(gaps), marker="x", linestyle="", color=colour, clip_on=False)
    for k, (name, value) in enumerate((chart.baselines or {}).items()):
        ax.axhline(value * scale, color="black", linestyle=(0, (4, 2 + k)), linewidth=1, label=name)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([plots.n_label(str(x), [n]) for x, n in zip(xs, chart.ns)], fontsize=8)
    ax.set_xlabel(xlabel)
    _axes(ax, chart, lo, hi, title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return plots.save(fig, path)


@plots.never_fatal
def chart_bars(path: Path, groups: Sequence[str], chart: Chart, *, title: str) -> Path | str:
    """A chart as grouped bars (one group per setting, n under each)."""
    labels = [plots.n_label(g, [n]) for g, n in zip(groups, chart.ns)]
    return plots.grouped_bars(
        path,
        labels,
        chart.series,
        title=title,
        ylabel=chart.ylabel,
        ylim=chart.limits(),
        pct=chart.pct,
        intervals=chart.intervals,
        baselines=chart.baselines,
        legend_outside=len(chart.series) > 2,
        skip_empty=False,
    )


@plots.never_fatal
def bars(
    path: Path,
    groups: Sequence[str],
    series: dict[str, list[float | None]],
    *,
    title: str,
    ylabel: str,
    baselines: dict[str, float] | None = None,
) -> Path | str:
    """Grouped bars with a legend outside the axes and a zero line (correlations can be negative);
    an undefined value is a marked gap ("n/a"), never a bar of height 0."""
    return plots.grouped_bars(
        path,
        groups,
        series,
        title=title,
        ylabel=ylabel,
        ylim=_ylim(series),
        baselines=baselines,
        legend_outside=True,
        skip_empty=False,
    )


def _axes(ax: Axes, chart: Chart, lo: float, hi: float, title: str) -> None:
    ax.set_ylabel(chart.ylabel + (" (%)" if chart.pct else ""))
    ax.set_title(title, fontsize=10)
    ax.set_ylim(lo, hi)
    if lo < 0:  # a value of 0 (kappa: chance agreement) sits on a visible line, not on the frame
        ax.axhline(0, color="grey", linewidth=0.8)


def _ylim(series: dict[str, list[float | None]]) -> tuple[float, float]:
    vals = [v for vs in series.values() for v in vs if v is not None]
    lo = min([0.0] + vals)
    return (lo - 0.05 if lo < 0 else 0.0, 1.0)


def _num(v: float, pct: bool) -> str:
    return f"{100 * v:.1f}%" if pct else f"{v:.3f}"


def fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def fmt_ci(v: float | None, ci: tuple[float, float] | None, digits: int = 3) -> str:
    """A value with its 95% interval, as in the tables: 0.500 [0.120, 0.810]."""
    return fmt(v, digits) + ("" if v is None or ci is None else f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]")
