"""``--dry-run``, ``--json`` and ``--max-cost USD``: the cost options every run command shares
(evaluate, calibrate, each bench), the estimate table, and the cost cap's closing message."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any

from ..util.errors import ConfigError
from ..util.tables import print_table

if TYPE_CHECKING:
    from rich.console import Console

    from ..models.budget import CostCap
    from ..models.dryrun import DryRunEstimate

EXIT_STOPPED = 3
EXIT_CODE_TEXT = "3 stopped at the --max-cost cap (finished units are kept; --resume with a higher cap continues)"


def max_cost(value: str) -> float:
    """--max-cost's parser; a ConfigError passes through argparse as the CLI's one-line error (exit 2)."""
    try:
        usd = float(value)
    except ValueError:
        raise ConfigError(f"--max-cost '{value}': expected an amount in USD, e.g. 5 or 0.25") from None
    if not math.isfinite(usd) or usd < 0:
        raise ConfigError(f"--max-cost '{value}': expected a finite amount in USD >= 0")
    return usd


def add_cost_options(p: argparse.ArgumentParser, *, price: bool = False) -> None:
    g = p.add_argument_group("cost")
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="print the model calls, estimated input/output tokens, the cache-eligible share and the "
        "cost at known prices, then exit 0: no model is called and nothing is written",
    )
    g.add_argument("--json", action="store_true", help="--dry-run: print the estimate as JSON on stdout")
    g.add_argument(
        "--max-cost",
        type=max_cost,
        metavar="USD",
        help="reserve each unit's estimated cost before it starts and start none that would pass USD; "
        "units already running finish, so the cost can pass USD by what they cost beyond their estimates "
        f"(exit {EXIT_STOPPED}; --resume with a higher cap continues). Needs a known price for "
        "every model (--price)",
    )
    if price:  # for commands whose settings have no --price of their own
        g.add_argument(
            "--price",
            action="append",
            default=[],
            metavar="MODEL=IN,OUT",
            help="USD per million input/output tokens for a model missing from the price table",
        )


def print_estimate(est: DryRunEstimate, console: Console, *, as_json: bool = False, what: str = "run") -> None:
    if as_json:
        print(json.dumps(est.model_dump(mode="json"), indent=2))
        return
    from rich.table import Table

    def usd(v: float | None) -> str:
        return "unknown (give --price)" if v is None else f"${v:.4f}"

    table = Table(title=f"dry run: what this {what} would send (nothing was sent or written)")
    table.add_column("model", no_wrap=True)
    for col in ("calls", "input tokens", "output tokens", "cache-eligible", "cost", "cost if cached"):
        table.add_column(col, justify="right")
    for r in est.models:
        share = (
            f"{r.cache_eligible_tokens:,} ({r.cache_eligible_tokens / r.prompt_tokens:.0%})" if r.prompt_tokens else "0"
        )
        table.add_row(
            r.model,
            f"{r.calls:,}",
            f"{r.prompt_tokens:,}",
            f"{r.completion_tokens:,}",
            share,
            usd(r.cost_usd),
            usd(r.cost_if_cached_usd),
        )
    share = f" ({est.cache_eligible_share:.0%})" if est.cache_eligible_share is not None else ""
    table.add_row(
        "total",
        f"{est.calls:,}",
        f"{est.prompt_tokens:,}",
        f"{est.completion_tokens:,}",
        f"{est.cache_eligible_tokens:,}{share}",
        usd(est.cost_usd),
        usd(est.cost_if_cached_usd),
        style="bold",
    )
    print_table(console, table)
    console.print(
        f"{est.units} units; tokens estimated at {est.token_rule}. Output tokens are the offline "
        "model's stand-in replies (a real model's are often longer). Cache-eligible: input tokens that "
        "repeat the start of an earlier call of the same unit; 'cost if cached' prices them at the model's "
        "cached-input price (the input price where the table has none), as if a provider's prefix cache "
        "served them all (providers cache only prefixes above a minimum, e.g. 1024 tokens).",
        highlight=False,
        soft_wrap=True,
    )
    if est.failed_units:
        console.print(
            f"[yellow]warning:[/yellow] {est.failed_units} unit(s) failed in the simulation and are not counted",
            highlight=False,
        )
    for note in est.notes:
        console.print(f"[yellow]note:[/yellow] {note}", highlight=False, soft_wrap=True)


def report_cap(cap: CostCap | None, console: Console, unit: str = "units") -> bool:
    """Print the cap's closing message when it stopped the run; True when it did."""
    if cap is None or not cap.stopped:
        return False
    console.print(f"[yellow]{cap.message(unit)}[/yellow]", highlight=False, soft_wrap=True)
    return True


def check_executor(args: argparse.Namespace, executor: str) -> None:
    """--max-cost meters this process's model layers: units on Ray workers would spend unseen."""
    if getattr(args, "max_cost", None) is not None and executor == "ray":
        raise ConfigError(
            "--max-cost needs --executor local: the cap meters the calls made in this process, "
            "and units on Ray workers spend outside it"
        )


def cap_context(args: argparse.Namespace) -> Any:
    """The cost cap the run executes under (a no-op context without --max-cost)."""
    import contextlib

    from ..models.budget import cost_cap

    usd = getattr(args, "max_cost", None)
    return contextlib.nullcontext(None) if usd is None or args.dry_run else cost_cap(usd)
