"""LoCoMo's summary (metrics per system and category) and its report with plots."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from statistics import mean
from typing import Any

from ...records.protocol_card import card_section
from ...util.text import md_all
from .. import plots
from ..comparisons import locomo_comparisons, report_lines
from ..report import finish_report, latency_table, pct
from ..stats import mean_or_none, percentile
from ..summaries import run_counts
from .errata import errata_report_lines
from .metrics import ADVERSARIAL, category_name
from .views import LoCoMoRecords, system_of

METRICS = ("f1", "bleu1", "judge_single", "judge_debate", "evidence_recall")
METRIC_TITLES = {
    "f1": "Token F1 (official LoCoMo scoring)",
    "bleu1": "BLEU-1",
    "judge_single": "LLM judge accuracy — single",
    "judge_debate": "LLM judge accuracy — debate panel",
    "evidence_recall": "Evidence recall (retrieved dialogue ids)",
}


# --- summary ---------------------------------------------------------------------------------


def _judge_value(which: str):
    def get(r: dict[str, Any]) -> float | None:
        c = ((r.get("judge") or {}).get(which) or {}).get("correct")
        return None if c is None else float(bool(c))

    return get


_GETTERS = {
    "f1": lambda r: r.get("f1"),
    "bleu1": lambda r: r.get("bleu1"),
    "judge_single": _judge_value("single"),
    "judge_debate": _judge_value("debate"),
    "evidence_recall": lambda r: r.get("evidence_recall"),
}


def metric_block(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean of each metric over the QA that have it, with how many had it."""
    out: dict[str, Any] = {"n": len(rows)}
    for m, get in _GETTERS.items():
        xs = [v for v in (get(r) for r in rows) if v is not None]
        out[m] = mean(xs) if xs else None
        out[f"n_{m}"] = len(xs)
    return out


def _lat(xs: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}


def summarize_locomo(
    records: LoCoMoRecords | Iterable[dict[str, Any]], *, systems: list[str], categories: list[int], offline: bool
) -> dict[str, Any]:
    """The summary from the run's records, read once (or from what was kept of them: a run passes
    its :class:`LoCoMoRecords`, which --errata reads too)."""
    read = records if isinstance(records, LoCoMoRecords) else LoCoMoRecords(records)
    units_kept = read.units
    by_system: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in units_kept:
        by_system[system_of(r)].append(r)
    per: dict[str, Any] = {}
    for s in systems:
        units = by_system.get(s, [])
        all_qa = [dict(q, conversation=u.get("conversation")) for u in units for q in (u.get("qa") or [])]
        ok = [q for q in all_qa if q.get("status") == "ok"]
        by_cat = {
            category_name(c): metric_block([q for q in ok if q["category"] == c]) | {"category": c} for c in categories
        }
        latency = {}
        ingest = [u["latency"]["ingest_s"] for u in units if "ingest_s" in (u.get("latency") or {})]
        if ingest:
            latency["ingest_s"] = _lat(ingest)
        for stage in ("recall_s", "answer_s", "judge_s"):
            xs = [q["latency"][stage] for q in ok if stage in (q.get("latency") or {})]
            if xs:
                latency[stage] = _lat(xs)
        agree = [q["judge"]["agreement"] for q in ok if (q.get("judge") or {}).get("agreement") is not None]
        per[s] = {
            "n_units": len(units),
            "n_units_failed": sum(1 for u in units if u.get("status") != "ok"),
            "n_qa": len(all_qa),
            "n_qa_ok": len(ok),
            "n_qa_failed": len(all_qa) - len(ok),
            "failed": (
                [{"key": u.get("key"), "error": u.get("error")} for u in units if u.get("status") != "ok"]
                + [
                    {"key": f"{q.get('conversation')}::{s}::qa{q.get('qa_index')}", "error": q.get("error")}
                    for q in all_qa
                    if q.get("status") != "ok"
                ]
            )[:20],
            "categories": by_cat,
            "overall": metric_block(ok),
            "overall_no_adversarial": metric_block([q for q in ok if q["category"] != ADVERSARIAL]),
            "latency": latency,
            "mean_context_tokens": mean_or_none(q.get("context_tokens") for q in ok),
            "answer_usage": read.usage(s)[0],
            "judge_usage": read.usage(s)[1],
            "judge_agreement": {"n": len(agree), "rate": sum(agree) / len(agree)} if agree else None,
            "n_no_evidence": sum(1 for q in ok if q.get("no_evidence")),
        }
    return {
        "systems": per,
        "categories": {category_name(c): c for c in categories},
        "comparisons": locomo_comparisons(units_kept, systems),
    } | run_counts(units_kept, offline=offline)


