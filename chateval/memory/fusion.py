"""Reciprocal rank fusion (Cormack et al. 2009), shared by the benchmark's hybrid baseline and
the memory systems that fuse rankings."""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60  # the constant of Cormack et al. (2009)


def rrf_scores(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """score(d) = sum over rankings of 1 / (k + rank of d), ranks from 1."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for pos, doc in enumerate(ranking):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + pos + 1)
    return scores


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """The fused ranking, best first (ties by id, so it is deterministic)."""
    scores = rrf_scores(rankings, k)
    return sorted(scores, key=lambda d: (-scores[d], d))
