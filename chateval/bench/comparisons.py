"""The paired comparisons of each benchmark's summary: which per-item values of which systems
are compared, on which items and in which clusters. The statistics are :mod:`chateval.paired`'s.

Pairs: every pair of systems while there are at most ``paired.MAX_ALL_PAIRS`` (a handful of
tests, all worth reading), each system against the first one named beyond that (k(k-1)/2 tests
would swamp the report, and some would look significant by chance). Judge settings are each
compared with the single judge (or the first setting): the question asked is whether a panel
beats one judge.

Clusters: items that share state are resampled and permuted together. LoCoMo (and head2head on
a LoCoMo file): the questions of one conversation, which one ingested memory answers. MSC: the
turns of one episode (one memory per episode and system). TeaFarm: the questions about one
conversation. LongMemEval and FairEval: none (each question has its own haystack / item).
Topical-Chat: the six responses to one dialogue context, which share the context and raters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from ..paired import (
    PairedDifference,
    choose_pairs,
    compare_systems,
    comparisons_markdown,
    dump_comparisons,
    paired_difference,
    paired_metric_difference,
    read_comparisons,
)

Values = dict[str, dict[Hashable, float | bool | None]]
# As collected from records: a record without a system name gives the key None (never compared).
Collected = dict[str | None, dict[Hashable, float | bool | None]]


def _collect(rows: Iterable[tuple[str | None, Hashable, Any]]) -> Collected:
    out: Collected = defaultdict(dict)
    for system, item, value in rows:
        out[system][item] = value
    return dict(out)


def _in_order(values: Collected, systems: Sequence[str]) -> Values:
    """Systems in the order they were named, those with at least one value."""
    return {s: values[s] for s in systems if any(v is not None for v in values.get(s, {}).values())}


def _compare(
    values: Collected, systems: Sequence[str], metric: str, clusters: Mapping[Hashable, Hashable] | None = None
) -> list[PairedDifference]:
    named = _in_order(values, systems)
    return compare_systems(named, metric=metric, clusters=clusters) if len(named) > 1 else []


def _correct(verdict: dict[str, Any] | None) -> float | None:
    c = (verdict or {}).get("correct")
    return None if c is None else float(bool(c))


def _primary_judge(rows: Iterable[dict[str, Any]]) -> str:
    """The judge the accuracy tables lead with: the single judge when it ran, else the panel."""
    return (
        "single"
        if any(((r.get("judge") or {}).get("single") or {}).get("correct") is not None for r in rows)
        else "debate"
    )


# --- memory benchmarks -----------------------------------------------------------------------


def longmemeval_comparisons(
    records: list[dict[str, Any]], methods: Sequence[str], *, retrieval_only: bool
) -> list[dict[str, Any]]:
    """QA accuracy per question (the accuracy table's judge); with --retrieval-only, session-level
    recall_all@5 of the rankers and systems (0/1 per question: McNemar)."""
    ok = [r for r in records if r.get("status") == "ok" and r.get("question_id") is not None]
    if retrieval_only:

        def value(r: dict[str, Any]) -> float | None:
            ret = r.get("retrieval") or {}
            return ((ret.get("session") or {}).get("recall_all@5")) if ret.get("evaluable") else None

        metric = "session recall_all@5"
    else:
        judge = _primary_judge(ok)

        def value(r: dict[str, Any]) -> float | None:
            return _correct((r.get("judge") or {}).get(judge))

        metric = f"accuracy ({judge} judge)"
    values = _collect((r.get("method"), r["question_id"], value(r)) for r in ok)
    return dump_comparisons(_compare(values, methods, metric))


def locomo_comparisons(records: list[dict[str, Any]], systems: Sequence[str]) -> list[dict[str, Any]]:
    """Official F1 and judge accuracy per QA, the QA of one conversation as one cluster."""
    rows = [
        (u.get("method"), u.get("conversation"), q)
        for u in records
        for q in (u.get("qa") or [])
        if q.get("status") == "ok"
    ]
    clusters: dict[Hashable, Hashable] = {f"{c}::qa{q.get('qa_index')}": c for _, c, q in rows}
    judge = _primary_judge(q for _, _, q in rows)
    out = _compare(
        _collect((s, f"{c}::qa{q.get('qa_index')}", q.get("f1")) for s, c, q in rows), systems, "F1", clusters
    )
    out += _compare(
        _collect((s, f"{c}::qa{q.get('qa_index')}", _correct((q.get("judge") or {}).get(judge))) for s, c, q in rows),
        systems,
        f"accuracy ({judge} judge)",
        clusters,
    )
    return dump_comparisons(out)


def msc_response_comparisons(
    records: list[dict[str, Any]], systems: Sequence[str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """Each reported metric (and the helpfulness rating) per predicted turn, an episode's turns
    as one cluster."""
    ok = [r for r in records if r.get("status") == "ok"]
    item = {id(r): f"{r.get('episode')}::t{r.get('turn')}" for r in ok}
    clusters: dict[Hashable, Hashable] = {item[id(r)]: r.get("episode") for r in ok}

    def metric_of(m: str) -> Callable[[dict[str, Any]], Any]:
        return lambda r: (r.get("metrics") or {}).get(m)

    getters = {m: metric_of(m) for m in metrics}
    getters["helpfulness"] = lambda r: (r.get("helpfulness") or {}).get("score")
    out: list[PairedDifference] = []
    for metric, get in getters.items():
        out += _compare(_collect((r.get("system"), item[id(r)], get(r)) for r in ok), systems, metric, clusters)
    return dump_comparisons(out)


def teafarm_comparisons(records: list[dict[str, Any]], systems: Sequence[str]) -> list[dict[str, Any]]:
    """Success (not fooled: 1, fooled or a tied panel: 0, as the success rate counts) per
    question, the questions about one conversation as one cluster."""
    ok = [r for r in records if r.get("status") == "ok"]
    item = {id(r): f"{r.get('conversation')}::{r.get('question_id')}" for r in ok}
    clusters: dict[Hashable, Hashable] = {item[id(r)]: r.get("conversation") for r in ok}
    values = _collect((r.get("system"), item[id(r)], float(r.get("correct") is True)) for r in ok)
    return dump_comparisons(_compare(values, systems, "success rate", clusters))


# --- head to head ----------------------------------------------------------------------------


def win_comparison(verdicts: Sequence[str], a: str, b: str, clusters: Sequence[Hashable] | None) -> PairedDifference:
    """A's share of wins minus B's over the judged cases (ties count in n and for neither side).
    Without clusters the test is McNemar's exact test on (A won, B won): the two-sided sign test
    over the decisive cases, ties left out."""
    return paired_difference(
        [float(v == "A") for v in verdicts],
        [float(v == "B") for v in verdicts],
        names=(a, b),
        metric="win rate",
        clusters=clusters,
    )


def _case_cluster(r: dict[str, Any]) -> Hashable | None:
    return (r.get("meta") or {}).get("conversation")  # set for LoCoMo cases only


def head2head_comparisons(records: list[dict[str, Any]], systems: Sequence[str]) -> list[dict[str, Any]]:
    """One comparison per judged pair of systems (two systems: A vs B; more: every pair judged)."""
    ok = [r for r in records if r.get("status") == "ok"]
    out = []
    if len(systems) == 2:
        judged = [r for r in ok if r.get("verdict") in ("A", "B", "tie")]
        cl = [_case_cluster(r) for r in judged]
        out.append(
            win_comparison(
                [r["verdict"] for r in judged], systems[0], systems[1], cl if any(c is not None for c in cl) else None
            )
        )
        return dump_comparisons(out)
    for a, b in choose_pairs(systems):
        # Multi-system records hold every pair in the order the systems were named.
        key, flip = (f"{a} vs {b}", False) if systems.index(a) < systems.index(b) else (f"{b} vs {a}", True)
        pair_verdicts = [
            (r, r["pairs"][key]["verdict"])
            for r in ok
            if key in (r.get("pairs") or {}) and r["pairs"][key].get("verdict") in ("A", "B", "tie")
        ]
        verdicts = [{"A": "B", "B": "A"}.get(v, v) if flip else v for _, v in pair_verdicts]
        cl = [_case_cluster(r) for r, _ in pair_verdicts]
        out.append(win_comparison(verdicts, a, b, cl if any(c is not None for c in cl) else None))
    return dump_comparisons(out)


# --- judge settings (FairEval, Topical-Chat) -------------------------------------------------


def label_comparisons(
    records_a: list[dict[str, Any]],
    records_b: list[dict[str, Any]],
    names: tuple[str, str],
    *,
    gold: str = "human",
    pred: str = "pred",
) -> list[PairedDifference]:
    """Accuracy (McNemar) and Cohen's kappa (paired bootstrap and swap permutation) of two judge
    settings' verdicts against the human label, on the items both judged."""
    a = {r["key"]: r for r in records_a if r.get("status") == "ok"}
    b = {r["key"]: r for r in records_b if r.get("status") == "ok"}
    keys = sorted(set(a) & set(b), key=str)
    g = [a[k].get(gold) for k in keys]
    pa, pb = [a[k].get(pred) for k in keys], [b[k].get(pred) for k in keys]

    def hit(p: Any, h: Any) -> float | None:
        return None if p is None or h is None else float(p == h)

    return [
        paired_difference(
            [hit(p, h) for p, h in zip(pa, g)], [hit(p, h) for p, h in zip(pb, g)], names=names, metric="accuracy"
        ),
        paired_metric_difference(g, pa, pb, "kappa", names=names),
    ]


def score_comparisons(
    records_a: list[dict[str, Any]],
    records_b: list[dict[str, Any]],
    names: tuple[str, str],
    aspects: Sequence[str],
    *,
    cluster: str | None = None,
) -> list[PairedDifference]:
    """Per aspect, Spearman's and Kendall's correlation with the human score: setting A's minus
    B's, on the items both scored, resampled in clusters of ``cluster`` (a record field)."""
    a = {r["key"]: r for r in records_a if r.get("status") == "ok"}
    b = {r["key"]: r for r in records_b if r.get("status") == "ok"}
    keys = sorted(set(a) & set(b), key=str)
    clusters = [a[k].get(cluster) for k in keys] if cluster else None
    out = []
    for aspect in aspects:
        g = [(a[k].get("human") or {}).get(aspect) for k in keys]
        pa = [(a[k].get("pred") or {}).get(aspect) for k in keys]
        pb = [(b[k].get("pred") or {}).get(aspect) for k in keys]
        for stat in ("spearman", "kendall"):
            out.append(
                paired_metric_difference(g, pa, pb, stat, names=names, metric=f"{aspect} {stat}", clusters=clusters)
            )
    return out


def setting_pairs(names: Sequence[str], run_dirs: Sequence[str]) -> list[tuple[str, str]]:
    """(setting, baseline) pairs of judge settings: each against ``single`` if it ran, else the
    first; settings that share a sub-run (the same judge) are compared once."""
    first_of: dict[str, str] = {}
    for n, d in zip(names, run_dirs):
        first_of.setdefault(d, n)
    distinct = list(first_of.values())
    if len(distinct) < 2:
        return []
    baseline = "single" if "single" in distinct else distinct[0]
    return choose_pairs(distinct, baseline=baseline)


# --- reports ---------------------------------------------------------------------------------


def report_lines(summary: dict[str, Any]) -> list[str]:
    """The report section of a summary's ``comparisons`` (nothing when there are none)."""
    comparisons = read_comparisons(summary)
    return ["", *comparisons_markdown(comparisons)] if comparisons else []
