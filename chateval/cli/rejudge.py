"""``chateval rejudge``: is it the judge? Score graded answer sets under several judges and
compare them (argparse only; the work is in chateval.rejudging)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

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
from .options import add_model_options, given
from .outcome import add_gate_option, gate_exit

if TYPE_CHECKING:
    from rich.console import Console

DESCRIPTION = """\
Is it the judge? Score graded answer sets — answers with the verdicts their judges recorded —
under several judges and compare them: accuracy with 95% intervals clustered by conversation, per
category (Wilson), Cohen's kappa and the paired difference for each pair of judges, each set's
rank under each judge and the judges' rank agreement (Kendall's tau), acceptance against answer
length, and for known-wrong sets (FILE:wrong) each judge's false-acceptance rate.

Judges: recorded (the file's verdicts: per-run mean, majority, each run), f1 (LoCoMo's answer F1;
offline), official (our LongMemEval/LoCoMo-style yes/no judge), panel (the ChatEval debate panel),
preset:NAME, template:PATH (your own judge prompt, e.g. a vendor's; its sha256 is recorded).

Inputs (auto-detected; --format to force): EverMemOS-style eval_results.json, Zep's grades file,
LongMemEval hypotheses with their .eval-results-* files (--lme-data for the questions), a chateval
bench locomo / longmemeval run directory, or JSONL {question, gold, answer, category, verdicts}.

A data set `chateval data get` fetched is named instead of a path (an existing path always wins):
NAME for a data set of one file (locomo-audit-wrong:ap_v1:wrong, --errata locomo-audit), NAME/FILE
for one of its files, FILE with or without .json (locomo-audit-fc/fc_gpt-4o-mini_cot:cot,
zep-locomo/zep_locomo_grades.json:zep); it is read from the data folder, as --data is."""

EPILOG = (
    """\
gates (--fail-under): accuracy:SET/JUDGE, true_rejection:SET/JUDGE (1 - false acceptance of a
known-wrong set), kappa:SET/A~B, tau:A~B; without a subject every one must reach the value.

exit codes: 0 done; 1 some judgements failed (--resume redoes them); 2 bad input or settings
(nothing was sent to a model); """
    + EXIT_CODE_TEXT
    + """; 4 a --fail-under gate was not met; 130 interrupted."""
)


def add_parser(sub: Any) -> None:
    from ..rejudging.config import RejudgeConfig
    from ..rejudging.gates import REJUDGE_METRICS

    p = sub.add_parser(
        "rejudge",
        help="is it the judge? score graded answer sets under several judges and compare them",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="FILE[:LABEL][:wrong]",
        help="graded answer sets: a file, a run directory, or a data set's name (NAME, NAME/FILE; see above)",
    )
    add_model_options(p, RejudgeConfig)
    add_gate_option(p, REJUDGE_METRICS)
    add_cost_options(p)


def run(args: argparse.Namespace, console: Console) -> int:
    import asyncio

    from ..util.extras import require

    require("memory", "chateval rejudge")  # it rejudges benchmark runs: their metrics need the extra

    from ..models import UsageTotals
    from ..rejudging.config import RejudgeConfig
    from ..rejudging.gates import REJUDGE_METRICS, rejudge_measures
    from ..rejudging.run import arejudge
    from ..runs.gates import parse_gates
    from ..runs.progress import RunProgress

    gates = parse_gates(args.fail_under, REJUDGE_METRICS)
    cfg = RejudgeConfig.merged(given(args, RejudgeConfig) | {"inputs": args.inputs})
    check_executor(args, cfg.executor)
    if args.dry_run:
        from ..rejudging.dryrun import estimate_rejudge

        est = asyncio.run(estimate_rejudge(cfg))
        print_estimate(est, console, as_json=args.json, what="rejudge")
        return 0
    progress = RunProgress(UsageTotals(), console, label="judgements")
    with cap_context(args) as cap:
        summary = asyncio.run(arejudge(cfg, progress=progress))
    _table(summary, console)
    console.print(
        f"results in {cfg.out}/ (report.md, summary.json); every answer and verdict: chateval view {cfg.out}",
        highlight=False,
    )
    if report_cap(cap, console, "judgements"):
        return EXIT_STOPPED
    return gate_exit(0 if summary.complete else 1, gates, rejudge_measures(summary.model_dump(mode="json")), console)


def _table(summary: Any, console: Console) -> None:
    from rich.table import Table

    from ..rejudging.report import ci, pct

    table = Table(
        title="chateval rejudge" + (" (LLM judges on the OFFLINE model)" if summary.model == "offline" else "")
    )
    for col in ("set", "judge", "accuracy / false acc.", "95% CI", "per-run mean", "n"):
        table.add_column(col)
    for label, r in summary.sets.items():
        for name, s in r.scores.items():
            judge = f"{name} (offline)" if s.offline else name
            what = f"{pct(s.accuracy)}" + (" FA" if r.wrong else "")
            table.add_row(label, judge, what, ci(s.accuracy_ci95), pct(s.mean), str(s.n))
    print_table(console, table)
