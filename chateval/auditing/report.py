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


def headline(summary: AuditSummary) -> list[dict[str, Any]]:
    """One row per bias: what the viewer's header table and the console show."""
    return [
        {
            "bias": b.bias,
            "perturbation": b.perturbation,
            "flip rate": _pct(b.rate),
            "95% CI": _ci(b.ci95),
            "n": b.n,
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
        + ". n counts the variants compared; 95% intervals are Wilson's. Where a perturbation makes several "
        "variants of one item (each side, each form) they are not independent, so the interval is "
        "narrower than the item count alone would give; `items` says how many items they come from.",
        "",
        "| bias | perturbation | flip rate | 95% CI | n | items | direction of the flips | toward means |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for b in s.biases:
        lines.append(
            f"| {b.bias} | `{b.perturbation}` | {_pct(b.rate)} | {_ci(b.ci95)} | {b.n} | {b.n_items} | "
            f"{_direction(b)} | {b.toward_means} |"
        )
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
    flipped = [v for v in s.variants if v.flipped]
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
            "all flips": [b.rate for b in biases],
            "toward the favoured answer": [share(b.toward, b) for b in biases],
            "away from it": [share(b.away, b) for b in biases],
        },
        pct=True,
        ylabel="share of variants",
        intervals={"all flips": [b.ci95 for b in biases]},
        title=f"audit: verdict flips per perturbation (all flips with 95% Wilson intervals)\njudge: {summary.model}",
    )


def write_report(out: Path, summary: AuditSummary) -> Path:
    from ..view import build_view

    chart = draw(summary, out)
    atomic_write(out / REPORT, render(summary, out, chart))
    build_view([out], out / VIEW)  # the page the report's links point into
    return out / REPORT
