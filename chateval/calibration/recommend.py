"""The answer of a calibration: which setting to use.

The best setting has the highest primary metric (an exact tie goes to the cheaper one). Every
other setting is compared with it, paired, on that metric (chateval.paired, through
``metrics.paired_vs``: the same test as the comparison with the baseline). Settings whose
difference from the best is not significant (p >= 0.05) are its statistical ties, and the
cheapest of them (the best included) is recommended. "Cheaper": lower USD per item (cache hits
at the price they had when answered) when every setting has a known price, else fewer model
calls per item; then fewer tokens, then the higher agreement, then grid order.

Only the summary record is read here (plus the paired differences the run computed), so a
summary's answer can be redrawn from summary.json."""

from __future__ import annotations

from collections.abc import Sequence

from ..paired import PairedDifference
from .records import CalibrationSummary, SettingResult

ALPHA = 0.05
NAMES = {"accuracy": "accuracy", "kappa": "Cohen's kappa", "spearman": "Spearman ρ", "kendall": "Kendall τ-b"}


def metric_value(r: SettingResult, metric: str) -> float | None:
    s = r.agreement.get(metric)
    return None if s is None else s.value


def priced(results: Sequence[SettingResult]) -> bool:
    """Costs are comparable in USD: every setting has a price, and not all of them are free
    (the offline model costs $0: then calls decide)."""
    costs = [r.per_item.cost_usd for r in results]
    return bool(costs) and all(c is not None for c in costs) and any(c for c in costs)


def cost_of(r: SettingResult, in_usd: bool) -> float:
    """The cost axis: USD per item, or model calls per item."""
    return float(r.per_item.cost_usd or 0.0) if in_usd else r.per_item.calls


def cheapest_first(
    results: Sequence[SettingResult], metric: str, every: Sequence[SettingResult]
) -> list[SettingResult]:
    """``results`` ordered cheapest first (see the module docstring); ``every``: the whole grid,
    which decides whether USD is comparable and what grid order is."""
    in_usd = priced(every)
    order = {r.setting.name: i for i, r in enumerate(every)}

    def key(r: SettingResult) -> tuple[float, float, float, float, int]:
        value = metric_value(r, metric)
        return (
            cost_of(r, in_usd),
            r.per_item.calls,
            r.per_item.tokens,
            -(value if value is not None else float("-inf")),
            order[r.setting.name],
        )

    return sorted(results, key=key)


def pick_best(summary: CalibrationSummary) -> SettingResult | None:
    """The highest primary metric; of settings with exactly that value, the cheapest."""
    m = summary.primary_metric
    every = list(summary.settings.values())
    scored = [r for r in every if metric_value(r, m) is not None]
    if not scored:
        return None
    top = max(metric_value(r, m) or 0.0 for r in scored)
    return cheapest_first([r for r in scored if metric_value(r, m) == top], m, every)[0]


def indistinguishable(d: PairedDifference | None) -> bool:
    """A paired difference from the best that the test cannot tell from zero."""
    return d is not None and d.diff is not None and d.p_value is not None and d.p_value >= ALPHA


def pareto_front(summary: CalibrationSummary) -> list[str]:
    """The settings no other setting beats on both cost and agreement (cheapest first)."""
    m = summary.primary_metric
    every = list(summary.settings.values())
    in_usd = priced(every)
    pts = [(r, cost_of(r, in_usd), v) for r in every if (v := metric_value(r, m)) is not None]
    front = [r for r, c, v in pts if not any(c2 <= c and v2 >= v and (c2 < c or v2 > v) for _, c2, v2 in pts)]
    return [r.setting.name for r in cheapest_first(front, m, every)]


def recommend(summary: CalibrationSummary, vs_best: dict[str, PairedDifference]) -> CalibrationSummary:
    """Fill in the answer (``summary.best`` is set by the report's conclusion); the headline
    becomes the recommendation."""
    m = summary.primary_metric
    every = list(summary.settings.values())
    summary.vs_best = vs_best
    summary.pareto = pareto_front(summary)
    if summary.best is None:
        summary.recommended, summary.indistinguishable = None, []
        summary.recommendation = f"No recommendation: no setting has a defined {NAMES[m]} with the human reference."
        summary.headline = summary.recommendation
        return summary
    best = summary.setting(summary.best)
    ties = [r for r in every if r.setting.name != summary.best and indistinguishable(vs_best.get(r.setting.name))]
    ranked = cheapest_first([best, *ties], m, every)
    summary.indistinguishable = [r.setting.name for r in ranked]
    summary.recommended = ranked[0].setting.name
    summary.recommendation = _sentence(summary, ranked[0], best, ties)
    summary.headline = summary.recommendation
    return summary


def _stat_text(r: SettingResult, metric: str) -> str:
    s = r.agreement.get(metric)
    if s is None or s.value is None:
        return f"{NAMES[metric]} undefined"
    ci = "" if s.ci95 is None else f" [{s.ci95[0]:.3f}, {s.ci95[1]:.3f}]"
    return f"{NAMES[metric]} {s.value:.3f}{ci}"


def cost_text(r: SettingResult) -> str:
    p = r.per_item
    usd = "cost unknown (a model has no price)" if p.cost_usd is None else f"${p.cost_usd:.5f} per item"
    return f"{usd} ({p.calls:.1f} calls, {'~' if p.tokens_approx else ''}{p.tokens:,.0f} tokens per item)"


def _versus_baseline(summary: CalibrationSummary, r: SettingResult) -> str:
    m, base = summary.primary_metric, summary.baseline
    if r.setting.name == base:
        return f"it is the baseline '{base}' itself"
    d = r.vs_baseline.get(m)
    if d is None or d.diff is None:
        return f"its difference from '{base}' is undefined ({d.reason if d else 'no paired items'})"
    ci = "" if d.ci95 is None else f" [{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]"
    p = "" if d.p_value is None else f", paired p = {d.p_value:.3g}"
    return f"{d.diff:+.3f}{ci} against '{base}'{p}, n = {d.n}"


def _sentence(
    summary: CalibrationSummary, chosen: SettingResult, best: SettingResult, ties: list[SettingResult]
) -> str:
    m = summary.primary_metric
    head = (
        f"Recommended: '{chosen.setting.name}' — {_stat_text(chosen, m)}; {_versus_baseline(summary, chosen)}; "
        f"{cost_text(chosen)}."
    )
    if not ties:
        why = " It agrees best, and every other setting agrees significantly less (paired p < 0.05)."
    elif chosen is best:
        others = ", ".join(f"'{r.setting.name}'" for r in ties)
        why = (
            f" It agrees best; {others} {'is' if len(ties) == 1 else 'are'} statistically indistinguishable "
            f"from it (paired p ≥ {ALPHA}) but not cheaper."
        )
    else:
        d = summary.vs_best.get(chosen.setting.name)
        p = "" if d is None or d.p_value is None else f" (its difference from the best: paired p = {d.p_value:.3g})"
        why = (
            f" The best agreement is '{best.setting.name}' ({_stat_text(best, m)}); {len(ties)} setting"
            f"{'s are' if len(ties) > 1 else ' is'} statistically indistinguishable from it (paired p ≥ {ALPHA}) "
            f"and '{chosen.setting.name}' is the cheapest of them{p}."
        )
    tag = " (offline model: a pipeline check, not an LLM result)" if summary.offline else ""
    return head + why + tag
