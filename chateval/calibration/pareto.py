"""The cost-against-agreement plot of a calibration (``OUT/cost_agreement.png``): one point per
setting (its primary metric with the 95% interval against its cost per item), the Pareto front
(settings no other one beats on both) as a line, the recommended setting circled.

matplotlib is imported when a plot is drawn, not when the calibration package is."""

from __future__ import annotations

from pathlib import Path

from .recommend import NAMES, cost_of, metric_value, priced
from .records import CalibrationSummary

PLOT = "cost_agreement.png"


def draw(out: Path, summary: CalibrationSummary) -> Path | str:
    """The plot, or why it was not drawn (the report says so instead of linking a stale file)."""
    from ..util.extras import not_drawn

    why = not_drawn()
    if why:  # the judge's core install: no matplotlib (the plots extra)
        (out / PLOT).unlink(missing_ok=True)
        return why
    from ..bench.plots import colours, drop, never_fatal, plt, save, whisker  # lazily: matplotlib

    @never_fatal
    def figure(path: Path) -> Path | str:
        m = summary.primary_metric
        every = list(summary.settings.values())
        in_usd = priced(every)
        pts = [(r, cost_of(r, in_usd), v) for r in every if (v := metric_value(r, m)) is not None]
        if len(pts) < 2:
            return drop(path, f"fewer than two settings with a defined {NAMES[m]}")
        fig, ax = plt.subplots(figsize=(7, 4.5))
        seen: dict[tuple[float, float], int] = {}  # settings at one point: their labels stacked, not overprinted
        for (r, x, y), colour in zip(pts, colours(len(pts))):
            k = seen[(round(x, 9), round(y, 9))] = seen.get((round(x, 9), round(y, 9)), -1) + 1
            s = r.agreement[m]
            if s.ci95 is not None:
                ax.errorbar([x], [y], yerr=whisker(y, (s.ci95[0], s.ci95[1])), color=colour, capsize=3, linewidth=1)
            ax.scatter([x], [y], color=colour, zorder=3)
            ax.annotate(r.setting.name, (x, y), textcoords="offset points", xytext=(5, 4 + 10 * k), fontsize=8)
            if r.setting.name == summary.recommended:
                ax.scatter([x], [y], s=260, facecolors="none", edgecolors="black", linewidths=1.5, zorder=4)
        front = {n: i for i, n in enumerate(summary.pareto)}
        line = sorted(((x, y) for r, x, y in pts if r.setting.name in front), key=lambda p: p[0])
        if line:
            ax.step([p[0] for p in line], [p[1] for p in line], where="post", color="grey", linestyle="--", linewidth=1)
        ax.margins(x=0.2)  # room for the labels right of the rightmost points
        ax.set_xlabel("USD per item (cache hits at their cold price)" if in_usd else "model calls per item")
        ax.set_ylabel(f"{NAMES[m]} with the human reference")
        judge = "offline (heuristic, not an LLM)" if summary.offline else summary.model
        ax.set_title(
            f"calibration: cost against agreement (95% CI); dashed: Pareto front; circled: recommended\n(judge: {judge})",
            fontsize=9,
        )
        fig.tight_layout()
        return save(fig, path)

    return figure(out / PLOT)


def lines(out: Path) -> list[str]:
    """The report's lines for the plot (none when it was not drawn: fewer than two points)."""
    return [f"![cost against agreement, with the Pareto front]({PLOT})", ""] if (out / PLOT).exists() else []
