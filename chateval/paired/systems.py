"""Several systems: which pairs to compare, the comparisons by item id, the report table."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence

from .difference import paired_difference
from .model import FEW_CLUSTERS as FEW_CLUSTER_LIMIT
from .model import MAX_ALL_PAIRS, RESAMPLES, SEED, PairedDifference

FEW_CLUSTERS = 5  # at or below, the report notes the smallest p-value a cluster test can reach


def choose_pairs(names: Sequence[str], *, baseline: str | None = None) -> list[tuple[str, str]]:
    """Which pairs to compare among k systems. With a ``baseline`` (a single judge, the first
    setting): each other system against it. Otherwise every pair while k <= MAX_ALL_PAIRS (few
    tests, all readable), and each system against the first beyond that: k(k-1)/2 tests would
    swamp the report and make some "significant" by chance alone."""
    names = list(dict.fromkeys(names))
    if baseline is not None:
        return [(x, baseline) for x in names if x != baseline]
    if len(names) <= MAX_ALL_PAIRS:
        return list(itertools.combinations(names, 2))
    return [(x, names[0]) for x in names[1:]]


def compare_systems(
    values: Mapping[str, Mapping[Hashable, float | bool | None]],
    *,
    metric: str,
    clusters: Mapping[Hashable, Hashable] | None = None,
    baseline: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> list[PairedDifference]:
    """Paired differences between systems given as {system: {item id: value}}. Items are aligned
    by id (an id missing on one side is dropped from that pair); ``clusters`` maps an item id to
    its cluster. Pairs as :func:`choose_pairs`."""
    out = []
    for x, y in choose_pairs(list(values), baseline=baseline):
        ids = sorted(set(values[x]) | set(values[y]), key=str)
        cl = None if clusters is None else [clusters.get(i, i) for i in ids]
        out.append(
            paired_difference(
                [values[x].get(i) for i in ids],
                [values[y].get(i) for i in ids],
                names=(x, y),
                metric=metric,
                clusters=cl,
                resamples=resamples,
                seed=seed,
            )
        )
    return out


def _num(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:+.{digits}f}"


def _value(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _p(v: float | None) -> str:
    if v is None:
        return "—"
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def comparisons_markdown(
    comparisons: Sequence[PairedDifference], *, title: str = "## Paired comparisons", digits: int = 3
) -> list[str]:
    """A report section: one row per comparison (pair, metric, diff, 95% CI, p, test, n)."""
    if not comparisons:
        return []
    c0 = comparisons[0]
    lines = [
        title,
        "",
        f"Difference A − B on the items both have, 95% percentile-bootstrap interval "
        f"({c0.resamples} resamples, seed {c0.seed}; items resampled together, clusters whole) "
        "and a paired two-sided p-value.",
        "",
        "| A vs B | metric | A | B | diff | 95% CI | p | test | n |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        ci = "—" if c.ci95 is None else f"[{_num(c.ci95[0], digits)}, {_num(c.ci95[1], digits)}]"
        n = f"{c.n}" + (f" ({c.n_clusters} clusters)" if c.n_clusters is not None else "")
        lines.append(
            f"| {_cell(c.a)} vs {_cell(c.b)} | {_cell(c.metric)} | {_value(c.value_a, digits)} | "
            f"{_value(c.value_b, digits)} | {_num(c.diff, digits)} | {ci} | "
            f"{_p(c.p_value)} | {c.test or '—'} | {n} |"
        )
    notes = [c for c in comparisons if c.reason]
    if notes:
        lines.append("")
        lines += [f"- {_cell(c.a)} vs {_cell(c.b)} ({c.metric}): {c.reason}" for c in notes]
    few = sorted({c.n_clusters for c in comparisons if c.n_clusters is not None and c.n_clusters <= FEW_CLUSTERS})
    if few:
        # A cluster-level test cannot reach small p-values with a handful of clusters: say so.
        lines += [
            "",
            f"With {' or '.join(map(str, few))} clusters the permutation test has only 2^k sign patterns: "
            f"the smallest p it can give is {', '.join(f'{2 / 2**k:.3g}' for k in few)}, and the "
            "interval rests on that many independent units.",
        ]
    sparse = sorted({c.n_clusters for c in comparisons if c.few_clusters and c.n_clusters is not None})
    if sparse:
        lines += [
            "",
            f"**Few clusters** ({', '.join(map(str, sparse))}; fewer than {FEW_CLUSTER_LIMIT}): a bootstrap over so "
            "few units is too narrow, so these intervals are the inverted exact permutation test (a mean) or a "
            "delete-one-cluster jackknife t (kappa, correlations), and a difference counts as excluding zero "
            "only when the exact test's p is at most 0.05 too.",
        ]
    return lines + [""]
