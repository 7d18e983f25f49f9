"""Head to head with more than two systems: every system answers each case once, the panel
judges every pair (each with position calibration), and the run reports the win/tie/loss
matrix and a Bradley–Terry ranking with bootstrap intervals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...debate.samples import Sample
from ...models import UsageTotals
from ...util.text import md_all
from ..comparisons import head2head_comparisons, report_lines
from ..executor import error_text
from ..records import verdict_record
from ..report import cost, finish_report, pct
from ..summaries import usage_sum
from .bradley_terry import rank
from .pairs import Case, judging_inputs
from .report import outcome_table, proportion
from .style_control import styled_ranking
from .views import Cases

if TYPE_CHECKING:
    from ...evaluation.judges import Judges
    from ..slot import SystemSlot

SCORE = {"A": 1.0, "tie": 0.5, "B": 0.0}  # the first-named system's points in a pair


def pair_key(a: str, b: str) -> str:
    return f"{a} vs {b}"


async def multi_case(c: Case, slots: dict[str, SystemSlot], judges: Judges, context: str) -> dict[str, Any]:
    record = c.record(systems_all=list(slots))
    results = await asyncio.gather(*(sl.respond(c.question, c.now) for sl in slots.values()), return_exceptions=True)
    answers, usage, latency, tokens, contexts, errors = {}, {}, {}, {}, {}, []
    for name, res in zip(slots, results):
        if isinstance(res, asyncio.CancelledError):
            raise res
        if isinstance(res, BaseException):
            errors.append(f"system {name}: {error_text(res)}")
            continue
        answers[name], usage[name], latency[name], tokens[name] = (
            res["answer"],
            res["usage"],
            res["latency"],
            res["context_tokens"],
        )
        contexts[name] = res["context"]
    record |= {"answers": answers, "contexts": contexts, "context_tokens": tokens, "usage": usage, "latency": latency}
    if errors:
        return record | {"status": "failed", "error": "; ".join(errors)}
    reference, guidelines = judging_inputs(c, context)
    pairs = list(combinations(slots, 2))
    t0 = time.perf_counter()
    judged = await asyncio.gather(
        *(
            judges.judge(
                Sample(
                    id=f"{c.key}::{pair_key(a, b)}",
                    question=c.question,
                    answer_1=answers[a],
                    answer_2=answers[b],
                    reference=reference,
                    guidelines=guidelines,
                    meta={"abstention": bool(c.meta.get("abstention"))},
                )
            )
            for a, b in pairs
        )
    )
    latency["judge_s"] = time.perf_counter() - t0
    judge_usage = UsageTotals()
    record["pairs"] = {}
    for (a, b), result in zip(pairs, judged):
        judge_usage.merge(result.usage)
        record["pairs"][pair_key(a, b)] = verdict_record(result) | {
            "systems": {"A": a, "B": b},
            "status": result.status,
            "error": result.error,
        }
    usage["judge"] = judge_usage.model_dump()
    bad = [k for k, p in record["pairs"].items() if p["status"] != "ok" or p["verdict"] is None]
    if bad:
        return record | {
            "status": "failed",
            "error": f"judge ({bad[0]}): {record['pairs'][bad[0]].get('error') or 'no verdict'}",
        }
    return record


def summarize_multi(records: Iterable[dict[str, Any]], *, systems: list[str], offline: bool) -> dict[str, Any]:
    """The several-system summary from the run's records read once, each kept as its ``case_view``."""
    read = Cases(records, (*systems, "judge"))
    views = read.views
    ok = [r for r in views if r.get("status") == "ok"]
    pairs: dict[str, Any] = {}
    matrix: dict[str, dict[str, Any]] = {s: {} for s in systems}
    for a, b in combinations(systems, 2):
        key = pair_key(a, b)
        verdicts = [r["pairs"][key]["verdict"] for r in ok if key in (r.get("pairs") or {})]
        table = outcome_table(verdicts)
        both = [r["pairs"][key] for r in ok if r["pairs"][key].get("order_disagreement") is not None]
        table["order_disagreement"] = proportion(sum(1 for p in both if p["order_disagreement"]), len(both))
        pairs[key] = {"systems": {"A": a, "B": b}} | table
        matrix[a][b] = {k: table[k]["count"] for k in ("wins", "ties", "losses")} | {"n": table["n"]}
        matrix[b][a] = {
            "wins": table["losses"]["count"],
            "ties": table["ties"]["count"],
            "losses": table["wins"]["count"],
            "n": table["n"],
        }
    cases = [[(p["systems"]["A"], p["systems"]["B"], SCORE[p["verdict"]]) for p in r["pairs"].values()] for r in ok]
    note: str | None
    try:
        ranking = [r.model_dump() for r in rank(cases, systems)]
    except ValueError as e:  # e.g. every case of a system failed
        ranking, note = [], str(e)
    else:
        note = None
    # Arena-Hard-style style control: the strengths at equal length and formatting
    styled = [
        [
            (p["systems"]["A"], p["systems"]["B"], SCORE[p["verdict"]], *(r["styles"][p["systems"][k]] for k in "AB"))
            for p in r["pairs"].values()
        ]
        for r in ok
    ]
    usage = {k: total.dump() for k, total in read.usage.items()}
    usage["total"] = usage_sum(usage.values())
    return {
        "systems_all": systems,
        "n": len(ok),
        "pairs": pairs,
        "matrix": matrix,
        "ranking": ranking,
        "ranking_note": note,
        "ranking_method": "Bradley–Terry (scipy L-BFGS, weak prior), 95% bootstrap CI",
        "ranking_style_controlled": styled_ranking(styled, systems),
        "usage": usage,
        "failed": read.failed,
        "comparisons": head2head_comparisons(views, systems),
    } | read.counts(offline=offline)