# --- report ----------------------------------------------------------------------------------


def write_locomo_report(out: Path, summary: dict[str, Any]) -> Path:
    summary = md_all(summary)  # text from the data reaches report.md escaped
    out = Path(out)
    systems: dict[str, Any] = summary["systems"]
    cats = list(summary["categories"])  # names in category-number order
    lines = ["# LoCoMo — chateval report", ""]
    # None: answers were given (--predictions); absent: a run from before the option (our framing).
    reader = summary.get("reader_prompt", "chateval")
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}", ""]
    lines += [f"> **Warning:** {w}" for w in summary.get("warnings") or []] + ([""] if summary.get("warnings") else [])
    lines += [
        f"Conversations: {summary.get('n_conversations', '?')}, selected QA per system: "
        f"{summary.get('n_questions', '?')}, units (conversation × system): {summary['n_units']} "
        f"({summary['n_failed']} failed). Questions are answered one day after each conversation's last "
        f"session; question format: {summary.get('question_format', 'official')}; answer style: "
        f"{summary.get('answer_style', 'generic')}"
        + (f"; reader prompt: {reader}" if reader else "")
        + "."
        + (
            f" full_context answered {summary['full_context_batch']} questions per call (LoCoMo's batched "
            "full-context protocol); other systems one a call."
            if (summary.get("full_context_batch") or 1) > 1
            else (" full_context answered one question per call." if summary.get("full_context_batch") else "")
        ),
        "",
        "Categories (numbering of the official `task_eval/evaluation.py`): "
        + ", ".join(f"{n} = {c}" for c, n in summary["categories"].items())
        + ". Scores are percentages; `all` is over every scored QA, `1–4` leaves out adversarial.",
        "",
    ]
    heads = cats + ["all", "1–4"]
    for metric in METRICS:
        if not any(e["overall"].get(metric) is not None for e in systems.values()):
            continue
        lines += [
            f"## {METRIC_TITLES[metric]}",
            "",
            "| system | " + " | ".join(heads) + " |",
            "|---|" + "---|" * len(heads),
        ]
        for s, e in systems.items():
            cells = [pct(e["categories"][c].get(metric)) for c in cats]
            cells += [pct(e["overall"].get(metric)), pct(e["overall_no_adversarial"].get(metric))]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
        if metric == "f1":
            # Percentages like the table; n (QA scored for F1) under each category.
            n_f1 = [[e["categories"][c].get("n_f1", 0) for e in systems.values()] for c in cats]
            n_f1 += [[e[k].get("n_f1", 0) for e in systems.values()] for k in ("overall", "overall_no_adversarial")]
            drawn = plots.grouped_bars(
                out / "f1_by_category.png",
                [plots.n_label(h, n) for h, n in zip(heads, n_f1)],
                {
                    s: [e["categories"][c].get("f1") for c in cats]
                    + [e["overall"].get("f1"), e["overall_no_adversarial"].get("f1")]
                    for s, e in systems.items()
                },
                title="LoCoMo: token F1 per category",
                ylabel="F1",
                pct=True,
                skip_empty=False,
            )
            lines += plots.link(drawn, "F1 per category", "f1_by_category.png")
        if metric == "evidence_recall":
            how = {"one": "scored 1.0, as the official code does", "exclude": "left out"}.get(
                str(summary.get("evidence_empty")), "left out"
            )
            lines += [
                "Evidence recall is only defined for systems that retrieve (– otherwise). QA listing no "
                f"evidence ids ({how}): "
                + ", ".join(f"{s} {e.get('n_no_evidence', 0)}" for s, e in systems.items())
                + ".",
                "",
            ]
    agree = {s: e["judge_agreement"] for s, e in systems.items() if e.get("judge_agreement")}
    if agree:
        lines += [
            "Single-vs-debate judge agreement: "
            + ", ".join(f"{s} {pct(a['rate'])}% of {a['n']}" for s, a in agree.items()),
            "",
        ]

    lines += [
        "## QA per category",
        "",
        "| system | " + " | ".join(cats) + " | total | failed |",
        "|---|" + "---|" * (len(cats) + 2),
    ]
    for s, e in systems.items():
        lines.append(
            f"| {s} | "
            + " | ".join(str(e["categories"][c]["n"]) for c in cats)
            + f" | {e['n_qa_ok']} | {e['n_qa_failed']} |"
        )
    lines += report_lines(summary)
    lines += ["", *latency_table("system", systems, ingest_note=" (per conversation)")]
    lines += ["", *errata_report_lines(summary), *card_section(summary)]
    return finish_report(out, lines, [f for e in systems.values() for f in e["failed"]])
