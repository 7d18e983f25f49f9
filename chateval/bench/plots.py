"""matplotlib figures for reports (Agg backend: files only, no display needed).

Rules every figure follows, so a plot never says more (or less) than its table: the units of the
table (a % table gets a % axis), n where a bar stands for a count, 95% intervals where the summary
has them, a label on every bar (a 0 is written, not left as an invisible bar), an undefined value
drawn as a marked gap (never as 0), baselines as lines, one distinct colour per series. A figure
whose data cannot show anything is not drawn: the function returns the reason and the report
prints it (:func:`skipped`).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..runs.figure_stamps import CURRENT_STAMP, STAMP, inputs_stamp, png_stamp
from ..util.extras import not_drawn

# matplotlib comes with the memory and plots extras; without it every figure is reported as not
# drawn (naming the extra) and the reports are written all the same (calibrate, audit).
MISSING = not_drawn()

if TYPE_CHECKING:  # imported by ``load``: a report whose figures are up to date never imports matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

Interval = tuple[float, float] | None


def load() -> Any:
    """Import matplotlib (Agg backend) into this module on first use; returns pyplot."""
    if "plt" not in globals():
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
        from matplotlib.artist import Artist
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

        globals().update(
            plt=matplotlib.pyplot,
            Artist=Artist,
            Line2D=Line2D,
            Patch=Patch,
            FixedLocator=FixedLocator,
            FuncFormatter=FuncFormatter,
            NullFormatter=NullFormatter,
            NullLocator=NullLocator,
        )
    return globals()["plt"]


def colours(n: int) -> list[tuple[float, float, float, float]]:
    """n distinct colours: tab10 up to 10 series, tab20 beyond (the default cycle repeats after 10)."""
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def skipped(name: str, why: str) -> list[str]:
    """The report's note for a figure that was not drawn."""
    return [f"*Plot `{name}` not drawn: {why}.*", ""]


def link(drawn: Path | str, alt: str, name: str) -> list[str]:
    """The report's lines for a figure: its image, or why it was not drawn (never a dead link)."""
    return [f"![{alt}]({name})", ""] if isinstance(drawn, Path) else skipped(name, drawn)


def n_label(group: str, ns: Sequence[int]) -> str:
    """A group's tick label with its n; a range when the series differ (e.g. failed units)."""
    ns = sorted(set(ns)) or [0]
    return f"{group}\n(n={ns[0]}{'' if len(ns) == 1 else f'–{ns[-1]}'})"


def save(fig: plt.Figure, path: Path, **kw: Any) -> Path:
    stamp = CURRENT_STAMP.get()
    fig.savefig(path, dpi=110, metadata={STAMP: stamp} if stamp else None, **kw)
    plt.close(fig)
    return path


def drop(path: Path, why: str) -> str:
    path.unlink(missing_ok=True)  # a figure from an earlier attempt would contradict the report
    return why


def whisker(v: float, ci: tuple[float, float], scale: float = 1.0) -> list[list[float]]:
    """Error-bar lengths below and above ``v``: never negative (matplotlib refuses those), also
    when rounding leaves ``v`` a hair outside its interval (a Wilson bound at 0% or 100%)."""
    return [[max(0.0, (v - ci[0]) * scale)], [max(0.0, (ci[1] - v) * scale)]]


F = TypeVar("F", bound=Callable[..., Any])


