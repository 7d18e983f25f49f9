"""Agreement among several raters: the annotators' Krippendorff's alpha and Fleiss' kappa (beside
the leave-one-out ceiling), and the judge settings' agreement with each other.

- **Krippendorff's alpha** (the ``krippendorff`` package, the ``agreement`` extra, imported
  lazily): nominal for labels, interval for scores (per aspect, averaged over the aspects as the
  other score statistics are). It takes any number of annotators per item; an item's labels are
  one unit's values (alpha does not need to know which annotator gave which label).
- **Fleiss' kappa** (statsmodels, the ``agreement`` extra): labels only, and it assumes the same number of raters on every
  item, so it is computed over the items with the most common number of annotators (at least 2)
  and says how many those are.
- **Judge vs judge**: Cohen's kappa (labels) or Spearman's rho averaged over the aspects (scores)
  between every pair of settings, on the items both judged — which settings are in effect the
  same judge.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..stats.labels import annotator_labels
from .records import Stat

if TYPE_CHECKING:
    from .metrics import Items

EXTRA = "pip install 'chateval[agreement]' (the krippendorff package)"


def _multi(items: Items) -> dict[str, list[Any]]:
    """Items with two or more usable annotator labels: id -> their labels."""
    out = {}
    for i, lab in items.raw.items():
        if items.task in ("pairwise", "correctness", "score"):
            labels = annotator_labels(items.task, lab)
        else:  # a plugin's task: its labels as given
            labels = [x for x in (lab if isinstance(lab, list) else [lab]) if x is not None]
        if len(labels) >= 2:
            out[i] = labels
    return out


def _alpha(data: np.ndarray, level: Literal["nominal", "interval"]) -> float | None:
    import krippendorff

    try:
        with np.errstate(all="ignore"):
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    except ValueError:  # one value in the whole domain, or no pairable values: alpha is undefined
        return None
    return None if math.isnan(value) else value


def _matrix(columns: list[list[float]]) -> np.ndarray:
    """Reliability data (raters x units): unit j's values down column j, NaN below them."""
    width = max(len(c) for c in columns)
    data = np.full((width, len(columns)), np.nan)
    for j, c in enumerate(columns):
        data[: len(c), j] = c
    return data


def krippendorff_alpha(items: Items) -> Stat:
    multi = _multi(items)
    if len(multi) < 2:
        return Stat(value=None, n=len(multi), reason="fewer than 2 items with several annotators")
    try:
        import krippendorff  # noqa: F401
    except ImportError:
        return Stat(value=None, n=len(multi), reason=f"not computed: {EXTRA}")
    if not items.scored:
        code = {c: k for k, c in enumerate(items.format.classes)}
        cols = [c for c in ([float(code[x]) for x in labs if x in code] for labs in multi.values()) if len(c) >= 2]
        value = _alpha(_matrix(cols), "nominal") if len(cols) >= 2 else None
        reason = None if value is not None else "undefined: every label is the same"
        return Stat(value=value, n=len(multi), reason=reason)
    per = []
    for aspect in items.aspects:
        cols = [[v for v in (_score(x, aspect) for x in labs) if v is not None] for labs in multi.values()]
        per.append(_alpha(_matrix([c for c in cols if c] or [[math.nan]]), "interval"))
    if any(v is None for v in per):
        return Stat(value=None, n=len(multi), reason="undefined for an aspect (no variation)")
    return Stat(value=float(np.mean([v for v in per if v is not None])), n=len(multi))


def _score(x: Any, aspect: str) -> float | None:
    if isinstance(x, dict):
        v = x.get(aspect)
        return None if v is None else float(v)
    return float(x) if aspect == "score" else None


def fleiss(items: Items) -> Stat:
    if items.scored:
        return Stat(value=None, reason="labels only (scores: Krippendorff's alpha, interval)")
    multi = _multi(items)
    if not multi:
        return Stat(value=None, reason="no item with several annotators")
    m = Counter(len(v) for v in multi.values()).most_common(1)[0][0]
    rows = [labs for labs in multi.values() if len(labs) == m]
    if len(rows) < 2:
        return Stat(value=None, n=len(rows), reason="fewer than 2 items with the same number of annotators")
    try:
        from statsmodels.stats.inter_rater import fleiss_kappa
    except ImportError:  # the judge's core install: the agreement extra brings it
        return Stat(value=None, n=len(rows), reason="needs statsmodels: pip install 'chateval[agreement]'")

    classes = list(items.format.classes)
    table = np.array([[labs.count(c) for c in classes] for labs in rows])
    with np.errstate(all="ignore"):
        value = float(fleiss_kappa(table, method="fleiss"))
    skipped = len(multi) - len(rows)
    note = f"the {len(rows)} items with {m} annotators" + (
        f" ({skipped} with another count left out)" if skipped else ""
    )
    if math.isnan(value):
        return Stat(value=None, n=len(rows), reason=f"undefined: every label is the same ({note})")
    return Stat(value=value, n=len(rows), reason=note)


def annotator_agreement(items: Items) -> dict[str, Stat]:
    """Krippendorff's alpha and Fleiss' kappa of the annotators (empty without several annotators)."""
    if not _multi(items):
        return {}
    return {"krippendorff_alpha": krippendorff_alpha(items), "fleiss_kappa": fleiss(items)}


def judge_agreement(items: Items, preds: dict[str, dict[str, Any]]) -> tuple[str, dict[str, dict[str, float | None]]]:
    """(metric, {setting: {setting: value}}) between every pair of settings on the items both judged."""
    # Ours, not scikit-learn's and scipy's: the judge's core install has neither (spearman is None
    # without scipy, and so the mean over aspects).
    from ..stats.agreement import cohen_kappa, spearman

    names = list(preds)
    metric = "spearman" if items.scored else "kappa"
    out: dict[str, dict[str, float | None]] = {a: {} for a in names}
    for a in names:
        for b in names:
            ids = [i for i in preds[a] if i in preds[b] and preds[a][i] is not None and preds[b][i] is not None]
            value: float | None = None
            if not items.scored:
                x, y = [str(preds[a][i]) for i in ids], [str(preds[b][i]) for i in ids]
                with np.errstate(all="ignore"):
                    if len(ids) >= 2 and len(set(x) | set(y)) > 1:
                        value = cohen_kappa(x, y, sorted(set(x) | set(y)))["value"]
            elif len(ids) >= 3:
                rhos = []
                for aspect in items.aspects:
                    fx = [_score(preds[a][i], aspect) for i in ids]
                    fy = [_score(preds[b][i], aspect) for i in ids]
                    pairs = [(u, v) for u, v in zip(fx, fy) if u is not None and v is not None]
                    if len(pairs) >= 3 and len({u for u, _ in pairs}) > 1 and len({v for _, v in pairs}) > 1:
                        rho = spearman([u for u, _ in pairs], [v for _, v in pairs])["value"]
                        if rho is not None:
                            rhos.append(rho)
                value = float(np.mean(rhos)) if rhos and len(rhos) == len(items.aspects) else None
            out[a][b] = None if value is None or math.isnan(value) else value
    return metric, out
