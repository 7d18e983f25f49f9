"""BENCHMARKS.md tables from LongMemEval --retrieval-only run directories: per level (session,
turn), recall_any / recall_all / ndcg_any at 5 and 10 per method, and recall_all@5 for the
temporal-reasoning and multi-session questions, read from each run's samples.jsonl; then, with
--baseline, each method's paired difference from the baseline on per-question recall_all@5 at
both levels (chateval.paired.paired_difference: percentile bootstrap 95% interval, McNemar's
exact p), over the questions evaluable in both.

    python benchmarks/lme_retrieval_table.py [--baseline hybrid] LABEL=RUN_DIR [LABEL=RUN_DIR ...]

LABEL names the row of the run's memory system (its baseline rankers keep their own names);
a method already printed by an earlier run is not printed again.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from statistics import mean

from chateval import read_run
from chateval.paired import PairedDifference, paired_difference

TYPES = ("temporal-reasoning", "multi-session")
COLS = [(m, k) for m in ("recall_any", "recall_all", "ndcg_any") for k in (5, 10)]
RANKERS = ("bm25", "dense", "hybrid")
PAIRED_METRIC = "recall_all@5"
LEVELS = ("session", "turn")


def ok(r: dict, method: str, qtype: str | None = None) -> bool:
    return bool(r["method"] == method and r.get("status") == "ok" and (r.get("retrieval") or {}).get("evaluable")
                and (qtype is None or r["question_type"] == qtype))


def cells(records: list[dict], method: str, level: str) -> tuple[int, list[str]]:
    ev = [r["retrieval"][level] for r in records if ok(r, method)]
    out = [f"{mean(e[f'{m}@{k}'] for e in ev):.3f}" for m, k in COLS]
    for t in TYPES:
        typed = [r["retrieval"][level]["recall_all@5"] for r in records if ok(r, method, t)]
        out.append(f"{mean(typed):.3f} ({len(typed)})" if typed else "–")
    return len(ev), out


def rows(runs: list[tuple[str, Path]]) -> dict[str, list[dict]]:
    """Each printed row's name -> its records (one run's records of one method)."""
    out: dict[str, list[dict]] = {}
    for label, run in runs:
        records = [r.data() for r in read_run(run).records]
        for method in dict.fromkeys(r["method"] for r in records):
            name = method if method in RANKERS else label
            if name not in out:
                out[name] = [r for r in records if r["method"] == method]
    return out


def table(level: str, by_row: dict[str, list[dict]]) -> list[str]:
    head = [f"{m}@{k}" for m, k in COLS] + [f"{t} recall_all@5 (n)" for t in TYPES]
    lines = ["| method | n | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(head)]
    for name, records in by_row.items():
        n, row = cells(records, records[0]["method"], level)
        lines.append(f"| {name} | {n} | " + " | ".join(row) + " |")
    return lines


def per_question(records: list[dict], level: str) -> dict[str, float]:
    return {r["question_id"]: r["retrieval"][level][PAIRED_METRIC] for r in records if ok(r, r["method"])}


def paired(by_row: dict[str, list[dict]], baseline: str, level: str) -> dict[str, PairedDifference]:
    """Each row's paired difference from ``baseline`` on per-question recall_all@5 at ``level``."""
    base = per_question(by_row[baseline], level)
    out = {}
    for name, records in by_row.items():
        if name == baseline:
            continue
        mine = per_question(records, level)
        ids = sorted(set(base) & set(mine))
        out[name] = paired_difference([mine[i] for i in ids], [base[i] for i in ids], names=(name, baseline),
                                      metric=f"{level} {PAIRED_METRIC}")
    return out


def fmt(d: PairedDifference) -> str:
    if d.diff is None:
        return "–"
    ci = f" [{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]" if d.ci95 else ""
    p = f", p {d.p_value:.3f}" if d.p_value is not None else ""
    return f"{d.diff:+.3f}{ci}{p}"


def paired_table(by_row: dict[str, list[dict]], baseline: str) -> list[str]:
    diffs = {level: paired(by_row, baseline, level) for level in LEVELS}
    lines = [f"| method | n | session {PAIRED_METRIC} | − {baseline} [95% CI], p | turn {PAIRED_METRIC} | "
             f"− {baseline} [95% CI], p |", "|---|---|---|---|---|---|"]
    for name in by_row:
        if name == baseline:
            continue
        s, t = diffs["session"][name], diffs["turn"][name]
        value = lambda d: f"{d.value_a:.3f}" if d.value_a is not None else "–"  # noqa: E731
        lines.append(f"| {name} | {s.n} | {value(s)} | {fmt(s)} | {value(t)} | {fmt(t)} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="the row every other row is compared with, paired (e.g. hybrid)")
    ap.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    args = ap.parse_args(argv)
    by_row = rows([(label, Path(path)) for label, _, path in (a.rpartition("=") for a in args.runs)])
    for level in LEVELS:
        print(f"**{level} level**\n")
        print("\n".join(table(level, by_row)) + "\n")
    if args.baseline:
        if args.baseline not in by_row:
            raise SystemExit(f"--baseline {args.baseline}: no such row (rows: {', '.join(by_row)})")
        print(f"**paired differences from {args.baseline}** ({PAIRED_METRIC}, per question)\n")
        print("\n".join(paired_table(by_row, args.baseline)) + "\n")


if __name__ == "__main__":
    main()
