"""``chateval calibrate``: run a grid of judge settings over a human-labelled file and say which
agrees best with the people, with intervals and a paired test against the single judge."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runs.gates import CALIBRATE_METRICS, calibrate_measures, parse_gates
from ..util.tables import print_table
from .cost import (
    EXIT_CODE_TEXT,
    EXIT_STOPPED,
    add_cost_options,
    cap_context,
    check_executor,
    print_estimate,
    report_cap,
)
from .options import add_model_options, data_set_input, given
from .outcome import add_gate_option, figures_note, gate_exit

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console

DESCRIPTION = """\
Can I trust this judge on my data? Judge every labelled item of INPUT under a grid of judge
settings and compare each with the human labels: accuracy and Cohen's kappa (labels) or Spearman
and Kendall (scores), each with a 95% bootstrap interval over items; calls, tokens and cost per
item; and the paired difference from the single judge (same items, same resamples; McNemar or a
permutation test). The report says which setting agrees best and whether it beats the single
judge significantly; --write-preset saves it for `chateval evaluate --preset`.

INPUT: the evaluate JSONL format with a human `label` per line (pairwise "1"/"2"/"tie", score
numbers or {aspect: number}, correctness true/false), or a list of labels, one per annotator
(reference: their majority, or mean for scores; their leave-one-out agreement is reported as the
human ceiling). FairEval and Topical-Chat files or folders are read as shipped.

Default grid: single (one agent, one turn: ChatEval's single-agent baseline), chateval_default
(one_by_one, 2 agents, 2 turns) and one_by_one_3x2, simultaneous_3x2, simultaneous_summarizer_3x2
(3 agents x 2 turns). Each setting is a normal evaluate run in OUT/<setting>: --resume continues
an interrupted calibration, and a second calibration reuses cached model calls."""

EPILOG = (
    """\
settings:
  --setting NAME=PRESET[,key=value,...]  or  NAME=key=value,...   (repeatable)
      PRESET: a strategies/ name, a YAML file, or `single`; keys: any judge setting (strategy,
      agents, turns, personas, aggregate, swap, summary_mode, model, temperature, ...);
      a list value goes on after its key: panel=one_by_one_3x2,personas=critic,scientist,turns=3
  --grid FILE.yaml:
      settings:
        - {name: single, preset: single}
        - {name: big, preset: one_by_one_3x2, turns: 3}
  The baseline (--baseline, default `single`) is added when the grid lacks it.

exit codes: 0 every item judged under every setting; 1 some items failed (see summary.json);
2 bad input or settings (nothing was sent to a model); """
    + EXIT_CODE_TEXT
    + """;
4 a --fail-under gate was not met (without :SETTING, on the recommended setting); 130 interrupted (rerun with --resume)."""
)


def add_parser(sub: Any) -> None:
    from ..calibration.config import CalibrateConfig

    p = sub.add_parser(
        "calibrate",
        help="which judge setting agrees best with your human labels (with intervals)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", help="labelled JSONL (or a FairEval / Topical-Chat file or folder)")
    p.add_argument(
        "--setting",
        dest="setting_specs",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a judge setting of the grid (repeatable; see below)",
    )
    add_model_options(p, CalibrateConfig)
    add_gate_option(p, CALIBRATE_METRICS)
    add_cost_options(p)


def run(args: argparse.Namespace, console: Console) -> int:
    from ..calibration import CalibrateConfig, acalibrate, parse_setting
    from ..models import UsageTotals
    from ..runs.progress import RunProgress

    gates = parse_gates(args.fail_under, CALIBRATE_METRICS)
    data = given(args, CalibrateConfig) | {"input": data_set_input(args.input)}
    data["settings"] = [parse_setting(s) for s in args.setting_specs]
    cfg = CalibrateConfig.merged_from(data)
    from ..calibration.run import grid_of

    parse_gates(args.fail_under, CALIBRATE_METRICS, subjects=[s.name for s in grid_of(cfg)])  # before any judging
    import asyncio

    check_executor(args, cfg.executor)
    if args.dry_run:
        from ..calibration.dryrun import estimate_calibration

        est = asyncio.run(estimate_calibration(cfg))
        print_estimate(est, console, as_json=args.json, what="calibration")
        return 0
    progress = RunProgress(UsageTotals(), console, label="items")
    with cap_context(args) as cap:
        summary = asyncio.run(acalibrate(cfg, progress=progress))
    _table(summary, console)
    console.print(f"[bold]{summary.recommendation}[/bold]", highlight=False)
    console.print(summary.conclusion, highlight=False)
    figures = [p.name for p in sorted(Path(cfg.out).glob("agreement_*.png"))]
    figures += ["cost_agreement.png"] if (Path(cfg.out) / "cost_agreement.png").is_file() else []
    console.print(
        f"results in {cfg.out}/ (summary.json, report.md, {figures_note(figures)}; one sub-run per setting)"
        + (f"; preset written to {cfg.write_preset}" if cfg.write_preset and summary.best else ""),
        markup=False,  # '[plots]' is text
    )
    if report_cap(cap, console, "items"):
        return EXIT_STOPPED
    return gate_exit(0 if summary.complete else 1, gates, calibrate_measures(summary.model_dump(mode="json")), console)


def _table(summary: Any, console: Console) -> None:
    from rich.table import Table

    metrics = list(next(iter(summary.settings.values())).agreement) if summary.settings else []
    title = "chateval calibrate" + (" (OFFLINE model: not LLM results)" if summary.offline else "")
    table = Table(title=title)
    for col in ["setting", *metrics, f"Δ{summary.primary_metric} vs {summary.baseline}", "p", "calls/item"]:
        table.add_column(col)
    for r in summary.settings.values():
        cells = [r.setting.name + (" (recommended)" if r.setting.name == summary.recommended else "")]
        for m in metrics:
            s = r.agreement[m]
            cells.append(
                "undefined"
                if s.value is None
                else f"{s.value:.3f}" + (f" [{s.ci95[0]:.3f}, {s.ci95[1]:.3f}]" if s.ci95 else "")
            )
        d = r.vs_baseline.get(summary.primary_metric)
        cells += [
            "–" if d is None or d.diff is None else f"{d.diff:+.3f}",
            "–" if d is None or d.p_value is None else f"{d.p_value:.3g}",
            f"{r.per_item.calls:.1f}",
        ]
        table.add_row(*cells)
    print_table(console, table)
