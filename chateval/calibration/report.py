"""The calibration's verdict line and report.md with its charts, from the summary record only."""

from __future__ import annotations

from pathlib import Path

from ..debate.tasks import TASKS, get_task
from ..paired import PairedDifference
from ..runs.files import atomic_write
from ..stats.self_consistency import consistency_text
from ..util.extras import not_drawn
from . import pareto
from .recommend import NAMES, pick_best  # NAMES: the metrics' display names, one copy
from .records import CalibrationSummary, SettingResult, Stat

ALPHA = 0.05
OFFLINE_JUDGE = "offline (heuristic, not an LLM)"


def _diff(r: SettingResult, metric: str) -> PairedDifference | None:
    return r.vs_baseline.get(metric)


def conclude(summary: CalibrationSummary) -> CalibrationSummary:
    """Which setting agrees best (primary metric) and whether it beats the baseline: a positive
    paired difference with p < 0.05. The same line is the summary's headline."""
    _conclude(summary)
    summary.headline = summary.conclusion
    return summary


def _conclude(summary: CalibrationSummary) -> CalibrationSummary:
    m = summary.primary_metric
    scored = [
        (r, v) for r in summary.settings.values() if r.agreement.get(m) and (v := r.agreement[m].value) is not None
    ]
    if not scored:
        summary.best, summary.beats_baseline = None, None
        summary.conclusion = f"No setting has a defined {NAMES[m]} with the human reference."
        return summary
    best = pick_best(summary) or scored[0][0]  # an exact tie: the cheaper setting
    value = next(v for r, v in scored if r is best)
    summary.best = best.setting.name
    what = f"{NAMES[m]} {value:.3f}"
    tag = " (offline model: a pipeline check, not an LLM result)" if summary.offline else ""
    if best.setting.name == summary.baseline:
        summary.beats_baseline = False
        summary.conclusion = (
            f"The baseline '{summary.baseline}' agrees best with the human reference ({what}); no panel beats it{tag}."
        )
        return summary
    d = _diff(best, m)
    if d is None or d.diff is None or d.p_value is None:
        summary.beats_baseline = None
        summary.conclusion = (
            f"'{best.setting.name}' agrees best ({what}); its difference from "
            f"'{summary.baseline}' is undefined ({d.reason if d else 'no paired items'}){tag}."
        )
        return summary
    sig = d.diff > 0 and d.p_value < ALPHA
    summary.beats_baseline = sig
    ci = "" if d.ci95 is None else f", 95% CI [{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]"
    summary.conclusion = (
        f"'{best.setting.name}' agrees best ({what}); it "
        f"{'beats' if sig else 'does not significantly beat'} '{summary.baseline}' "
        f"({NAMES[m]} {d.diff:+.3f}{ci}, paired p = {d.p_value:.3g}, n = {d.n}){tag}."
    )
    return summary


def _clusters(summary: CalibrationSummary) -> str:
    if summary.n_clusters is None:
        return ""
    return (
        f", drawn in {summary.n_clusters} clusters (items that share a `cluster`, e.g. Topical-Chat's responses "
        "to one context, are drawn and permuted together)"
    )


def _stat(s: Stat | None, pct: bool = False) -> str:
    if s is None:
        return "–"
    if s.value is None:
        return f"undefined ({s.reason})"
    f = (lambda v: f"{100 * v:.1f}") if pct else (lambda v: f"{v:.3f}")
    return f(s.value) + ("" if s.ci95 is None else f" [{f(s.ci95[0])}, {f(s.ci95[1])}]")


def _paired(d: PairedDifference | None) -> str:
    if d is None:
        return "–"
    if d.diff is None:
        return f"undefined ({d.reason})"
    ci = "" if d.ci95 is None else f" [{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]"
    p = "—" if d.p_value is None else ("<0.001" if d.p_value < 0.001 else f"{d.p_value:.3f}")
    return f"{d.diff:+.3f}{ci}, p={p}"


def _reference_kind(task: str) -> str:
    """How the task format combines several annotators' labels (mean, majority)."""
    return get_task(task).reference_kind if task in TASKS else "majority"