def _ci(ci: Any, scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    return "–" if not ci else f"{fmt.format(scale * ci[0])}–{fmt.format(scale * ci[1])}"


def write_multi_report(out: Path, summary: dict[str, Any]) -> Path:
    summary = md_all(summary)  # text from the data reaches report.md escaped
    systems = summary["systems_all"]
    lines = [f"# Head to head: {', '.join(systems)} — chateval report", ""]
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}", ""]
    lines += [
        f"Data: `{summary.get('data')}` ({summary.get('dataset')}), {summary.get('n_cases')} cases; "
        f"{summary['n']} judged, {summary['n_failed']} failed. Every pair of systems was judged on every "
        "case in both orders (position calibration).",
        "",
    ]
    lines += [
        "## Ranking (Bradley–Terry)",
        "",
        "| rank | system | strength (log-odds) | 95% CI | P(beats average) |",
        "|---|---|---|---|---|",
    ]
    for r in summary["ranking"]:
        lines.append(
            f"| {r['rank']} | {r['system']} | {r['strength']:+.2f} | {_ci(r['ci95'])} | "
            f"{pct(r['win_prob_vs_average'])}% |"
        )
    if summary.get("ranking_note"):
        lines.append(f"\nNo ranking: {summary['ranking_note']}")
    styled = summary.get("ranking_style_controlled")
    if styled:
        lines += [
            "",
            "## Ranking at equal style (Bradley–Terry with length and markdown covariates)",
            "",
            "| rank | system | strength (log-odds) | 95% CI |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r['rank']} | {r['system']} | {r['strength']:+.2f} | {_ci(r['ci95'])} |" for r in styled["ranking"]
        ]
        coef = ", ".join(f"{k} {v:+.2f}" for k, v in styled["style_coefficients"].items())
        lines.append(f"\nStyle coefficients (log-odds per standard deviation): {coef}.")
    lines += [
        "",
        "Ties count as half a win each; strengths have mean 0; intervals are a percentile bootstrap "
        "over cases (200 resamples, seed 0).",
        "",
        "## Win / tie / loss matrix (row vs column)",
        "",
        "| | " + " | ".join(systems) + " |",
        "|---|" + "---|" * len(systems),
    ]
    for a in systems:
        cells = ["–" if a == b else "{wins}-{ties}-{losses}".format(**summary["matrix"][a][b]) for b in systems]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Pairs",
        "",
        "| pair | n | A wins % (95% CI) | ties % | B wins % | order disagreement % |",
        "|---|---|---|---|---|---|",
    ]
    for key, p in summary["pairs"].items():
        lines.append(
            f"| {key} | {p['n']} | {pct(p['wins']['rate'])} ({_ci(p['wins']['ci95'], 100, '{:.1f}')}) | "
            f"{pct(p['ties']['rate'])} | {pct(p['losses']['rate'])} | "
            f"{pct(p['order_disagreement']['rate'])} |"
        )
    lines += report_lines(summary)
    use = summary["usage"]
    lines += [
        "",
        "Cost: " + ", ".join(f"{s} {cost(use[s])}" for s in systems) + f", judge {cost(use['judge'])}; "
        f"total {cost(use['total'])}.",
        "",
    ]
    return finish_report(out, lines, summary.get("failed") or [])
