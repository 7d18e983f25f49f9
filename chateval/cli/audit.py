"""``chateval audit``: measure one judge setting's biases by perturbing the input (argparse only;
the work is in chateval.auditing)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..util.tables import print_table
from .evaluate import add_judge_options, config_from_args
from .options import add_model_options, data_set_input, given
from .outcome import figures_note

if TYPE_CHECKING:
    from rich.console import Console

EXIT_CODES = """exit codes: 0 every variant judged; 1 some variants failed (see summary.json; --resume redoes them);
2 bad input or settings (nothing was sent to a model); 4 a --fail-over gate was not met;
130 interrupted (finished variants are kept)."""


def add_parser(sub: Any) -> None:
    from ..auditing.config import AuditConfig

    p = sub.add_parser(
        "audit",
        help="measure a judge's biases: verdict flips under perturbed inputs",
        description="Judge every item of INPUT as it is and under perturbations (answers swapped, one answer padded, "
        "a planted verdict, an authority claim, a model label with --judge-family, same-role personas) "
        "and report per bias how often the verdict flips toward the answer the perturbation favours where "
        "that answer had lost (the other half apart), net of a length-matched control, with 95% intervals, n "
        "and the direction of the flips. The judge takes evaluate's options. Writes config.json, samples.jsonl "
        "(one judged variant per line), summary.json, report.md, flip_rates.png and view.html to --out.",
        epilog=EXIT_CODES + "\n\nINPUT: an evaluate JSONL file (pairwise {id, question, answer_1, answer_2}; score and "
        "correctness {id, question, answer}), or the FairEval file or folder as it is.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", help="JSONL file (evaluate's format) or the FairEval file/folder")
    add_model_options(p, AuditConfig, title="audit")
    add_judge_options(p)
    p.add_argument(
        "--fail-over",
        action="append",
        default=[],
        metavar="flip_rate[:PERTURBATION]=VALUE",
        help="after the run, exit 4 if a flip rate is above VALUE (repeatable; for CI); without "
        ":PERTURBATION every perturbation that ran must stay at or below it",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    import asyncio

    from ..auditing import AuditConfig, arun
    from ..models import UsageTotals
    from ..runs.gates import AUDIT_METRICS, audit_measures, parse_gates
    from ..runs.progress import RunProgress
    from .outcome import gate_exit

    gates = parse_gates(args.fail_over, AUDIT_METRICS, flag="--fail-over")
    judge = config_from_args(args)
    audit_args = given(args, AuditConfig)
    audit_args.pop("judge", None)
    audit_args["input"] = data_set_input(args.input, names=("faireval",))
    cfg = AuditConfig.merged({"judge": judge}, audit_args)
    if judge.model == "offline":
        console.print("[yellow]offline model:[/yellow] verdicts are deterministic heuristics, not LLM judgements.")
    progress = RunProgress(UsageTotals(), console, label="variants")
    summary = asyncio.run(arun(cfg, progress))
    from rich.table import Table

    table = Table(
        title=f"flip rate per bias ({summary.n_items} items, {summary.model}): toward the favoured answer where it "
        "had lost; net of a length-matched control"
    )
    cols = ("bias", "flip rate", "95% CI", "n", "net of length", "had won: flip rate", "all variants")
    for col in cols:
        table.add_column(col)
    for row in summary.headline:
        table.add_row(*(str(row.get(c, "–")) for c in cols))
    print_table(console, table)
    for name, why in summary.skipped.items():
        console.print(f"[yellow]not run:[/yellow] {name}: {why}", highlight=False)
    console.print(
        f"results in {cfg.out}/ (report.md, summary.json, "
        f"{figures_note(['flip_rates.png'] if (Path(cfg.out) / 'flip_rates.png').is_file() else [])}); "
        f"flipped items: {cfg.out}/view.html",
        highlight=False,
        markup=False,  # '[plots]' is text
    )
    return gate_exit(
        1 if summary.n_failed else 0,
        gates,
        audit_measures(summary.model_dump(mode="json")),
        console,
        flag="--fail-over",
    )
