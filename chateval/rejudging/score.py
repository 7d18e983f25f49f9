"""From per-item verdicts to a set's results: each judge's accuracy (intervals clustered by
conversation) and categories, each pair of judges' agreement, acceptance against length and,
with errata, the ceiling and the credits that rest on a wrong gold."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable
from typing import Any

from ..datasets.errata import Errata
from . import metrics as M
from .judges import ItemScore, score_f1
from .records import Errata as ErrataResult
from .records import PairResult, Score, SetResult
from .sets import GradedItem, GradedSet

Column = dict[str, ItemScore]  # item id -> its score under one judge


def make_score(
    name: str, offline: bool, items: list[GradedItem], col: Column, *, wrong: bool, resamples: int, seed: int
) -> Score:
    have = [it for it in items if it.id in col and col[it.id].accepted is not None]
    acc = [bool(col[it.id].accepted) for it in have]
    clusters: list[Hashable] = [it.conversation for it in have]
    opts = {"resamples": resamples, "seed": seed}
    a, a_ci = M.cluster_mean([float(x) for x in acc], clusters, **opts)
    runs: dict[str, list[bool]] = defaultdict(list)
    for it in have:
        for r, v in (col[it.id].runs or {}).items():
            runs[r].append(v)
    by_cat: dict[str, list[GradedItem]] = defaultdict(list)
    for it in have:
        by_cat[it.category or "-"].append(it)

    def value(it: GradedItem) -> float:
        v = col[it.id]
        return float(v.value if v.value is not None else bool(v.accepted))

    m, m_ci = M.cluster_mean([value(it) for it in have], clusters, **opts)
    cats = {
        c: M.rate([bool(col[it.id].accepted) for it in its], [value(it) for it in its])
        for c, its in sorted(by_cat.items())
    }
    return Score(
        judge=name,
        offline=offline,
        n=len(have),
        n_missing=len(items) - len(have),
        accuracy=a,
        accuracy_ci95=a_ci,
        mean=m,
        mean_ci95=m_ci,
        per_run={r: sum(v) / len(v) for r, v in sorted(runs.items())},
        categories=cats,
        false_acceptance=wrong,
    )


def pairs(items: list[GradedItem], cols: dict[str, Column], *, resamples: int, seed: int) -> list[PairResult]:
    out = []
    for a, b in itertools.combinations(cols, 2):
        both = [it for it in items if _ok(cols[a], it) and _ok(cols[b], it)]
        va = [bool(cols[a][it.id].accepted) for it in both]
        vb = [bool(cols[b][it.id].accepted) for it in both]
        cl: list[Hashable] = [it.conversation for it in both]
        out.append(
            PairResult(
                a=a,
                b=b,
                kappa=M.kappa(va, vb, cl, resamples=resamples, seed=seed),
                difference=M.difference(
                    [float(x) for x in va], [float(x) for x in vb], cl, (a, b), resamples=resamples, seed=seed
                ),
            )
        )
    return out


def _ok(col: Column, it: GradedItem) -> bool:
    return it.id in col and col[it.id].accepted is not None


def errata_result(
    s: GradedSet, errata: Errata, cols: dict[str, Column], recorded: list[str], threshold: float
) -> tuple[ErrataResult, dict[str, str]]:
    """The set against the errata; also {item id: corrected gold} for the items whose gold is wrong."""
    matched = 0
    corrected: dict[str, str] = {}
    types: dict[str, int] = defaultdict(int)
    for it in s.items:
        e = errata.find(it.question_id, it.question, it.conversation_index)
        if e is None:
            continue
        matched += 1
        types[e.error_type] += 1
        if e.changes_answer:
            corrected[it.id] = e.correct_answer
    on_wrong, only = {}, {}
    for name in recorded:
        col = cols.get(name, {})
        credited = [it for it in s.items if it.id in corrected and _ok(col, it) and col[it.id].accepted]
        on_wrong[name] = len(credited)
        # Credits the corrected gold would not give: the answer does not match it either (offline F1).
        only[name] = sum(1 for it in credited if not score_f1(it, corrected[it.id], threshold).accepted)
    n = len(s.items)
    return (
        ErrataResult(
            path=errata.path,
            sha256=errata.sha256,
            matched=matched,
            wrong_gold=len(corrected),
            ceiling=(n - len(corrected)) / n if n else 0.0,
            credits_on_wrong_gold=on_wrong,
            credits_only_from_wrong_gold=only,
            error_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
        ),
        corrected,
    )


def stated_check(s: GradedSet, col: Column | None) -> dict[str, tuple[float, float | None, bool]]:
    """Each rate the file states about itself against ours from its recorded verdicts:
    {name: (stated, ours, equal to 1e-9)}; the file's accuracy is its per-run mean."""
    if not s.stated or col is None:
        return {}
    score = make_score("recorded", True, s.items, col, wrong=False, resamples=100, seed=0)
    ours: dict[str, float | None] = {"accuracy": score.mean, "majority": score.accuracy}
    ours |= {f"run {r}": v for r, v in score.per_run.items()}
    ours |= {f"category {c}": r.mean for c, r in score.categories.items()}
    out = {}
    for key, stated in s.stated.items():
        mine = ours.get(key)
        out[key] = (stated, mine, mine is not None and abs(mine - stated) < 1e-9)
    return out


def set_result(s: GradedSet, cols: dict[str, Column], offline: dict[str, bool], **opts: Any) -> SetResult:
    items = s.items
    scores = {name: make_score(name, offline[name], items, col, wrong=s.is_wrong, **opts) for name, col in cols.items()}
    length = {}
    for name, col in cols.items():
        have = [it for it in items if _ok(col, it)]
        length[name] = M.length_effect(
            [bool(col[it.id].accepted) for it in have],
            [it.words for it in have],
            [it.conversation for it in have],
            **opts,
        )
    return SetResult(
        label=s.label,
        path=s.path,
        format=s.format,
        sha256=s.sha256,
        wrong=s.is_wrong,
        n_items=len(items),
        n_conversations=len({it.conversation for it in items}),
        recorded_judges=list(dict.fromkeys(v.judge for it in items for v in it.verdicts)),
        scores=scores,
        pairs=pairs(items, cols, **opts),
        length=length,
    )