def never_fatal(fn: F) -> F:
    """A figure that fails to draw is reported (stderr, and the reason returned like a skipped
    figure's), never an exception: report.md and summary.json are written all the same. A figure
    whose PNG was drawn from the same inputs is kept as it is (see ``STAMP``)."""

    @functools.wraps(fn)
    def wrapper(path: Path, *args: Any, **kwargs: Any) -> Any:
        if MISSING:
            return drop(Path(path), MISSING)
        token = None
        try:
            if CURRENT_STAMP.get() is None:  # the outermost figure function names the file's inputs
                stamp = inputs_stamp(fn, path, args, kwargs)
                if stamp is not None and png_stamp(Path(path)) == stamp:
                    return Path(path)
                token = CURRENT_STAMP.set(stamp)
            return fn(path, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - a plot must not cost the report
            if "matplotlib.pyplot" in sys.modules:
                sys.modules["matplotlib.pyplot"].close("all")
            why = f"drawing failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
            print(f"warning: plot {Path(path).name} not drawn: {why}", file=sys.stderr)
            return drop(Path(path), why)
        finally:
            if token is not None:
                CURRENT_STAMP.reset(token)

    return wrapper  # type: ignore[return-value]


@never_fatal
def grouped_bars(
    path: Path,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    ylabel: str,
    ylim: tuple[float, float] | None = (0, 1),
    pct: bool = False,
    intervals: Mapping[str, Sequence[Interval]] | None = None,
    baselines: dict[str, float] | None = None,
    legend_outside: bool = False,
    skip_empty: bool = True,
) -> Path | str:
    """Bars per group and series; ``pct`` draws fractions as percentages (0-100). ``ylim=None``
    fits the data (negative correlations included). Returns the path, or why nothing was drawn
    (no defined value, unless ``skip_empty`` is False: then the gaps themselves are the figure)."""
    if skip_empty and not any(v is not None for vs in series.values() for v in vs):
        return drop(path, "no defined value to draw")
    load()
    scale = 100.0 if pct else 1.0
    n_series = max(1, len(series))
    bars = len(groups) * n_series
    # About a quarter inch per bar, between 6 and 14 inches wide: readable, never a banner.
    fig, ax = plt.subplots(figsize=(min(14, max(6, 1.5 + 0.22 * bars) + (2 if legend_outside else 0)), 4.5))
    width = 0.8 / n_series
    label_bars = bars <= 30  # value labels beyond that would overlap each other
    values = [v * scale for vs in series.values() for v in vs if v is not None]
    if ylim is not None:
        lo, hi = ylim[0] * scale, ylim[1] * scale
    else:
        lo, hi = min([0.0] + values), max([0.0] + values)
        pad = 0.08 * ((hi - lo) or 1.0)
        lo, hi = (lo - pad if lo < 0 else 0.0), hi + pad
    handles: list[Artist] = []
    for i, ((name, vals), colour) in enumerate(zip(series.items(), colours(len(series)))):
        xs = [g + i * width for g in range(len(groups))]
        drawn = [(x, v * scale) for x, v in zip(xs, vals) if v is not None]
        ax.bar([x for x, _ in drawn], [v for _, v in drawn], width, color=colour)
        # A proxy, not the bars: a series with no defined value draws no bar, and its legend
        # entry would otherwise fall back to the default colour (another series' colour).
        handles.append(Patch(facecolor=colour, label=name))
        errs = (intervals or {}).get(name) or []
        for x, v, ci in zip(xs, vals, errs):
            if v is not None and ci is not None:
                ax.errorbar([x], [v * scale], yerr=whisker(v, ci, scale), color="black", capsize=3, linewidth=1)
        for x, v, ci in zip(xs, vals, list(errs) + [None] * (len(vals) - len(errs))):
            if v is None:  # undefined: a marked gap, not a bar of height 0
                ax.text(
                    x, lo + 0.02 * (hi - lo), "n/a", ha="center", va="bottom", fontsize=7, color="grey", rotation=90
                )
            elif label_bars:  # above a bar and its whisker, below a negative one (never across the zero line)
                end = v if ci is None else (max(v, ci[1]) if v >= 0 else min(v, ci[0]))
                ax.text(
                    x,
                    end * scale + (0.01 if v >= 0 else -0.01) * (hi - lo),
                    fmt(v * scale, pct),
                    ha="center",
                    va="bottom" if v >= 0 else "top",
                    fontsize=7,
                    rotation=90 if n_series >= 4 else 0,
                )
            if v == 0:  # a zero bar has no height: a stub in its colour shows it is there
                ax.plot([x - width / 2, x + width / 2], [0, 0], color=colour, linewidth=3)
    for k, (name, value) in enumerate((baselines or {}).items()):
        handles.append(ax.axhline(value * scale, color="black", linestyle=(0, (4, 2 + k)), linewidth=1, label=name))
    # Every slot, drawn or a gap, inside the axes (an "n/a" in the last slot sat on the frame).
    ax.set_xlim(-width / 2 - 0.1, len(groups) - 1 + (n_series - 0.5) * width + 0.1)
    ax.set_xticks([g + width * (n_series - 1) / 2 for g in range(len(groups))])
    long = max((len(line) for g in groups for line in g.split("\n")), default=0) > 12  # n_label's 2nd line aside
    ax.set_xticklabels(groups, rotation=20 if long else 0, ha="right" if long else "center", fontsize=8)
    ax.set_ylabel(ylabel + (" (%)" if pct else ""))
    ax.set_title(title, fontsize=10)
    # Room for the value labels: above the top, and under the lowest negative bar (vertical labels need more).
    under = (0.1 if n_series >= 4 else 0.06) * (hi - lo) if label_bars and min(values, default=0) < 0 else 0
    ax.set_ylim(min(lo, min(values, default=0) - under), hi * (1.08 if label_bars and ylim is not None else 1))
    if lo < 0:
        ax.axhline(0, color="grey", linewidth=0.5)
    if legend_outside:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(handles=handles, fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def fmt(v: float, pct: bool) -> str:
    if pct:
        return f"{v:.0f}" if v == 0 or abs(v) >= 10 else f"{v:.1f}"
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _count(x: float, _pos: object = None) -> str:
    """Token counts for a log axis: 300, 3k, 120k, 1.2M."""
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


@never_fatal
def scatter(
    path: Path,
    points: dict[str, tuple[float | None, float | None]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool = False,
    pct: bool = False,
    what: str = "x",
) -> Path | str:
    """One labelled point per system. Not drawn (returns why) when fewer than two points are
    defined or every x is the same: such an axis only shows matplotlib's padding."""
    pts = {k: (x, y) for k, (x, y) in points.items() if x is not None and y is not None}
    if len(pts) < 2:
        return drop(path, f"fewer than two systems with a defined {what}")
    if len({x for x, _ in pts.values()}) == 1:
        x = next(iter(pts.values()))[0]
        return drop(path, f"every system has the same {what} ({x:g}), so the axis has nothing to show")
    load()
    scale = 100.0 if pct else 1.0
    fig, ax = plt.subplots(figsize=(6, 4))
    for (name, (x, y)), colour in zip(pts.items(), colours(len(pts))):
        ax.scatter([x], [y * scale], color=colour)
        ax.annotate(name, (x, y * scale), textcoords="offset points", xytext=(4, 4), fontsize=8)
    xs = [x for x, _ in pts.values()]
    if logx and min(xs) > 0:
        ax.set_xscale("log")
        # Few labelled ticks, written as 3k / 120k: the default log labels (10^3, 2x10^3, ...)
        # overlap when the points span less than a decade or many decades.
        lo, hi = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
        subs = (1, 2, 5) if hi - lo <= 2 else (1,)
        step = max(1, math.ceil((hi - lo) / 6))
        ticks = [m * 10**e for e in range(lo, hi + 1, step) for m in subs]
        ax.set_xlim(min(xs) / 1.6, max(xs) * 1.6)
        ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if min(xs) / 1.6 <= t <= max(xs) * 1.6]))
        ax.xaxis.set_major_formatter(FuncFormatter(_count))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
    if pct:  # the whole 0-100 scale: equal accuracies must not look like a spread
        ax.set_ylim(0, 105)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel + (" (%)" if pct else ""))
    ax.set_title(title)
    fig.tight_layout()
    return save(fig, path)


