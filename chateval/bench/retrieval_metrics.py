"""Retrieval metrics as LongMemEval reports them: recall_any@k, recall_all@k, ndcg_any@k.

- recall_any@k: 1 if at least one gold item is in the top k, else 0.
- recall_all@k: 1 if every gold item is in the top k, else 0.
- ndcg_any@k: binary-relevance NDCG over the top k with LongMemEval's discount (see ``dcg``);
  the ideal ranking puts all gold items first (``n_relevant`` of them, all gold items in the corpus).
Turn rankings are mapped to sessions by keeping each session's first (best) position, so
"top k sessions" means k distinct sessions, as the official turn-to-session conversion does.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

KS = (1, 3, 5, 10, 30, 50)  # the depths LongMemEval's retrieval evaluation reports


def recall_any(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return float(any(doc in gold for doc in ranked[:k]))


def recall_all(ranked: Sequence[str], gold: set[str], k: int) -> float:
    top = set(ranked[:k])
    return float(all(g in top for g in gold))


def dcg(relevances: Sequence[float]) -> float:
    """DCG with LongMemEval's discount (its src/retrieval/eval_utils.py): rank 1 is not
    discounted and rank r >= 2 is divided by log2(r), so ranks 1 and 2 both count fully.
    (Not the log2(r + 1) of the common formulation: the numbers would not match the paper's.)"""
    return sum(rel / (1.0 if i == 0 else math.log2(i + 1)) for i, rel in enumerate(relevances))


def ndcg_any(ranked: Sequence[str], gold: set[str], k: int, n_relevant: int | None = None) -> float:
    n_rel = len(gold) if n_relevant is None else n_relevant
    ideal = dcg([1.0] * min(k, n_rel))
    if ideal == 0:
        return 0.0
    return dcg([1.0 if doc in gold else 0.0 for doc in ranked[:k]]) / ideal


def to_sessions(ranked_turns: Iterable[str], session_of: dict[str, str]) -> list[str]:
    """Distinct sessions in the order of their best-ranked turn."""
    out, seen = [], set()
    for t in ranked_turns:
        s = session_of.get(t)
        if s is not None and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def metrics_at(ranked: Sequence[str], gold: set[str], ks: Iterable[int] = KS) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall_any@{k}"] = recall_any(ranked, gold, k)
        out[f"recall_all@{k}"] = recall_all(ranked, gold, k)
        out[f"ndcg_any@{k}"] = ndcg_any(ranked, gold, k)
    return out
