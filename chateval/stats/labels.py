"""Human labels with several annotators: the reference the judge is compared with, and the pairs
behind the annotators' own agreement (the human ceiling).

A record's ``label`` is one annotator's label or a list of them (one per annotator):
- pairwise (``1``/``2``/``tie``) and correctness (``true``/``false``): the reference is the
  plurality label. When two or more labels share the top count, a pairwise reference is
  ``tie`` (the people are split: neither answer is preferred) and a correctness reference is
  None (unresolved: the item is left out of agreement and counted).
- score (a number, or ``{aspect: number}``): the reference is the annotators' mean (per aspect,
  over the annotators who rated that aspect).

The ceiling is leave-one-out: each annotator's label on an item against the reference formed
by the *other* annotators of that item (their plurality or mean), over every item with at
least two annotators, pooled over (item, annotator) pairs.
"""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

MAX_ANNOTATORS = 100


def normalise_label(task: str, label: Any) -> Any:
    """One label as the verdict expresses it: '1'/'2'/'tie' or True/False; None if unusable."""
    if label is None:
        return None
    if task == "pairwise":
        s = str(label).strip().lower()
        return {"1": "1", "2": "2", "tie": "tie", "answer_1": "1", "answer_2": "2"}.get(s)
    if task == "correctness":
        if isinstance(label, bool):
            return label
        s = str(label).strip().lower()
        return {"correct": True, "incorrect": False, "true": True, "false": False, "yes": True, "no": False}.get(s)
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def score_label(label: Any) -> float | dict[str, float] | None:
    """One score label: a number, or {aspect: number}; None if unusable."""
    if _number(label):
        return float(label)
    if isinstance(label, dict):
        return {str(k): float(v) for k, v in label.items() if _number(v)}
    return None


def annotator_labels(task: str, label: Any) -> list[Any]:
    """The usable labels of a record, one per annotator (a single label is one annotator)."""
    raw = label if isinstance(label, list) else [label]
    one = score_label if task == "score" else (lambda x: normalise_label(task, x))
    return [v for v in (one(x) for x in raw) if v is not None and v != {}]


def combine(task: str, labels: list[Any]) -> Any:
    """The reference of these annotators' labels (plurality or mean, as the module says)."""
    if not labels:
        return None
    if task == "score":
        if all(isinstance(v, float) for v in labels):
            return mean(labels)
        dicts = [v for v in labels if isinstance(v, dict)]
        aspects = sorted({a for d in dicts for a in d})
        return {a: mean(d[a] for d in dicts if a in d) for a in aspects} or None
    counts = Counter(labels).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "tie" if task == "pairwise" else None
    return counts[0][0]


def reference_label(task: str, label: Any) -> Any:
    """The reference of a record's label (one annotator's label, or the annotators' plurality or
    mean): '1'/'2'/'tie', True/False, a float or {aspect: float}; None when unusable."""
    return combine(task, annotator_labels(task, label))


def leave_one_out(task: str, label: Any) -> list[tuple[Any, Any]]:
    """(one annotator's label, the others' reference) for each annotator of an item with at least
    two; pairs whose other side is unresolved are left out."""
    labels = annotator_labels(task, label)
    if len(labels) < 2:
        return []
    pairs = []
    for i, own in enumerate(labels):
        others = combine(task, labels[:i] + labels[i + 1 :])
        if others is not None:
            pairs.append((own, others))
    return pairs
