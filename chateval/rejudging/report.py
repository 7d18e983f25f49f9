"""``OUT/report.md`` of a rejudge: per set the judges' accuracy (or, for a known-wrong set, their
false-acceptance rate) with intervals, per category, the judges' agreement, acceptance against
answer length, the errata; then the ranking of the sets under each judge."""

from __future__ import annotations

from pathlib import Path

from ..datasets.locomo import CATEGORIES
from ..records.protocol_card import card_markdown, read_card
from ..runs.files import atomic_write
from .records import Rate, RejudgeSummary, Score, SetResult


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.2f}%"


def ci(v: tuple[float, float] | None) -> str:
    return "–" if v is None else f"[{100 * v[0]:.1f}, {100 * v[1]:.1f}]"


def _cat(c: str) -> str:
    return f"{c} {CATEGORIES[int(c)]}" if c.isdigit() and int(c) in CATEGORIES else c


def _label(name: str, s: Score) -> str:
    return f"{name} (offline)" if s.offline else name


def _scores(r: SetResult) -> list[str]:
    what = "false acceptance" if r.wrong else "accuracy"
    out = [
        f"| judge | {what} | 95% CI (by conversation) | per-run mean (recorded) or mean F1 | each run | n |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in r.scores.items():
        runs = " / ".join(pct(v) for v in s.per_run.values()) if len(s.per_run) > 1 else "–"
        out.append(
            f"| {_label(name, s)} | {pct(s.accuracy)} | {ci(s.accuracy_ci95)} | {pct(s.mean)} | {runs} | {s.n} |"
        )
    return out


def _stated(r: SetResult) -> list[str]:
    if not r.stated:
        return []
    bad = {k: v for k, v in r.stated.items() if not v[2]}
    if not bad:
        return [
            "",
            f"The file's own {len(r.stated)} stated rates (accuracy, runs, majority, categories) equal ours exactly.",
        ]
    return [
        "",
        "The file's stated rates that differ from ours (stated / ours): "
        + "; ".join(f"{k} {pct(v[0])} / {pct(v[1])}" for k, v in bad.items()),
    ]


def _categories(r: SetResult) -> list[str]:
    cats = sorted({c for s in r.scores.values() for c in s.categories}, key=lambda c: (not c.isdigit(), c.zfill(4)))
    out = ["| judge | " + " | ".join(_cat(c) for c in cats) + " |", "|---|" + "---|" * len(cats)]
    for name, s in r.scores.items():
        cells = []
        for c in cats:
            x: Rate | None = s.categories.get(c)
            cells.append("–" if x is None else f"{pct(x.rate)} {ci(x.wilson95)} (mean {pct(x.mean)}, n={x.n})")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def _pairs(r: SetResult) -> list[str]:
    out = ["| judges | kappa | 95% CI | agreement | difference (a − b) | 95% CI | p |", "|---|---|---|---|---|---|---|"]
    for p in r.pairs:
        d = p.difference
        k = "–" if p.kappa.value is None else f"{p.kappa.value:.3f}"
        kci = "–" if p.kappa.ci95 is None else f"[{p.kappa.ci95[0]:.3f}, {p.kappa.ci95[1]:.3f}]"
        diff = "–" if d.get("diff") is None else f"{100 * d['diff']:+.2f} pt"
        p_value = "–" if d.get("p_value") is None else f"{d['p_value']:.3g}"
        out.append(
            f"| {p.a} vs {p.b} | {k} | {kci} | {pct(p.kappa.agreement)} | {diff} | {ci(d.get('ci95'))} | {p_value} |"
        )
    return out


def _length(r: SetResult) -> list[str]:
    bins = list(next(iter(r.length.values())).bins) if r.length else []
    out = [
        "| judge | slope per doubling of length | 95% CI | " + " | ".join(f"{b} words" for b in bins) + " |",
        "|---|---|---|" + "---|" * len(bins),
    ]
    for name, e in r.length.items():
        slope = "–" if e.slope_per_doubling is None else f"{100 * e.slope_per_doubling:+.2f} pt"
        cells = [f"{pct(x.rate)} (n={x.n})" for x in e.bins.values()]
        out.append(f"| {name} | {slope} | {ci(e.ci95)} | " + " | ".join(cells) + " |")
    return out


def _errata(r: SetResult) -> list[str]:
    e = r.errata
    if e is None:
        return []
    out = [
        "",
        f"Errata ({Path(e.path).name}): {e.matched} items listed, {e.wrong_gold} with a wrong gold answer; "
        f"ceiling on the raw gold {pct(e.ceiling)}.",
        "",
        "| judge | raw gold | corrected gold | note |",
        "|---|---|---|---|",
    ]
    for name, s in r.scores.items():
        c = s.corrected
        out.append(f"| {name} | {pct(s.accuracy)} | {pct(c.accuracy if c else None)} | {(c.note if c else '') or ''} |")
    for name, n in e.credits_on_wrong_gold.items():
        out.append(
            f"\n{name}: {n} credits on items whose gold is wrong; {e.credits_only_from_wrong_gold.get(name, 0)} of them "
            "do not match the corrected gold either (F1 below the threshold): credits only a wrong gold gave."
        )
    return out


def render(summary: RejudgeSummary) -> str:
    lines = ["# Rejudge", ""]
    if summary.offline_judges:
        lines.append(
            f"Offline judges (no model): {', '.join(summary.offline_judges)}. "
            + (f"LLM judges' model: {summary.model}." if summary.model else "")
        )
    if summary.model == "offline":
        lines.append("The LLM judges ran on the offline model: deterministic heuristics, not LLM verdicts.")
    lines.append(
        f"f1 accepts an answer when its F1 ≥ {summary.f1_threshold}. Intervals: {summary.resamples} bootstrap resamples of whole conversations; categories: Wilson."
    )
    lines += [f"Note: {n}" for n in summary.notes]
    for label, r in summary.sets.items():
        kind = " — known wrong: every acceptance is a false acceptance" if r.wrong else ""
        lines += [
            "",
            f"## {label}{kind}",
            "",
            f"`{r.path}` ({r.format}; {r.n_items} items, {r.n_conversations} conversations)",
            "",
        ]
        lines += _scores(r) + _stated(r) + ["", "Per category:", ""] + _categories(r)
        if r.pairs:
            lines += ["", "Judges against each other:", ""] + _pairs(r)
        if r.length:
            lines += ["", "Acceptance against answer length:", ""] + _length(r)
        lines += _errata(r)
        card = read_card(r.protocol_card)
        if card is not None:
            lines += [""] + ["#" + x if x.startswith("## ") else x for x in card_markdown(card)]
    if summary.ranks:
        sets = list(summary.ranks[0].ranks)
        lines += [
            "",
            "## Ranking of the sets",
            "",
            "| judge | " + " | ".join(sets) + " |",
            "|---|" + "---|" * len(sets),
        ]
        for row in summary.ranks:
            lines.append(
                f"| {row.judge} | "
                + " | ".join(f"{row.ranks.get(s, '–')} ({pct(row.scores.get(s))})" for s in sets)
                + " |"
            )
        lines += ["", "| judges | Kendall's tau | 95% CI | sets |", "|---|---|---|---|"]
        for a in summary.rank_agreement:
            tau = "–" if a.tau is None else f"{a.tau:.2f}"
            tci = "–" if a.ci95 is None else f"[{a.ci95[0]:.2f}, {a.ci95[1]:.2f}]"
            lines.append(f"| {a.a} vs {a.b} | {tau} | {tci} | {a.n_sets} |")
    if summary.n_failed:
        lines += ["", f"{summary.n_failed} judgements failed (rerun with --resume)."]
    return "\n".join(lines) + "\n"


def write_report(out: Path, summary: RejudgeSummary) -> None:
    atomic_write(out / "report.md", render(summary))
