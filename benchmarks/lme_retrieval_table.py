"""BENCHMARKS.md tables from LongMemEval --retrieval-only run directories: per level (session,
turn), recall_any / recall_all / ndcg_any at 5 and 10 per method, and recall_all@5 for the
temporal-reasoning and multi-session questions, read from each run's samples.jsonl.

    python benchmarks/lme_retrieval_table.py LABEL=RUN_DIR [LABEL=RUN_DIR ...]

LABEL names the row of the run's memory system (its baseline rankers keep their own names);
a method already printed by an earlier run is not printed again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import mean

TYPES = ("temporal-reasoning", "multi-session")
COLS = [(m, k) for m in ("recall_any", "recall_all", "ndcg_any") for k in (5, 10)]


def cells(records: list[dict], method: str, level: str) -> tuple[int, list[str]]:
    def ok(r: dict, qtype: str | None = None) -> bool:
        return (r["method"] == method and r.get("status") == "ok" and (r.get("retrieval") or {}).get("evaluable")
                and (qtype is None or r["question_type"] == qtype))

    ev = [r["retrieval"][level] for r in records if ok(r)]
    out = [f"{mean(e[f'{m}@{k}'] for e in ev):.3f}" for m, k in COLS]
    for t in TYPES:
        typed = [r["retrieval"][level]["recall_all@5"] for r in records if ok(r, t)]
        out.append(f"{mean(typed):.3f} ({len(typed)})" if typed else "–")
    return len(ev), out


def table(level: str, runs: list[tuple[str, Path]]) -> list[str]:
    head = [f"{m}@{k}" for m, k in COLS] + [f"{t} recall_all@5 (n)" for t in TYPES]
    lines = [f"| method | n | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(head)]
    printed: set[str] = set()
    for label, run in runs:
        records = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines() if x.strip()]
        for method in dict.fromkeys(r["method"] for r in records):
            name = method if method in ("bm25", "dense", "hybrid") else label
            if name in printed:
                continue
            printed.add(name)
            n, row = cells(records, method, level)
            lines.append(f"| {name} | {n} | " + " | ".join(row) + " |")
    return lines


def main(argv: list[str]) -> None:
    runs = [(label, Path(path)) for label, _, path in (a.rpartition("=") for a in argv)]
    for level in ("session", "turn"):
        print(f"**{level} level**\n")
        print("\n".join(table(level, runs)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
