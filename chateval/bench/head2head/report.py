"""Head to head with two systems: the summary (win / tie / loss of A against B, per type, order
effects, agent agreement, latency, cost) and its report with plots."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...util.text import md_all
from .. import plots
from ..comparisons import head2head_comparisons, report_lines
from ..report import cost, finish_report, num, pct
from ..stats import mean_or_none, percentile, wilson
from ..summaries import usage_sum
from .style_control import two_system
from .views import Cases

SIDES = ("A", "B")
OUTCOMES = (("wins", "A"), ("ties", "tie"), ("losses", "B"))  # summary key, unit verdict
SCORE = {"A": 1.0, "tie": 0.5, "B": 0.0}  # A's points for a unit verdict


# --- summary ------------------------------------------------------------------------------
def proportion(k: int, n: int) -> dict[str, Any]:
    ci = wilson(k, n)
    return {"count": k, "rate": k / n if n else None, "ci95": list(ci) if ci else None}


def outcome_table(verdicts: list[str]) -> dict[str, Any]:
    """n, then wins / ties / losses for A (count, rate, 95% Wilson interval)."""
    n = len(verdicts)
    return {"n": n} | {key: proportion(sum(1 for v in verdicts if v == side), n) for key, side in OUTCOMES}


def summarize_head2head(records: Iterable[dict[str, Any]], *, systems: list[str], offline: bool) -> dict[str, Any]:
    """The two-system summary from the run's records read once, each kept as its ``case_view``."""
    cases = Cases(records, (*SIDES, "judge"))
    views = cases.views
    judged = [r for r in views if r.get("status") == "ok" and r.get("verdict") in ("A", "B", "tie")]
    out: dict[str, Any] = {"systems": dict(zip(SIDES, systems)), "perspective": "A"}
    out |= outcome_table([r["verdict"] for r in judged])
    by_type: dict[str, list[str]] = defaultdict(list)
    for r in judged:
        by_type[r.get("question_type") or "all"].append(r["verdict"])
    out["by_type"] = {t: outcome_table(v) for t, v in sorted(by_type.items())} if len(by_type) > 1 else {}

    both = [r for r in judged if r.get("order_disagreement") is not None]
    out["order_disagreement"] = proportion(sum(1 for r in both if r["order_disagreement"]), len(both)) | {
        "n": len(both)
    }
    # Position preference: of the order verdicts that name a winner, how often the answer shown first won.
    first = [
        (o.get("winner") == o.get("shown_first"))
        for r in judged
        for o in (r.get("orders") or {}).values()
        if o and o.get("winner") in SIDES
    ]
    out["first_shown_wins"] = proportion(sum(first), len(first)) | {"n": len(first)}
    out["agent_agreement"] = agent_agreement(judged)
    # AlpacaEval-2-style length control and Arena-Hard-style style control, beside the raw rates
    scored = [r for r in judged if set(r.get("styles") or {}) >= set(SIDES)]
    out["style_control"] = two_system(
        [[("A", "B", SCORE[r["verdict"]], r["styles"]["A"], r["styles"]["B"])] for r in scored]
    )

    ok_answers = [r for r in views if r.get("styles")]
    out["context_tokens"] = {s: mean_or_none((r.get("context_tokens") or {}).get(s) for r in ok_answers) for s in SIDES}
    out["latency"] = side_latency(views)
    usage = {k: total.dump() for k, total in cases.usage.items()}
    usage["total"] = usage_sum(usage[k] for k in ("A", "B", "judge"))
    out["usage"] = usage
    out["failed"] = cases.failed
    out["comparisons"] = head2head_comparisons(views, systems)
    return out | cases.counts(offline=offline)


