"""summary.json and report.md of `chateval bench msc-response`: per system, the mean of each metric
over the units that finished (failed units are counted, never averaged in), the memory-helpfulness
rating, the prompt steps that wrote the responses, context size, latency and cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from statistics import stdev
from typing import Any

from ...util.text import md_all
from ..comparisons import msc_response_comparisons, report_lines, win_comparison
from ..report import cost, finish_report, num
from ..stats import mean_or_none, wilson
from ..summaries import UsageSum, counts, latency_table
from ..text_metrics import DESCRIPTIONS

METRICS = ("bleu4", "rouge_l", "bertscore_minilm")


def _mean_sd(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "mean": mean_or_none(values), "sd": stdev(values) if len(values) > 1 else None}


def helpfulness_pairs(records: list[dict[str, Any]], reference: str, systems: list[str]) -> dict[str, Any]:
    """The head-to-head per baseline: the reference's wins, ties and losses over the judged
    turns, its win rate (wins / judged, ties count as not won) with the 95% Wilson interval, the
    same excluding ties, and the paired comparison of win shares (an episode's turns one cluster)."""
    out: dict[str, Any] = {}
    for other in systems:
        if other == reference:
            continue
        rows = [
            r for r in records if r.get("kind") == "helpfulness_pair" and (r.get("systems") or {}).get("B") == other
        ]
        judged = [r for r in rows if r.get("status") == "ok" and r.get("verdict") in ("A", "B", "tie")]
        wins = sum(r["verdict"] == "A" for r in judged)
        losses = sum(r["verdict"] == "B" for r in judged)
        n = len(judged)
        ci = wilson(wins, n)
        decisive = wins + losses
        ci_dec = wilson(wins, decisive)
        cmp = (
            win_comparison([r["verdict"] for r in judged], reference, other, [r["episode"] for r in judged])
            if n
            else None
        )
        failed = [{"key": r.get("key"), "error": r.get("error")} for r in rows if r not in judged][:20]
        out[other] = {
            "n": n,
            "n_failed": len(rows) - n,
            "failed": failed,
            "wins": wins,
            "ties": n - wins - losses,
            "losses": losses,
            "win_rate": wins / n if n else None,
            "win_rate_ci": list(ci) if ci else None,
            "win_rate_decisive": wins / decisive if decisive else None,
            "win_rate_decisive_ci": list(ci_dec) if ci_dec else None,
            "paired": cmp.model_dump(mode="json") if cmp is not None else None,
        }
    return out


UNIT_FIELDS = ("key", "kind", "system", "systems", "episode", "turn", "status", "verdict", "prompt", "context_tokens")


def unit_view(r: dict[str, Any]) -> dict[str, Any]:
    """What the summary, report and comparisons read of a unit's record beyond its usage (summed as
    it streams by): ids, status, scores, the helpfulness rating (not its agents or transcript),
    latency and context size; not the response, gold, context, traces or the judges' debates."""
    out: dict[str, Any] = {k: r[k] for k in UNIT_FIELDS if k in r}
    for k in ("metrics", "latency"):
        if k in r:
            out[k] = r[k]
    if "helpfulness" in r:
        h = r["helpfulness"]
        out["helpfulness"] = {"score": h.get("score")} if isinstance(h, dict) else h
    if r.get("status") != "ok":
        out["error"] = r.get("error")
    return out


def _of(r: dict[str, Any], name: str) -> bool:
    return r.get("system") == name or str(r.get("key", "")).endswith(f"::{name}")


def summarize_msc_response(
    records: Iterable[dict[str, Any]], *, systems: list[str], offline: bool, reference: str | None = None
) -> dict[str, Any]:
    """The summary from the run's records read once: each kept as its :func:`unit_view`, the
    systems' answer and helpfulness-judge usage summed as they go."""
    views: list[dict[str, Any]] = []
    pair_views: list[dict[str, Any]] = []
    answer_usage = {name: UsageSum() for name in systems}
    judge_usage = {name: UsageSum() for name in systems}
    pair_usage = {name: UsageSum() for name in systems}  # the head-to-head panel's, per baseline
    n_failed = 0
    for r in records:
        n_failed += r.get("status") != "ok"
        if r.get("kind") == "helpfulness_pair":
            pair_views.append(unit_view(r))
            if r.get("status") == "ok" and (r.get("systems") or {}).get("B") in pair_usage:
                pair_usage[r["systems"]["B"]].add(r.get("usage"))
            continue
        views.append(unit_view(r))
        if r.get("status") == "ok":
            for name in systems:
                if _of(r, name):
                    answer_usage[name].add(r.get("usage"))
                    judge_usage[name].add((r.get("helpfulness") or {}).get("usage"))
    per: dict[str, Any] = {}
    for name in systems:
        rows = [r for r in views if _of(r, name)]
        ok = [r for r in rows if r.get("status") == "ok"]
        metrics = {
            m: _mean_sd([r["metrics"][m] for r in ok if (r.get("metrics") or {}).get(m) is not None]) for m in METRICS
        }
        helpful = [r["helpfulness"]["score"] for r in ok if (r.get("helpfulness") or {}).get("score") is not None]
        per[name] = {
            "n_units": len(rows),
            "n_ok": len(ok),
            "n_failed": len(rows) - len(ok),
            "failed": [{"key": r.get("key"), "error": r.get("error")} for r in rows if r.get("status") != "ok"][:20],
            "metrics": {m: v for m, v in metrics.items() if v["n"]},
            "helpfulness": _mean_sd(helpful) if helpful else None,
            "prompts": dict(Counter(r.get("prompt") or "not ours" for r in ok)),
            "mean_context_tokens": mean_or_none(r.get("context_tokens") for r in ok),
            "latency": latency_table(ok),
            "answer_usage": answer_usage[name].dump(),
            "judge_usage": judge_usage[name].dump(),
        }
    out = {"systems": per, "comparisons": msc_response_comparisons(views, systems, METRICS)}
    if reference is not None:
        out["helpfulness_reference"] = reference
        pairs = helpfulness_pairs(pair_views, reference, systems)
        for other, p in pairs.items():  # what judging these pairs cost
            p["judge_usage"] = pair_usage[other].dump()
        out["helpfulness_pairs"] = pairs
    n_units = len(views) + len(pair_views)
    return out | counts(n_units, n_failed, offline=offline, what="responses and/or helpfulness judgements")


def _cell(m: dict[str, Any] | None, scale: float = 100.0) -> str:
    if not m or m.get("mean") is None:
        return "–"
    sd = "" if m.get("sd") is None else f" ± {scale * m['sd']:.2f}"
    return f"{scale * m['mean']:.2f}{sd}"


def write_msc_response_report(out: Path, summary: dict[str, Any]) -> Path:
    summary = md_all(summary)  # text from the data reaches report.md escaped
    systems: dict[str, Any] = summary["systems"]
    lines = ["# MSC next-response generation — chateval report", ""]
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}", ""]
    who = "Speaker-2" if summary.get("speakers") == "speaker2" else "(both speakers')"
    lines += [
        f"Data: `{summary['data']}`, {summary['n_episodes']} episodes, {summary['n_turns']} {who} turns "
        f"predicted ({'all' if summary['turns_per_episode'] is None else summary['turns_per_episode']} per "
        f"episode). Units: {summary['n_units']} ({summary['n_failed']} failed; failed units are not in the "
        "means). MAUVE is left out (its package needs GPT-2 from the model hub).",
        "",
        "Metrics against the gold utterance, mean ± sd over finished units, ×100: "
        + "; ".join(f"{m}: {DESCRIPTIONS[m]}" for m in summary["metrics"])
        + ".",
        "",
    ]
    has_help = summary.get("helpfulness") and summary.get("helpfulness_protocol", "score") == "score"
    head = "| system | n | " + " | ".join(summary["metrics"]) + (" | memory helpfulness (1-10) |" if has_help else " |")
    head += " response step | context tokens (~) | answer cost | judge cost | failed |"
    lines += ["## Results", "", head, "|---|" + "---|" * (len(summary["metrics"]) + (1 if has_help else 0) + 6)]
    for name, e in systems.items():
        cells = [_cell(e["metrics"].get(m)) for m in summary["metrics"]]
        if has_help:
            cells.append(_cell(e["helpfulness"], 1.0))
        steps = ", ".join(f"{k} ({v})" for k, v in sorted(e["prompts"].items())) or "–"
        lines.append(
            f"| {name} | {e['n_ok']} | " + " | ".join(cells) + f" | {steps} | "
            f"{num(e['mean_context_tokens'], '{:.0f}')} | {cost(e['answer_usage'])} | "
            f"{cost(e['judge_usage'])} | {e['n_failed']} |"
        )
    lines += [
        "",
        "Per unit, samples.jsonl keeps the response, the gold utterance, the context the system used, "
        "the step that wrote the response and (theanine) the retrieved memories with the raw and refined "
        "timelines; `memories/` holds each system's memory after ingest (theanine: node-link JSON graphs).",
    ]
    pairs = summary.get("helpfulness_pairs")
    if pairs:
        ref = summary["helpfulness_reference"]
        what = (
            "response"
            if summary.get("helpfulness_compare") == "responses"
            else "retrieved memories (whose benefit the next response more, as the paper)"
        )
        lines += [
            "",
            "## Memory helpfulness, head to head",
            "",
            f"The debate panel compares `{ref}`'s {what} with each other system's at every predicted turn "
            "(both orders shown; a split between orders is a tie). Win rate = wins / judged turns (ties "
            "count as not won), 95% Wilson interval; the last column is the paired difference of win "
            "shares (an episode's turns resampled together).",
            "",
            f"| {ref} vs | judged | win | tie | lose | win rate [95% CI] | win rate without ties [95% CI] | "
            "win − lose share [95% CI] | judge cost | failed |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for other, p in pairs.items():

            def rate(v: float | None, ci: list[float] | None) -> str:
                return "–" if v is None else f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{v:.3f}"

            d = p.get("paired") or {}
            diff = (
                "–"
                if d.get("diff") is None
                else (f"{d['diff']:+.3f}" + (f" [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]" if d.get("ci95") else ""))
            )
            lines.append(
                f"| {other} | {p['n']} | {p['wins']} | {p['ties']} | {p['losses']} | "
                f"{rate(p['win_rate'], p['win_rate_ci'])} | "
                f"{rate(p['win_rate_decisive'], p['win_rate_decisive_ci'])} | {diff} | "
                f"{cost(p.get('judge_usage'))} | {p['n_failed']} |"
            )
    lines += report_lines(summary)
    failed = [f for e in systems.values() for f in e["failed"]]
    failed += [f for p in (summary.get("helpfulness_pairs") or {}).values() for f in p.get("failed", [])]
    return finish_report(out, lines, failed)
