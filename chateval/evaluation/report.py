"""The report of an ``evaluate`` run: agreement with the labels, order effects, parse failures, cost.

Written by the Evaluator at the end of ``evaluate_file`` (so the Python API gets it too) from the
records and the summary, next to them in the run directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..debate.tasks import TASKS, TaskFormat, get_task
from ..models.usage import cost_text, endpoint_usage_rows, prompt_cache_text
from ..runs.files import atomic_write
from ..runs.savings import savings_lines
from ..stats.agreement import baseline_text
from ..stats.self_consistency import consistency_text
from ..util.text import md, md_all

REPORT_FILE = "report.md"


def label_agreement(records: list[dict[str, Any]], task: str) -> dict[str, Any]:
    """Agreement of the panel with the records' labels (the task format's measures); {} when no
    record has a usable label."""
    # In sample order, not finishing order: the kappa bootstrap draws by position.
    ok = sorted(
        (r for r in records if r.get("status") == "ok" and r.get("verdict")), key=lambda r: str(r.get("id", ""))
    )
    return get_task(task).agreement(ok)


def _stat(s: dict[str, Any], pct: bool = False) -> str:
    if s.get("value") is None:
        return f"undefined ({s.get('reason')}; n={s.get('n', 0)})"
    return (f"{100 * s['value']:.1f}%" if pct else f"{s['value']:.3f}") + f" (n={s['n']})"


def task_rows(summary: dict[str, Any]) -> list[str]:
    """The task format's rows about the verdicts (a task no longer registered: the verdict counts)."""
    task = summary.get("task")
    return (get_task(task) if isinstance(task, str) and task in TASKS else TaskFormat()).report_rows(summary)


def render_report(summary: dict[str, Any], run_path: Path) -> str:
    summary = md_all(summary)  # text from the data (ids, aspects, labels) reaches report.md escaped
    u = summary.get("usage") or {}
    lines = [f"# chateval evaluate: {md(run_path.name)}", ""]
    if summary.get("note"):
        lines += [f"> {summary['note']}", ""]
    lines += [
        "| | |",
        "|---|---|",
        f"| model | {summary.get('model')} |",
        f"| task | {summary.get('task')} |",
        f"| panel | {summary.get('strategy')}, {summary.get('agents')} agents, {summary.get('turns')} turns |",
        f"| samples | {summary.get('n_ok')} ok, {summary.get('n_failed')} failed of {summary.get('n_samples')}"
        f"{'' if summary.get('complete', True) else ' (incomplete run)'} |",
    ]
    lines += task_rows(summary)
    lines += [
        f"| parse failures | {summary.get('parse_errors', 0)} of {summary.get('agent_verdicts', 0)} agent verdicts"
        f" ({summary.get('reasked', 0)} re-asked) |"
    ]
    if spread := consistency_text(summary):
        lines.append(f"| self-consistency (--samples) | {spread} |")
    if "order_disagreement_rate" in summary:
        lines.append(f"| order disagreement (--swap) | {100 * summary['order_disagreement_rate']:.1f}% of samples |")
    lines += [
        f"| model calls | {u.get('calls', 0)} (+{u.get('cached_calls', 0)} from cache) |",
        f"| tokens | {u.get('prompt_tokens', 0):,} prompt + {u.get('completion_tokens', 0):,} completion"
        f"{' (approximate: counted locally)' if u.get('tokens_approx') else ''} |",
        f"| provider prompt cache | {prompt_cache_text(u) or 'no cached input tokens reported'} |",
        f"| cost | {cost_text(u)} |",
        *(f"| {name.strip()} | {text} |" for name, text in endpoint_usage_rows(summary.get("usage_by_endpoint"))),
        f"| wall time | {summary.get('wall_time_s', 0.0):.1f} s |",
        "",
    ]
    saved = savings_lines(summary)
    if saved:
        lines += ["## Calls saved", "", *saved, ""]
    agr = summary.get("agreement") or {}
    lines += [
        "## Scores and agreement with the labels" if agr.get("aspect_means") else "## Agreement with the labels",
        "",
    ]
    if not agr:
        lines += ["No record carries a usable label, so there is nothing to agree with.", ""]
    if "accuracy" in agr:
        ci, boot = agr.get("kappa_ci95"), agr.get("kappa_bootstrap") or {}
        interval = (
            f", 95% CI [{ci[0]:.3f}, {ci[1]:.3f}] (percentile bootstrap over samples: {boot['used']} of "
            f"{boot['resamples']} resamples usable, seed {boot['seed']})"
            if ci
            else ""
        )
        base = baseline_text(agr)
        lines += (
            [f"- accuracy: {_stat(agr['accuracy'], pct=True)}"]
            + ([f"  - read against: {base}"] if base else [])
            + [f"- Cohen's kappa: {_stat(agr['kappa'])}{interval}", ""]
        )
    if agr.get("aspect_means"):
        lines += ["| aspect | panel mean | Spearman | Kendall |", "|---|---|---|---|"]
        for a, m in agr["aspect_means"].items():
            c = (agr.get("aspects") or {}).get(a)
            cells = [_stat(c["spearman"]), _stat(c["kendall"])] if c else ["no label", "no label"]
            lines.append(f"| {a} | {'—' if m is None else f'{m:.2f}'} | {cells[0]} | {cells[1]} |")
        lines.append("")
    if "overall" in agr:
        lines += [
            f"- overall score: Spearman {_stat(agr['overall']['spearman'])}, "
            f"Kendall {_stat(agr['overall']['kendall'])}",
            "",
        ]
    if summary.get("failed_ids"):
        lines += ["## Failed samples", "", ", ".join(str(i) for i in summary["failed_ids"]), ""]
    lines += ["## Read the debates", "", f"    chateval view {md(run_path)}", ""]
    return "\n".join(lines)


def write_report(run_path: str | Path, summary: dict[str, Any]) -> Path:
    path = Path(run_path) / REPORT_FILE
    atomic_write(path, render_report(summary, Path(run_path)))
    return path