@never_fatal
def stacked_bars(
    path: Path,
    rows: Mapping[str, Sequence[float | None]],
    segments: Sequence[str],
    *,
    title: str,
    xlabel: str = "share of cases",
    colors: Sequence[str] | None = None,
    intervals: dict[str, tuple[Interval, Interval]] | None = None,
) -> Path:
    """Horizontal stacked bars, one row per label and one segment per share (each row sums to
    1), labelled with percentages: the win/tie/loss layout of THEANINE's Figure 5.
    ``intervals`` per row: 95% intervals of the first and the last share, drawn as whiskers at the
    first segment's right edge and the last segment's left edge."""
    load()
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
    for i, lab in enumerate(labels):
        first, last = (intervals or {}).get(lab) or (None, None)
        shares = rows[lab]
        for edge, ci in (
            (shares[0], first),
            (None if shares[-1] is None else 1 - shares[-1], None if last is None else (1 - last[1], 1 - last[0])),
        ):
            if edge is not None and ci is not None:
                ax.errorbar([edge], [i], xerr=whisker(edge, ci), color="black", capsize=3, linewidth=1)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_xticklabels(["0%", "25%", "50%", "75%", "100%"])
    ax.set_xlabel(xlabel + ("; whiskers: 95% Wilson intervals" if intervals else ""))
    ax.set_title(title, pad=24)
    ax.legend(ncol=len(segments), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    return save(fig, path, bbox_inches="tight")


LINE_STYLES: tuple[Literal["-", "--", ":", "-."], ...] = ("-", "--", ":", "-.")


@never_fatal
def line_panels(
    path: Path,
    xs: Sequence[float],
    panels: dict[str, dict[str, dict[str, Sequence[float | None]]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
) -> Path:
    """Side-by-side line charts: panel -> series -> metric -> values. One colour per series, one
    line style per metric, one legend under the panels (no stranded margin)."""
    load()
    names = list(dict.fromkeys(n for series in panels.values() for n in series))
    metrics = list(dict.fromkeys(m for series in panels.values() for ms in series.values() for m in ms))
    colour = dict(zip(names, colours(len(names))))
    style = {m: LINE_STYLES[i % len(LINE_STYLES)] for i, m in enumerate(metrics)}
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.2 * len(panels) + 0.6, 4.2 + 0.18 * len(names)), sharey=True, squeeze=False
    )
    for ax, (panel, series) in zip(axes[0], panels.items()):
        for name, by_metric in series.items():
            for metric, ys in by_metric.items():
                pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker="o",
                    markersize=3,
                    color=colour[name],
                    linestyle=style[metric],
                )
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_xscale("log")  # k = 1 ... 50: evenly spaced on a log axis
        ax.xaxis.set_major_locator(FixedLocator(list(xs)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    handles = [Line2D([], [], color=colour[n], label=n) for n in names]
    handles += [Line2D([], [], color="black", linestyle=style[m], label=m) for m in metrics]
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=8, frameon=False)
    fig.suptitle(title)
    rows = math.ceil(len(handles) / 4)
    fig.tight_layout(rect=(0, 0.03 + 0.04 * rows, 1, 1))
    return save(fig, path)