def render(out: Path, summary: CalibrationSummary) -> str:
    metrics = list(next(iter(summary.settings.values())).agreement) if summary.settings else []
    lines = [f"# chateval calibrate: {out.name}", ""]
    if summary.offline:
        lines += [
            f"> **Note:** {summary.note}. Every row is labelled `{OFFLINE_JUDGE}`; the numbers test the "
            "pipeline and are not LLM results.",
            "",
        ]
    lines += answer_first(out, summary)
    lines += [
        f"**{summary.conclusion}**",
        "",
        f"Input: `{summary.input}` ({summary.input_format} format, task {summary.task}) — {summary.n_items} "
        f"items, {summary.n_reference} with a usable human reference"
        + (
            f", {summary.n_multi_annotated} with several annotators (reference: their {_reference_kind(summary.task)})"
            if summary.n_multi_annotated
            else ""
        )
        + ".",
        "",
        f"Intervals: 95% percentile bootstrap over items{_clusters(summary)} ({summary.resamples} resamples, seed "
        f"{summary.seed}). Paired difference from the baseline `{summary.baseline}`: the same items, the same "
        "resampled indices for both settings, and a paired test (McNemar's exact test for accuracy, a paired "
        "permutation test for the other statistics; chateval.paired).",
        "",
    ]
    head = ["setting", "judge", "panel"] + [NAMES[m] + (" %" if m == "accuracy" else "") + " [95% CI]" for m in metrics]
    head += [f"Δ{NAMES[m]} vs {summary.baseline}" for m in metrics]
    head += ["n ok/items", "calls/item", "tokens/item", "cost/item", "wall s"]
    lines += ["## Settings", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in summary.settings.values():
        p = r.panel
        judge = OFFLINE_JUDGE if summary.offline else p.model
        panel = f"{p.strategy}, {p.agents}×{p.turns} ({', '.join(p.personas)})" + (", swap" if p.swap else "")
        cells = [f"`{r.setting.name}`" + (" (baseline)" if r.setting.name == summary.baseline else ""), judge, panel]
        cells += [_stat(r.agreement.get(m), pct=m == "accuracy") for m in metrics]
        cells += ["–" if r.setting.name == summary.baseline else _paired(_diff(r, m)) for m in metrics]
        cost = "unknown" if r.per_item.cost_usd is None else f"${r.per_item.cost_usd:.5f}"
        cells += [
            f"{r.n_ok}/{r.n_items}" + ("" if r.complete else " (incomplete)"),
            f"{r.per_item.calls:.1f}",
            ("~" if r.per_item.tokens_approx else "") + f"{r.per_item.tokens:,.0f}",
            cost,
            f"{r.wall_time_s:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Calls and tokens per item count cache hits too (what the setting costs on a cold cache); each "
        "sub-run's summary.json has the split.",
        "",
    ]
    spread = [
        (r.setting.name, consistency_text({"self_consistency": r.self_consistency})) for r in summary.settings.values()
    ]
    if any(text for _, text in spread):
        lines += ["## Self-consistency (settings with samples > 1)", ""]
        lines += [f"- `{name}`: {text}" for name, text in spread if text] + [""]
    if summary.ceiling:
        c = summary.ceiling
        lines += [
            "## Human ceiling",
            "",
            f"The annotators' own agreement, leave-one-out: each annotator's label against the "
            f"{_reference_kind(summary.task)} of the item's other annotators, pooled over "
            f"{c.n_pairs} (item, annotator) pairs on {c.n_items} items; 95% bootstrap over items. "
            + ", ".join(f"{NAMES[m]}: {_stat(s, pct=m == 'accuracy')}" for m, s in c.agreement.items())
            + ".",
            "A judge compared with all the annotators' reference is measured against a slightly better "
            "reference than each annotator here.",
            "",
        ]
        lines += _multi_rater(c.multi_rater, summary.task)
    lines += _judge_matrix(summary)
    why = not_drawn()
    for m in metrics:
        png = f"agreement_{m}.png"
        if (out / png).exists():
            lines += [f"![{NAMES[m]} per setting]({png})", ""]
        elif why:
            lines += [f"*Plot `{png}` not drawn: {why}.*", ""]
    lines += ["## Sub-runs", ""] + [
        f"- `{r.setting.name}` (`{r.setting.spec()}`): `{out / r.run_dir}` — `chateval view {out / r.run_dir}`"
        for r in summary.settings.values()
    ]
    return "\n".join(lines) + "\n"


def _multi_rater(stats: dict[str, Stat], task: str) -> list[str]:
    if not stats:
        return []
    alpha, fleiss = stats.get("krippendorff_alpha"), stats.get("fleiss_kappa")
    level = "interval, averaged over the aspects" if task == "score" else "nominal"
    out = ["All the annotators at once (chance-corrected, no interval):", ""]
    if alpha is not None:
        out.append(f"- Krippendorff's alpha ({level}, {alpha.n} items): {_stat(alpha)}")
    if fleiss is not None:
        extra = f" — {fleiss.reason}" if fleiss.value is not None and fleiss.reason else ""
        out.append(f"- Fleiss' kappa ({fleiss.n} items): {_stat(fleiss)}{extra}")
    return out + [""]


def _judge_matrix(summary: CalibrationSummary) -> list[str]:
    """Every pair of settings' agreement with each other: which settings are in effect one judge."""
    m = summary.judge_agreement
    if len(m) < 2:
        return []
    names = list(m)
    what = "Cohen's kappa" if summary.judge_agreement_metric == "kappa" else "Spearman's ρ (averaged over the aspects)"
    lines = [
        "## Judge vs judge",
        "",
        f"{what} between the verdicts of every pair of settings on the items both judged (1 on the diagonal "
        "when a setting gave more than one verdict): settings near 1 are in effect the same judge.",
        "",
        "| | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for a in names:
        cells = ["–" if m[a].get(b) is None else f"{m[a][b]:.3f}" for b in names]
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    return lines + [""]


def answer_first(out: Path, summary: CalibrationSummary) -> list[str]:
    """The report's opening: the recommendation and the cost-against-agreement plot."""
    if not summary.recommendation:
        return []
    ties = summary.indistinguishable
    return [
        "## Recommendation",
        "",
        f"**{summary.recommendation}**",
        "",
        f"Statistically indistinguishable from the best (cheapest first): {', '.join(f'`{n}`' for n in ties)}. "
        if len(ties) > 1
        else "",
        f"Pareto front (no other setting both cheaper and better agreeing; cheapest first): "
        f"{', '.join(f'`{n}`' for n in summary.pareto)}.",
        "",
        *pareto.lines(out),
    ]


def charts(out: Path, summary: CalibrationSummary) -> None:
    for old in out.glob("agreement_*.png"):
        old.unlink()
    if not summary.settings or not_drawn():
        return
    from ..bench.judge_meta.plots import KAPPA_RANGE, Chart, chart_bars  # matplotlib: the plots extra

    names = list(summary.settings)
    for m in next(iter(summary.settings.values())).agreement:
        stats = [r.agreement[m] for r in summary.settings.values()]
        base: dict[str, float] = {}
        ceiling = summary.ceiling.agreement.get(m) if summary.ceiling else None
        if ceiling and ceiling.value is not None:
            base["human ceiling (leave-one-out)"] = ceiling.value
        chart = Chart(
            m,
            NAMES[m],
            NAMES[m],
            {NAMES[m]: [s.value for s in stats]},
            [s.n for s in stats],
            pct=m == "accuracy",
            ylim=KAPPA_RANGE if m in ("kappa", "spearman", "kendall") else None,
            intervals={NAMES[m]: [(s.ci95[0], s.ci95[1]) if s.ci95 else None for s in stats]},
            baselines=base,
        )
        judge = OFFLINE_JUDGE if summary.offline else summary.model
        chart_bars(
            out / f"agreement_{m}.png",
            names,
            chart,
            title=f"calibration: {NAMES[m]} with the human reference (95% CI)\n(judge: {judge})",
        )


def write_report(out: Path, summary: CalibrationSummary) -> Path:
    charts(out, summary)
    pareto.draw(out, summary)
    path = out / "report.md"
    atomic_write(path, render(out, summary))
    return path
