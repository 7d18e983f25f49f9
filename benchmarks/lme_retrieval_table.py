"""BENCHMARKS.md rows from LongMemEval --retrieval-only run directories: session- and turn-level
recall_any / recall_all / ndcg_any at 5 and 10 per method, and recall_all@5 per question type
(temporal-reasoning, multi-session) read from each run's samples.jsonl.

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


def rows(label: str, run: Path, printed: set[str]) -> list[str]:
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines() if line.strip()]
    out = []
    for method in dict.fromkeys(r["method"] for r in records):
        name = method if method in ("bm25", "dense", "hybrid") else label
        if name in printed:
            continue
        printed.add(name)
        ev = [r["retrieval"] for r in records if r["method"] == method and r.get("status") == "ok"
              and (r.get("retrieval") or {}).get("evaluable")]
        by_type = {t: [r["retrieval"] for r in records if r["method"] == method and r.get("status") == "ok"
                       and r["question_type"] == t and (r.get("retrieval") or {}).get("evaluable")] for t in TYPES}
        cells = []
        for level in ("session", "turn"):
            cells += [f"{mean(e[level][f'{m}@{k}'] for e in ev):.3f}" for m, k in COLS]
        for t in TYPES:
            cells += [f"{mean(e[lvl]['recall_all@5'] for e in by_type[t]):.3f}" if by_type[t] else "–"
                      for lvl in ("session", "turn")]
        out.append(f"| {name} | {len(ev)} | " + " | ".join(cells) + " |")
    return out


def main(argv: list[str]) -> None:
    head = ([f"s {m.replace('recall_', 'r_')}@{k}" for m, k in COLS] + [f"t {m.replace('recall_', 'r_')}@{k}" for m, k in COLS]
            + [f"{t} {lvl[0]} r_all@5" for t in TYPES for lvl in ("session", "turn")])
    print("| method | n | " + " | ".join(head) + " |")
    print("|---|---|" + "---|" * len(head))
    printed: set[str] = set()
    for arg in argv:
        label, _, path = arg.partition("=")
        for line in rows(label, Path(path), printed):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
