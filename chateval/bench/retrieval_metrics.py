"""Retrieval metrics as LongMemEval reports them: recall_any@k, recall_all@k, ndcg_any@k.

- recall_any@k: 1 if at least one gold item is in the top k, else 0.
- recall_all@k: 1 if every gold item is in the top k, else 0.
- ndcg_any@k: binary-relevance NDCG over the top k with LongMemEval's discount (see ``dcg``);
  the ideal ranking puts all gold items first (``n_relevant`` of them, all gold items in the corpus).
A ranking of turns (or rounds, facts: anything smaller than a session) is scored at session
level as the official script does (``session_metrics_from_turns``, its
evaluate_retrieval_turn2session): each ranked turn stands for its session, duplicates kept;
"top k" is the shortest prefix holding k distinct sessions, recall counts the sessions in that
prefix, and nDCG is computed on the prefix itself, so a session with two relevant turns near the
top counts twice and the ideal is every relevant turn of the corpus.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

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


def session_metrics_from_turns(
    sessions: Sequence[str], relevant: Sequence[bool], gold: set[str], n_relevant: int, ks: Iterable[int] = KS
) -> dict[str, float]:
    """Session-level metrics of a turn ranking, as LongMemEval's evaluate_retrieval_turn2session.

    ``sessions[i]`` is the session label of the i-th ranked turn (repeats kept) and
    ``relevant[i]`` whether that turn is relevant; ``n_relevant`` is the number of relevant
    turns in the whole corpus (the ideal ranking's). For each k the prefix grows until it holds
    k distinct sessions (or the ranking ends); recall_any/recall_all ask whether any/every gold
    session is in it, ndcg_any is the DCG of the prefix's turn relevances over the ideal DCG of
    as many places."""
    out: dict[str, float] = {}
    for k in ks:
        depth, seen = None, set()
        for i, s in enumerate(sessions):
            seen.add(s)
            if len(seen) == k:
                depth = i + 1
                break
        # Fewer than k sessions in all: the whole ranking, against the whole ideal (as the
        # official code, whose prefix then runs past the corpus).
        ideal = dcg([1.0] * (n_relevant if depth is None else min(depth, n_relevant)))
        depth = len(sessions) if depth is None else depth
        top = set(sessions[:depth])
        out[f"recall_any@{k}"] = float(any(g in top for g in gold))
        out[f"recall_all@{k}"] = float(all(g in top for g in gold))
        out[f"ndcg_any@{k}"] = dcg([float(r) for r in relevant[:depth]]) / ideal if ideal else 0.0
    return out


def metrics_at(
    ranked: Sequence[str], gold: set[str], ks: Iterable[int] = KS, n_relevant: int | None = None
) -> dict[str, float]:
    """``n_relevant``: relevant places in the corpus when an id can occur more than once
    (a haystack that lists a session twice); default: one per gold id."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall_any@{k}"] = recall_any(ranked, gold, k)
        out[f"recall_all@{k}"] = recall_all(ranked, gold, k)
        out[f"ndcg_any@{k}"] = ndcg_any(ranked, gold, k, n_relevant)
    return out
