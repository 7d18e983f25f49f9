"""What every run command says about its run's accounting at the end, and the exit code it
implies: a run whose summary has expected records without a result is not a success."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def report_accounting(summary: dict[str, Any], console: Console, out: str) -> bool:
    """Print the torn-line warning and the missing-records line; True when records are missing.
    A run the cost cap stopped has its own line (``cli.cost.report_cap``) instead of the latter."""
    torn = summary.get("unreadable_lines") or 0
    if torn:
        console.print(
            f"[yellow]warning:[/yellow] {out}/samples.jsonl: {torn} unreadable line(s) ignored (a write "
            "cut short by a crash or a full disk); their samples count as missing and run again on "
            "--resume",
            highlight=False,
        )
    missing = summary.get("n_missing") or 0
    if missing and not summary.get("stopped"):
        keys = ", ".join(map(str, summary.get("missing_keys") or []))
        console.print(
            f"[red]error:[/red] {missing} of {summary.get('n_expected')} input records have no result in "
            f"{out}/samples.jsonl (first: {keys}); the run is incomplete: rerun with --resume",
            highlight=False,
            soft_wrap=True,
        )
    return bool(missing)


def figures_note(names: list[str]) -> str:
    """The figures a run's end line lists: the ones drawn; none drawn (matplotlib missing, or
    nothing to plot) is said as such, with the extra that draws them."""
    if names:
        return ", ".join(names)
    return "no figures: pip install 'chateval[plots]' draws them, where there is something to plot"


GATE_HELP = (
    "METRIC=VALUE: after the run, exit 4 if METRIC is below VALUE (repeatable; the way to gate CI). "
    "METRIC:SYSTEM=VALUE checks one system (or calibrate setting); without it every system must "
    "reach VALUE. Metrics: {metrics}"
)


def add_gate_option(p: Any, metrics: list[str]) -> None:
    p.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help=GATE_HELP.format(metrics=", ".join(metrics)),
    )


def gate_exit(
    code: int, gates: list[Any], measures: dict[str, Any], console: Console, *, flag: str = "--fail-under"
) -> int:
    """The command's exit code with its gates checked: 4 when one is not met (and the run
    itself succeeded; a failed run keeps its own code). One line per gate not met."""
    from rich.markup import escape

    from ..runs.gates import EXIT_GATE, check

    lines = check(gates, measures, flag=flag, over=flag == "--fail-over")
    for line in lines:
        console.print(f"[red]gate failed:[/red] {escape(line)}", highlight=False, soft_wrap=True)
    if gates and not lines:
        console.print(f"gates met: {', '.join(g.spec for g in gates)}", highlight=False)
    return code or (EXIT_GATE if lines else 0)
