"""Across sets: each set's rank under each judge, and how far two judges agree on the ranking
(Kendall's tau with a bootstrap interval): does the judge change the leaderboard? Known-wrong
sets are leniency tests, not contestants: they are left out of the ranking."""

from __future__ import annotations

import itertools
from collections.abc import Hashable

from . import metrics as M
from .records import RankRow, RejudgeSummary
from .score import Column
from .sets import GradedSet


def compare_sets(
    summary: RejudgeSummary, kept: dict[str, tuple[GradedSet, dict[str, Column]]], *, resamples: int, seed: int
) -> None:
    ranked = [label for label, r in summary.sets.items() if not r.wrong]
    if len(ranked) < 2:
        return
    judges = [j for j in _columns(summary, ranked)]
    for j in judges:
        scores = {s: summary.sets[s].scores[j].accuracy for s in ranked}
        clean = {s: v for s, v in scores.items() if v is not None}
        order = sorted(clean, key=lambda s: -clean[s])
        summary.ranks.append(RankRow(judge=j, ranks={s: order.index(s) + 1 for s in order}, scores=clean))
    for a, b in itertools.combinations(judges, 2):
        per_set: dict[str, tuple[list[float], list[float], list[Hashable]]] = {}
        for label in ranked:
            s, cols = kept[label]
            both = [it for it in s.items if _ok(cols[a], it.id) and _ok(cols[b], it.id)]
            per_set[label] = (
                [float(bool(cols[a][it.id].accepted)) for it in both],
                [float(bool(cols[b][it.id].accepted)) for it in both],
                [it.conversation for it in both],
            )
        per_set = {k: v for k, v in per_set.items() if v[0]}
        summary.rank_agreement.append(M.rank_agreement((a, b), per_set, resamples=resamples, seed=seed))


def _ok(col: Column, key: str) -> bool:
    return key in col and col[key].accepted is not None


def _columns(summary: RejudgeSummary, ranked: list[str]) -> list[str]:
    """The judges every ranked set was scored under, in the order they first appear."""
    first = summary.sets[ranked[0]].scores
    return [j for j in first if all(j in summary.sets[s].scores for s in ranked)]
