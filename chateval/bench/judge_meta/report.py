"""The reports of a judge meta-evaluation run (FairEval, Topical-Chat): one sub-run's report.md,
and the top-level report.md with its settings table, sweeps and figures (ChatEval Tables 1-4 and
Figure 3). The benchmark supplies its metrics, charts and extra sections (``MetaReporter``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ...runs.files import atomic_write
from ...runs.savings import savings_lines
from ...util.text import md, md_all
from .. import plots
from ..comparisons import report_lines
from .meta_settings import Setting
from .plots import Chart, chart_bars, sweep_lines
from .sweeps import NUMERIC_DIMS

OFFLINE_JUDGE = "offline (heuristic, not an LLM)"


class MetaReporter(Protocol):
    """What the reports need from a judge meta-evaluation benchmark (JudgeMetaBenchmark)."""

    @property
    def title(self) -> str: ...

    @property
    def task(self) -> str: ...

    def metric_headers(self) -> list[str]: ...

    def metric_cells(self, metrics: dict[str, Any]) -> list[str]: ...

    def charts(self, summaries: Sequence[dict[str, Any]]) -> list[Chart]: ...

    def setting_report(self, path: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> list[str]: ...

    def extra_sections(self, out: Path, summary: dict[str, Any]) -> list[str]: ...

    def header_lines(self, summary: dict[str, Any]) -> list[str]: ...


def write_setting_report(
    bench: MetaReporter, path: Path, summary: dict[str, Any], records: list[dict[str, Any]]
) -> None:
    """report.md of one setting's sub-run."""
    summary, records = md_all(summary), md_all(records)  # text from the data reaches report.md escaped
    p = summary["panel"]
    lines = [f"# {bench.title} — setting `{summary['setting']}`", ""]
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}. Rows from it are labelled `{OFFLINE_JUDGE}`.", ""]
    lines += [
        f"Judge: {summary['judge']} · strategy {p['strategy']} · {p['agents']} agent(s) "
        f"({', '.join(p['personas'])}) · {p['turns']} turn(s) · aggregate {p['aggregate']}"
        + (" · position calibration (both orders)" if p["swap"] else ""),
        "",
    ]
    lines += settings_table(bench, [summary], first="setting", labels=[summary["setting"]])
    saved = savings_lines(summary)
    if saved:
        lines += ["", *saved]
    lines += bench.setting_report(path, summary, records)
    failed = [r for r in records if r.get("status") != "ok"]
    if failed:
        lines += ["", "## Failed units", ""] + [f"- {r.get('key')}: {r.get('error')}" for r in failed[:50]]
    atomic_write(path / "report.md", "\n".join(lines) + "\n")


def settings_table(
    bench: MetaReporter, summaries: Sequence[dict[str, Any]], *, first: str, labels: Sequence[str]
) -> list[str]:
    """The settings table: one row per summary (a setting, or a sweep's point)."""
    head = [first, "judge", "strategy", "agents", "turns", "personas"]
    if bench.task == "pairwise":
        head.append("swap")
    head += bench.metric_headers() + ["n", "parse failures", "failed", "calls", "tokens", "cost", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, s in zip(labels, summaries):
        p, u = s["panel"], s["usage"]
        cells = [label, s["judge"], p["strategy"], str(p["agents"]), str(p["turns"]), ", ".join(p["personas"])]
        if bench.task == "pairwise":
            cells.append("yes" if p["swap"] else "no")
        tokens = u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
        cost = u.get("cost_usd")
        cells += bench.metric_cells(s["metrics"]) + [
            f"{s['n_ok']}/{s['n_units']}",
            f"{s['parse_errors']}/{s['agent_verdicts']}" + (f" ({s['reasked']} re-asked)" if s["reasked"] else ""),
            str(s["n_failed"]),
            f"{u.get('calls', 0)}" + (f" (+{u['cached_calls']} cached)" if u.get("cached_calls") else ""),
            ("~" if u.get("tokens_approx") else "") + f"{tokens:,}",
            "unknown" if cost is None else f"${cost:.4f}",
            f"{s['wall_time_s']:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_report(
    bench: MetaReporter, out: Path, summary: dict[str, Any], settings: list[Setting], sweeps: dict[str, list[Setting]]
) -> None:
    """The top-level report.md comparing the settings and sweeps."""
    summary = md_all(summary)  # text from the data reaches report.md escaped (keys too: look up with md())
    # Every figure is redrawn below: older ones (another sweep, earlier versions' settings.png) go, under
    # this benchmark's own figure names only (check_top_folder made sure the folder is its run's).
    for old in [*out.glob("settings*.png"), *out.glob("sweep_*.png")]:
        old.unlink()
    lines = [f"# {bench.title} — chateval report", ""]
    if summary.get("note"):
        lines += [
            f"> **Note:** {summary['note']}. Its rows are labelled `{OFFLINE_JUDGE}`; they test the "
            "pipeline and are not LLM results.",
            "",
        ]
    lines += bench.header_lines(summary)
    lines += bench.extra_sections(out, summary)
    if settings:
        sums = [summary["settings"][md(s.name)] for s in settings]
        lines += ["## Settings", ""]
        lines += settings_table(bench, sums, first="setting", labels=[md(s.name) for s in settings])
        lines += ["", "Sub-runs: " + ", ".join(f"{md(s.name)} → {md(out / s.run_dir)}" for s in settings), ""]
        for s, sm in zip(settings, sums):
            saved = savings_lines(sm)
            if saved:
                lines += [f"Setting {md(s.name)}:", "", *saved, ""]
        if len(settings) > 1:
            for chart in bench.charts(sums):
                png = f"settings_{chart.key}.png"
                drawn = chart_bars(
                    out / png,
                    [s.name for s in settings],
                    chart,
                    title=f"{bench.title}: {chart.name} per setting\n(judge: {sums[0]['judge']})",
                )
                lines += plots.link(drawn, f"settings: {chart.key}", png) + chart.baseline_note()
    for dim, pts in sweeps.items():
        sums = [summary["runs"][md(s.run_dir)] for s in pts]
        lines += [f"## Sweep: {dim}", ""]
        lines += settings_table(bench, sums, first=f"{dim} (swept)", labels=[md(s.value) for s in pts])
        shared = [f"{md(s.label)} = {md(s.run_dir)}" for s in pts if s.run_dir != s.name]
        if shared:
            lines += ["", "Same judge as another setting, so the same sub-run: " + ", ".join(shared)]
        lines.append("")
        for chart in bench.charts(sums):
            png = f"sweep_{dim}_{chart.key}.png"
            title = f"{bench.title}: {chart.name} over {dim}\n(judge: {sums[0]['judge']})"
            if dim in NUMERIC_DIMS:
                drawn = sweep_lines(out / png, [s.value for s in pts], chart, title=title, xlabel=dim)
            else:
                drawn = chart_bars(out / png, [str(s.value) for s in pts], chart, title=title)
            lines += plots.link(drawn, f"sweep {dim}: {chart.key}", png) + chart.baseline_note()
    lines += report_lines(summary)
    atomic_write(out / "report.md", "\n".join(lines) + "\n")
