"""Self-consistency (``--samples N``): the same judge asked N times at a temperature above 0;
the majority of the N verdicts is the verdict, and how far the repeats agree is reported per
item (a judge whose repeats disagree is guessing on that item). The repeats are run by
``chateval.evaluation.repeats``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from pydantic import BaseModel

from .samples import Verdict
from .tasks import TaskFormat


class Consistency(BaseModel):
    """How the N repeats of one item agreed (one field of its samples.jsonl line)."""

    samples: int  # repeats asked
    n_ok: int  # repeats that gave a verdict
    verdicts: list[Any]  # each repeat's verdict as its label would say it (None: no verdict)
    majority: Any = None  # the most frequent verdict (ties: the one given first)
    agreement: float | None = None  # share of the repeats with a verdict that gave the majority
    pair_agreement: float | None = None  # share of pairs of repeats with a verdict that agree


def verdict_key(task: TaskFormat, verdict: Verdict | None) -> Any:
    """A repeat's verdict as its label would say it: comparable between repeats (JSON text
    for a score task's mapping of aspect scores); None without a verdict."""
    if verdict is None:
        return None
    pred = task.prediction(verdict.model_dump(mode="json"))
    return json.dumps(pred, sort_keys=True) if isinstance(pred, dict) else pred


def consistency(keys: Sequence[Any]) -> Consistency:
    ok = [k for k in keys if k is not None]
    out = Consistency(samples=len(keys), n_ok=len(ok), verdicts=list(keys))
    if not ok:
        return out
    counts = Counter(ok)
    out.majority = max(counts, key=lambda k: (counts[k], -ok.index(k)))
    out.agreement = counts[out.majority] / len(ok)
    pairs = list(combinations(ok, 2))
    out.pair_agreement = sum(a == b for a, b in pairs) / len(pairs) if pairs else None
    return out
