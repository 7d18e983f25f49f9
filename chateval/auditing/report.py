"""An audit's report: report.md (the flip rate per bias with its interval, n and direction;
every flipped variant linked to its place in the viewer page), the chart, and view.html."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records.audit import AuditSummary, BiasSummary
from ..runs.files import atomic_write
from ..util.extras import not_drawn
from ..view.samples import anchor

REPORT, CHART, VIEW = "report.md", "flip_rates.png", "view.html"
MAX_LISTED = 200  # flipped variants listed in report.md (all of them are in summary.json)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: Any) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _net(b: BiasSummary) -> str:
    d = b.net_of_length
    if d is None or d.diff is None:
        return "–"
    ci = "" if d.ci95 is None else f" [{100 * d.ci95[0]:+.1f}, {100 * d.ci95[1]:+.1f}]"
    p = "" if d.p_value is None else f", p {d.p_value:.3g}"
    return f"{100 * d.diff:+.1f} pts{ci}{p}"


def headline(summary: AuditSummary) -> list[dict[str, Any]]:
    """One row per bias: what the viewer's header table and the console show. ``flip rate`` is
    the headline: flips toward the favoured answer where it had lost (all flips for a
    perturbation favouring no answer)."""
    return [
        {
            "bias": b.bias,
            "perturbation": b.perturbation,
            "flip rate": _pct(b.headline_rate),
            "95% CI": _ci(b.ci95_lost if b.n_lost else b.ci95),
            "n": b.n_lost or b.n,
            "net of length": _net(b),
            "had won: flip rate": _pct(b.rate_won) if b.n_won else "–",
            "all variants": _pct(b.rate),
            "items": b.n_items,
            "flips": b.flips,
            "toward": b.toward,
            "away": b.away,
        }
        for b in summary.biases
    ]


def _direction(b: BiasSummary) -> str:
    if not b.flips:
        return "–"
    if b.toward + b.away == 0:
        return "n/a"
    return f"{b.toward} toward / {b.away} away"


def render(summary: AuditSummary, out: Path, chart: Path | str | None) -> str:
    s = summary
    u = s.usage
    lines = [f"# chateval audit: {out.name}", ""]
    if s.note:
        lines += [f"> **Note:** {s.note}. These flip rates test the pipeline; they are not an LLM judge's biases.", ""]
    j = s.judge
    lines += [
        "| | |",
        "|---|---|",
        f"| input | `{s.input}` ({s.n_items} items, task {s.task}) |",
        f"| judge | {s.model}: {j.get('strategy')}, {j.get('agents')} agents ({', '.join(j.get('personas') or [])}),"
        f" {j.get('turns')} turns{', both orders (--swap)' if j.get('swap') else ''} |",
        f"| variants judged | {s.n_ok} ok, {s.n_failed} failed of {s.n_units} (originals included)"
        f"{'' if s.complete else ' — incomplete run: --resume continues it'} |",
        f"| model calls | {u.get('calls', 0)} (+{u.get('cached_calls', 0)} from cache); "
        f"{s.calls_per_item if s.calls_per_item is not None else 0:.1f} per item |",
        f"| wall time | {s.wall_time_s:.1f} s |",
        "",
    ]
    lines += [
        "## Flip rate per bias",
        "",
        "A variant *flips* when the judge's verdict on it differs from its verdict on the original item"
        + (f" (score task: the score moves by at least {s.score_threshold:g})" if s.score_threshold else "")
        + ". **flip rate** is the headline: among the variants that favour the answer that had *lost* the "
        "original verdict (pairwise: the other answer won or it was a tie; correctness: not judged correct; "
        "score: every variant), the share whose verdict moved toward it — a judge that always obeys the "
        "perturbation reads 100%. Variants favouring the answer that had already won can only flip away; "
        "they are shown apart (*had won*), and *all variants* pools both halves. Verbosity comes first: "
        "it is the pure length effect. **net of length**: every variant that adds words is also judged "
        "with those words replaced by as many neutral ones (its length-matched control); the column is "
        "the headline minus the controls' rate on the same variants, in points, with a paired 95% "
        "interval and p (items as clusters). n counts the variants compared; 95% intervals are "
        "Wilson's. Where a perturbation makes several variants of one item (each side, each form) "
        "they are not independent, so the interval is narrower than the item count alone would give; "
        "`items` says how many items they come from.",
        "",
        "| bias | perturbation | flip rate (had lost) | 95% CI | n | net of length [95% CI], p | had won: flip rate (n) "
        "| all variants | items | direction of the flips | toward means |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b in s.biases:
        won = f"{_pct(b.rate_won)} ({b.n_won})" if b.n_won else "–"
        lines.append(
            f"| {b.bias} | `{b.perturbation}` | {_pct(b.headline_rate)} | {_ci(b.ci95_lost if b.n_lost else b.ci95)} | "
            f"{b.n_lost or b.n} | {_net(b)} | {won} | {_pct(b.rate)} ({b.n}) | {b.n_items} | "
            f"{_direction(b)} | {b.toward_means} |"
        )
    few = [b for b in s.biases if b.net_of_length is not None and b.net_of_length.few_clusters]
    if few:
        lines += [
            "",
            f"Few items ({', '.join(sorted({str(b.net_of_length.n_clusters) for b in few if b.net_of_length}))}; "
            "fewer than 20): the net-of-length intervals are inverted exact permutation tests over items.",
        ]
    lines.append("")
    if isinstance(chart, Path):
        lines += [f"![flip rates]({chart.name})", ""]
    elif chart:
        lines += [f"*Plot `{CHART}` not drawn: {chart}.*", ""]  # bench.plots.skipped's note
    if s.skipped:
        lines += ["## Not run", ""] + [f"- `{name}`: {why}" for name, why in s.skipped.items()] + [""]
    missing = [b for b in s.biases if b.not_compared]
    if missing:
        lines += [
            "Variants not compared (the variant or its original failed or gave no verdict): "
            + ", ".join(f"`{b.perturbation}` {b.not_compared}" for b in missing),
            "",
        ]
    lines += ["## Per variant", "", "| perturbation | variant | flip rate | 95% CI | n |", "|---|---|---|---|---|"]
    for b in s.biases:
        for name, stats in b.by_variant.items():
            lines.append(
                f"| `{b.perturbation}` | {name} | {_pct(stats['rate'])} | {_ci(stats.get('ci95'))} | {stats['n']} |"
            )
    flipped = [v for v in s.variants if v.flipped and not v.control]
    lines += [
        "",
        f"## Flipped variants ({len(flipped)})",
        "",
        f"Each links to the variant's debate in [{VIEW}]({VIEW}) (the original's is next to it, in the same "
        "row); `chateval view` on this folder writes it again.",
        "",
        "| item | perturbation | variant | original verdict | perturbed verdict | direction |",
        "|---|---|---|---|---|---|",
    ]
    for v in flipped[:MAX_LISTED]:
        lines.append(
            f"| [{v.item}]({VIEW}#{anchor(v.original_key)}) | `{v.perturbation}` | "
            f"[{v.variant}]({VIEW}#{anchor(v.key)}) | {_fmt(v.original)} | {_fmt(v.perturbed)} | "
            f"{v.direction or '–'} |"
        )
    if len(flipped) > MAX_LISTED:
        lines += ["", f"… and {len(flipped) - MAX_LISTED} more (all are in summary.json under `variants`)."]
    if s.failed_keys:
        lines += ["", "## Failed variants", "", ", ".join(f"`{k}`" for k in s.failed_keys[:100])]
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "correct" if v else "incorrect"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def draw(summary: AuditSummary, out: Path) -> Path | str:
    why = not_drawn()
    if why:
        (out / CHART).unlink(missing_ok=True)  # an older run's chart would not match this report
        return why
    from ..bench import plots  # matplotlib: only when a figure is drawn (the plots extra)

    biases = [b for b in summary.biases]
    if not biases:
        return plots.drop(out / CHART, "no perturbation ran")
    groups = [plots.n_label(b.bias, [b.n]) for b in biases]

    # The flips split by direction next to their total: a bias shows as flips toward the favoured answer.
    def share(k: int, b: BiasSummary) -> float | None:
        return None if not b.n else k / b.n

    return plots.grouped_bars(
        out / CHART,
        groups,
        {
            "flip rate (favoured answer had lost)": [b.headline_rate for b in biases],
            "its length-matched control": [b.control_rate_lost for b in biases],
            "all variants: all flips": [b.rate for b in biases],
            "all variants: away from the favoured answer": [share(b.away, b) for b in biases],
        },
        pct=True,
        ylabel="share of variants",
        intervals={
            "flip rate (favoured answer had lost)": [b.ci95_lost if b.n_lost else b.ci95 for b in biases],
            "all variants: all flips": [b.ci95 for b in biases],
        },
        title=f"audit: verdict flips per perturbation (95% Wilson intervals)\njudge: {summary.model}",
    )


def write_report(out: Path, summary: AuditSummary, *, page: bool = True) -> Path:
    """report.md and the chart; with ``page``, view.html too (:func:`write_page`)."""
    chart = draw(summary, out)
    atomic_write(out / REPORT, render(summary, out, chart))
    if page:
        write_page(out)
    return out / REPORT


def write_page(out: Path) -> None:
    """The page the report's links point into; it reads the run's files, not the summary model."""
    from ..view import build_view

    build_view([out], out / VIEW)
