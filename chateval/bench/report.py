"""report.md (+ PNG plots) for memory benchmark runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records.protocol_card import card_section
from ..runs.files import atomic_write
from ..util.text import md_all
from . import plots
from .comparisons import report_lines
from .retrieval_metrics import KS
from .stats import wilson
from .summaries import SMALL_N

# A `zep` row under LongMemEval's protocol is not Zep's own evaluation (its Table 3).
ZEP_ROW_NOTE = (
    "> **`zep` is not under Zep's own protocol here:** its row uses this run's reader and judge, not Zep's "
    "evaluation (Zep's reader, its gpt-4o-mini grader, cross-encoder reranking), so it does not stand beside "
    "Zep's published LongMemEval table unqualified; `--protocol zep` runs Zep's."
)


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "–" if v is None else fmt.format(v)


def _acc_n(cell: dict[str, Any] | None) -> str:
    """'accuracy (n)', with a dagger when n is too small to read much into."""
    if not cell:
        return "–"
    mark = "†" if cell["n"] < SMALL_N else ""
    return f"{pct(cell['accuracy'])} ({cell['n']}{mark})"


def cost(u: dict[str, Any] | None) -> str:
    if not u:
        return "–"
    c = u.get("cost_usd")
    return "unknown" if c is None else f"${c:.4f}"


def write_memory_report(out: Path, summary: dict[str, Any], records: list[dict[str, Any]], *, title: str) -> Path:
    summary = md_all(summary)  # text from the data (question types, names, errors) reaches report.md escaped
    methods: dict[str, Any] = summary["methods"]
    lines = [f"# {title} — chateval report", ""]
    if summary.get("note"):
        lines += [f"> **Note:** {summary['note']}", ""]
    lines += [f"> **Warning:** {w}" for w in summary.get("warnings") or []] + ([""] if summary.get("warnings") else [])
    lines += [f"Units: {summary['n_units']} ({summary['n_failed']} failed). Tokens marked ~ are local estimates.", ""]
    if emb := summary.get("embeddings"):
        pre = emb.get("pre_embed") or {}
        up_front = (
            f", {pre['texts']} of them up front in one length-sorted pass ({pre['s']:.1f} s wall)"
            if pre.get("texts")
            else ""
        )
        lines += [
            f"Embeddings ({emb['embedder']}): {emb['computed']} texts encoded in {emb['embed_s']:.1f} s"
            f"{up_front} (texts already in the embedding cache are not encoded again).",
            "",
        ]

    qa_rows = {m: e["qa"]["single"] or e["qa"]["debate"] for m, e in methods.items() if e.get("qa")}
    qa_rows = {m: v for m, v in qa_rows.items() if v}
    if qa_rows:
        types = sorted({t for v in qa_rows.values() for t in v["by_type"]})
        lines += [
            "## QA accuracy (%)",
            "",
            "Cells are accuracy (n). As in LongMemEval's metric script, abstention questions count "
            f"in their question type and in the abstention column. † marks n < {SMALL_N}.",
            "",
            "| system | " + " | ".join(types) + " | abstention | overall | task-avg | n |",
            "|---|" + "---|" * (len(types) + 4),
        ]
        for m, v in qa_rows.items():
            cells = [_acc_n(v["by_type"].get(t)) for t in types]
            lines.append(
                f"| {m} | " + " | ".join(cells) + f" | {_acc_n(v['abstention'])} | "
                f"{pct(v['overall'])} | {pct(v['task_averaged'])} | {v['n']} |"
            )
        lines += [
            "",
            "Judge: "
            + ", ".join(
                f"{m}: " + "/".join(w for w in ("single", "debate") if methods[m]["qa"].get(w)) for m in qa_rows
            )
            + f". Single-judge protocol: {summary.get('judge_protocol', 'chateval')}."
            + (f" Judge model: {summary['judge_model']}." if summary.get("judge_model") else "")
            + (f" Reader prompt: {summary['reader_prompt']}." if summary.get("reader_prompt") else "")
            + (
                f" Reader output limit: {summary['reader_max_tokens']} tokens."
                if summary.get("reader_max_tokens")
                else ""
            ),
            "",
        ]
        if summary.get("judge_model_note"):
            lines += [f"> **Not the official judge:** {summary['judge_model_note']}.", ""]
        if "zep" in qa_rows and (summary.get("reader_prompt"), summary.get("judge_protocol")) != ("zep", "zep"):
            lines += [ZEP_ROW_NOTE, ""]
        agree = {m: e.get("judge_agreement") for m, e in methods.items() if e.get("judge_agreement")}
        if agree:
            lines += [
                "Single-vs-debate judge agreement: "
                + ", ".join(f"{m} {pct(a['rate'])}% of {a['n']}" for m, a in agree.items()),
                "",
            ]
        lines += _qa_plots(out, title, methods, qa_rows, types)

    ret = {m: e["retrieval"] for m, e in methods.items() if e.get("retrieval") and e["retrieval"]["n_evaluable"]}
    if ret:
        lines += ["## Retrieval (mean over evaluable questions)", ""]
        for level in ("session", "turn"):
            head = [f"{name}@{k}" for name in ("recall_any", "recall_all", "ndcg_any") for k in KS]
            lines += [
                f"### {level} level",
                "",
                "| method | n | " + " | ".join(head) + " |",
                "|---|---|" + "---|" * len(head),
            ]
            for m, r in ret.items():
                capped = (r.get("capped") or {}).get(level) or {}
                cells = [num(r[level].get(h), "{:.3f}") + ("*" if capped.get(h.split("@")[1]) else "") for h in head]
                lines.append(f"| {m} | {r['n_evaluable']} | " + " | ".join(cells) + " |")
            lines.append("")
        if any(any(c.values()) for r in ret.values() for c in (r.get("capped") or {}).values()):
            lines += [
                "\\* capped: for some questions the method ranked fewer than k items (the haystack is "
                "smaller, or so is the method's recall depth, e.g. a system's `k`), so @k there equals "
                "@depth and cannot grow.",
                "",
            ]
        excluded = next(iter(ret.values()))["excluded"]
        if excluded:
            lines += ["Excluded from retrieval metrics: " + ", ".join(f"{k}: {v}" for k, v in excluded.items()), ""]
        drawn = plots.line_panels(
            out / "recall_at_k.png",
            list(KS),
            {
                f"{lvl} level": {
                    m: {name: [r[lvl].get(f"{name}@{k}") for k in KS] for name in ("recall_any", "recall_all")}
                    for m, r in ret.items()
                }
                for lvl in ("session", "turn")
                if any(r.get(lvl) for r in ret.values())
            },
            title="recall@k (recall_any: some gold item retrieved; recall_all: every one)",
            xlabel="k",
            ylabel="recall",
        )
        lines += plots.link(drawn, "recall@k", "recall_at_k.png")

    lines += report_lines(summary)
    lines += latency_table("method", methods, failed_column=True)
    lines += ["", *card_section(summary)]
    return finish_report(out, lines, [f for e in methods.values() for f in e["failed"]])


def _qa_plots(out: Path, title: str, methods: dict[str, Any], qa_rows: dict[str, Any], types: list[str]) -> list[str]:
    """Accuracy per type (%, n in the labels, 95% Wilson whiskers), accuracy vs context and vs cost."""
    lines: list[str] = []
    cells = {
        m: [v["by_type"].get(t) for t in types]
        + [{"n": v["n"], "correct": round(v["overall"] * v["n"]) if v["overall"] is not None else None}]
        for m, v in qa_rows.items()
    }
    labels = [plots.n_label(g, [c["n"] for c in col if c]) for g, col in zip(types + ["overall"], zip(*cells.values()))]
    drawn = plots.grouped_bars(
        out / "qa_by_type.png",
        labels,
        {m: [v["by_type"].get(t, {}).get("accuracy") for t in types] + [v["overall"]] for m, v in qa_rows.items()},
        intervals={
            m: [wilson(c["correct"], c["n"]) if c and c.get("correct") is not None else None for c in col]
            for m, col in cells.items()
        },
        title=f"{title}: accuracy per question type (95% Wilson intervals)",
        ylabel="accuracy",
        pct=True,
    )
    lines += plots.link(drawn, "accuracy per type", "qa_by_type.png")
    eff = {m: (methods[m]["mean_context_tokens"], v["overall"]) for m, v in qa_rows.items()}
    drawn = plots.scatter(
        out / "accuracy_vs_tokens.png",
        eff,
        title="accuracy vs mean context tokens",
        xlabel="mean context tokens (~, log scale)",
        ylabel="accuracy",
        logx=True,
        pct=True,
        what="mean context size",
    )
    lines += (
        ["![accuracy vs context](accuracy_vs_tokens.png)", ""]
        if isinstance(drawn, Path)
        else plots.skipped("accuracy_vs_tokens.png", drawn)
    )
    costs = {m: (methods[m]["answer_usage"].get("cost_usd"), v["overall"]) for m, v in qa_rows.items()}
    drawn = plots.scatter(
        out / "accuracy_vs_cost.png",
        costs,
        title="accuracy vs answer cost",
        xlabel="answer cost (USD)",
        ylabel="accuracy",
        pct=True,
        what="known answer cost",
    )
    lines += (
        ["![accuracy vs cost](accuracy_vs_cost.png)", ""]
        if isinstance(drawn, Path)
        else plots.skipped("accuracy_vs_cost.png", drawn)
    )
    return lines


def latency_table(
    first: str, entries: dict[str, dict[str, Any]], *, ingest_note: str = "", failed_column: bool = False
) -> list[str]:
    """The "Latency, context and cost" section: one row per method or system."""
    head = [
        first,
        f"ingest p50/p95 s{ingest_note}",
        "recall p50/p95 s",
        "answer p50/p95 s",
        "judge p50/p95 s",
        "context tokens (~)",
        "answer cost",
        "judge cost",
    ] + (["failed"] if failed_column else [])
    lines = ["## Latency, context and cost", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, e in entries.items():
        lat = e["latency"]
        cells = [
            f"{num(lat[k]['p50'], '{:.3f}')} / {num(lat[k]['p95'], '{:.3f}')}" if k in lat else "–"
            for k in ("ingest_s", "recall_s", "answer_s", "judge_s")
        ]
        cells += [num(e["mean_context_tokens"], "{:.0f}"), cost(e["answer_usage"]), cost(e.get("judge_usage"))]
        if failed_column:
            cells.append(str(e["n_failed"]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def finish_report(out: Path, lines: list[str], failed: list[dict[str, Any]]) -> Path:
    """Append the failed units (key and one-line error) and write report.md atomically.
    ``lines`` and ``failed`` come from a summary escaped by ``md_all`` (every writer's first step)."""
    if failed:
        lines += ["", "## Failures", ""] + [f"- {f['key']}: {f['error']}" for f in failed]
    path = out / "report.md"
    atomic_write(path, "\n".join(lines) + "\n")
    return path