def agent_agreement(judged: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How often each calibrated debater's winner equals the panel's."""
    per: dict[str, list[bool]] = defaultdict(list)
    for r in judged:
        for a in r.get("agents") or []:
            if a.get("winner"):
                per[a.get("persona") or a.get("agent")].append(a["winner"] == r["verdict"])
    return {p: {"n": len(v), "rate": sum(v) / len(v)} for p, v in per.items()} or None


def side_latency(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side in SIDES:
        entry = {}
        for stage in ("ingest_s", "recall_s", "answer_s"):
            xs = [r["latency"][side][stage] for r in records if stage in ((r.get("latency") or {}).get(side) or {})]
            if xs:
                entry[stage] = {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}
        out[side] = entry
    xs = [r["latency"]["judge_s"] for r in records if "judge_s" in (r.get("latency") or {})]
    out["judge"] = {"judge_s": {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}} if xs else {}
    return out


# --- report -------------------------------------------------------------------------------
def _ci(p: dict[str, Any]) -> str:
    return "–" if not p.get("ci95") else f"{100 * p['ci95'][0]:.1f}–{100 * p['ci95'][1]:.1f}"


def style_lines(sc: dict[str, Any] | None, a: str) -> list[str]:
    """report.md's table of the raw, length-controlled and style-controlled win rates of A."""
    if not sc:
        return []
    lines = [
        "## Length- and style-controlled win rate",
        "",
        f"| {a}'s win rate (ties as half) | % | 95% CI (bootstrap over cases) |",
        "|---|---|---|",
    ]
    for key, label in (
        ("raw_win_rate", "raw"),
        ("length_controlled_win_rate", "length-controlled (AlpacaEval 2's regression)"),
        ("style_controlled_win_rate", "style-controlled (length, headers, bold, lists; Arena-Hard's)"),
    ):
        v = sc[key]
        ci = v.get("ci95")
        lines.append(f"| {label} | {pct(v['value'])} | {'–' if not ci else f'{100 * ci[0]:.1f}–{100 * ci[1]:.1f}'} |")
    coef = ", ".join(f"{k} {v:+.2f}" for k, v in sc["style_coefficients"].items())
    lines += [
        "",
        f"A controlled rate is the model's prediction at equal length (style); a gap to the raw rate is "
        f"what the judge gave for length or formatting. Length coefficient {sc['length_coefficient']:+.2f} "
        f"(log-odds per unit of tanh(Δwords/σ)); style coefficients {coef} (log-odds per standard "
        "deviation of the normalized difference).",
        "",
    ]
    return lines


def write_head2head_report(out: Path, summary: dict[str, Any]) -> Path:
    summary = md_all(summary)  # text from the data reaches report.md escaped
    a, b = summary["systems"]["A"], summary["systems"]["B"]
    lines = [f"# Head to head: {a} (A) vs {b} (B) — chateval report", ""]
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}", ""]
    lines += [
        f"Data: `{summary.get('data')}` ({summary.get('dataset')}), {summary.get('n_cases')} cases; "
        f"{summary['n']} judged, {summary['n_failed']} failed. The panel saw "
        + ("the gold answer as reference." if summary.get("context") == "gold" else "no gold answer.")
        + " Each case was judged in both orders (A first, B first) and the debaters' scores averaged "
        "over the orders.",
        "",
    ]
    lines += [f"## {a} vs {b}", "", "| outcome for A | count | rate % | 95% CI (Wilson) % |", "|---|---|---|---|"]
    for key, label in (("wins", f"win ({a} better)"), ("ties", "tie"), ("losses", f"loss ({b} better)")):
        p = summary[key]
        lines.append(f"| {label} | {p['count']} | {pct(p['rate'])} | {_ci(p)} |")
    od, fs = summary["order_disagreement"], summary["first_shown_wins"]
    lines += [
        "",
        f"Judge order disagreement (the two orders' verdicts differ): {od['count']} of {od['n']} "
        f"({pct(od['rate'])}%, 95% CI {_ci(od)}). First-shown answer won {fs['count']} of {fs['n']} "
        f"order verdicts with a winner ({pct(fs['rate'])}%; 50% means no position preference).",
        "",
    ]
    lines += style_lines(summary.get("style_control"), a)
    rows: dict[str, list[float | None]] = {}
    cis: dict[str, tuple[Any, Any]] = {}  # 95% Wilson intervals of A's wins and B's wins, per row
    if summary["n"]:
        rows[f"overall (n={summary['n']})"] = [summary[k]["rate"] for k, _ in OUTCOMES]
        cis[f"overall (n={summary['n']})"] = (summary["wins"].get("ci95"), summary["losses"].get("ci95"))
    by_type = summary.get("by_type") or {}
    if by_type:
        lines += [
            "## Per question type",
            "",
            "| type | n | win % | tie % | loss % | win 95% CI |",
            "|---|---|---|---|---|---|",
        ]
        for t, v in by_type.items():
            lines.append(
                f"| {t} | {v['n']} | {pct(v['wins']['rate'])} | {pct(v['ties']['rate'])} | "
                f"{pct(v['losses']['rate'])} | {_ci(v['wins'])} |"
            )
            rows[f"{t} (n={v['n']})"] = [v[k]["rate"] for k, _ in OUTCOMES]
            cis[f"{t} (n={v['n']})"] = (v["wins"].get("ci95"), v["losses"].get("ci95"))
        lines.append("")
    if rows:
        drawn = plots.stacked_bars(
            out / "win_tie_loss.png", rows, [f"{a} wins", "tie", f"{b} wins"], title=f"{a} vs {b}", intervals=cis
        )
        lines += plots.link(drawn, "win / tie / loss", "win_tie_loss.png")
    lines += report_lines(summary)[1:]
    lat, ctx, use = summary["latency"], summary["context_tokens"], summary["usage"]
    lines += [
        "## Latency, context and cost",
        "",
        "| | ingest p50/p95 s | recall p50/p95 s | answer p50/p95 s | context tokens (~) | cost | calls |",
        "|---|---|---|---|---|---|---|",
    ]

    def stage(d: dict[str, Any], s: str) -> str:
        return f"{num(d[s]['p50'], '{:.3f}')} / {num(d[s]['p95'], '{:.3f}')}" if s in d else "–"

    for side, name in (("A", a), ("B", b)):
        lines.append(
            f"| {side}: {name} | {stage(lat[side], 'ingest_s')} | {stage(lat[side], 'recall_s')} | "
            f"{stage(lat[side], 'answer_s')} | {num(ctx[side], '{:.0f}')} | {cost(use[side])} | "
            f"{use[side]['calls']} |"
        )
    lines.append(
        f"| judge (both orders) | – | – | {stage(lat['judge'], 'judge_s')} | – | {cost(use['judge'])} | "
        f"{use['judge']['calls']} |"
    )
    lines += [
        "",
        f"Total cost: {cost(use['total'])}. Context tokens are local estimates; LoCoMo ingest cost is "
        "counted once per conversation and system.",
        "",
    ]
    return finish_report(out, lines, summary.get("failed") or [])
