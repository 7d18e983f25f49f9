"""The typed summary of a rejudge run (``OUT/summary.json``; read it with ``read_rejudge``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..util.errors import InputError


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Rate(_Model):
    """A share of items accepted, with its 95% Wilson interval; ``mean``: the mean per-item value
    (recorded verdicts: the per-run mean; f1: the mean F1)."""

    n: int
    accepted: int
    rate: float | None
    wilson95: tuple[float, float] | None = None
    mean: float | None = None


class Score(_Model):
    """One set under one judge."""

    judge: str
    offline: bool  # scored without a model (recorded verdicts, F1) or by the offline heuristic
    n: int  # items with a verdict
    n_missing: int = 0  # items without one (no recorded verdict, a failed judgement)
    accuracy: float | None  # share of items accepted (recorded: majority of runs; f1: F1 >= threshold)
    accuracy_ci95: tuple[float, float] | None = None  # conversations resampled whole
    mean: float | None = None  # mean per-item value (recorded: per-run mean; f1: mean F1)
    mean_ci95: tuple[float, float] | None = None
    per_run: dict[str, float] = Field(default_factory=dict)  # recorded: each run's accuracy
    categories: dict[str, Rate] = Field(default_factory=dict)
    false_acceptance: bool = False  # a known-wrong set: accuracy is the false-acceptance rate
    corrected: Score | None = None  # --errata: the same judge on the corrected gold
    note: str | None = None


class Kappa(_Model):
    n: int
    value: float | None
    ci95: tuple[float, float] | None = None
    agreement: float | None = None
    reason: str | None = None


class PairResult(_Model):
    """Two judges on the same items of one set."""

    a: str
    b: str
    kappa: Kappa
    difference: dict[str, Any]  # a chateval.paired PairedDifference (acceptance, a - b)


class LengthEffect(_Model):
    n: int
    median_words: float | None = None
    slope_per_doubling: float | None = None  # change in acceptance when the answer doubles in length
    ci95: tuple[float, float] | None = None
    bins: dict[str, Rate] = Field(default_factory=dict)
    reason: str | None = None


class Errata(_Model):
    """A set against an errata file."""

    path: str
    sha256: str
    matched: int  # items the errata list
    wrong_gold: int  # of them, items whose gold answer is wrong
    ceiling: float  # share of items whose gold stands: the best a perfect system scores on raw gold
    credits_on_wrong_gold: dict[str, int] = Field(default_factory=dict)  # recorded judge -> accepted on wrong gold
    credits_only_from_wrong_gold: dict[str, int] = Field(default_factory=dict)  # ... not matching the corrected gold
    error_types: dict[str, int] = Field(default_factory=dict)


class SetResult(_Model):
    label: str
    path: str
    format: str
    sha256: str | None = None
    wrong: bool = False
    n_items: int
    n_conversations: int
    recorded_judges: list[str] = Field(default_factory=list)
    scores: dict[str, Score] = Field(default_factory=dict)
    pairs: list[PairResult] = Field(default_factory=list)
    length: dict[str, LengthEffect] = Field(default_factory=dict)
    errata: Errata | None = None
    protocol_card: dict[str, Any] | None = None  # chateval.records.protocol_card.ProtocolCard
    # The rates the file states about itself against ours from its recorded verdicts:
    # {name: (stated, ours, equal)}.
    stated: dict[str, tuple[float, float | None, bool]] = Field(default_factory=dict)


class RankRow(_Model):
    judge: str
    ranks: dict[str, int]  # set -> rank (1 = highest accuracy)
    scores: dict[str, float]


class RankAgreement(_Model):
    a: str
    b: str
    sets: list[str]
    n_sets: int
    tau: float | None = None
    ci95: tuple[float, float] | None = None
    resamples: int | None = None
    reason: str | None = None


class RejudgeSummary(_Model):
    format_version: int = 1
    kind: str = "rejudge"
    judges: list[str]
    offline_judges: list[str]
    model: str | None = None  # the model of the LLM judges (None: only offline judges)
    sets: dict[str, SetResult]
    ranks: list[RankRow] = Field(default_factory=list)
    rank_agreement: list[RankAgreement] = Field(default_factory=list)
    f1_threshold: float
    resamples: int
    seed: int
    complete: bool = True
    n_failed: int = 0
    usage: dict[str, Any] = Field(default_factory=dict)
    protocol_card: dict[str, Any] | None = None  # one set: its card (each set's is in its SetResult)
    notes: list[str] = Field(default_factory=list)


def write_rejudge(out: Path, summary: RejudgeSummary) -> None:
    from ..runs.files import atomic_write

    atomic_write(out / "summary.json", summary.model_dump_json(indent=2))


def read_rejudge(path: str | Path) -> RejudgeSummary:
    p = Path(path)
    f = p / "summary.json" if p.is_dir() else p
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{f}: not a rejudge summary ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != "rejudge":
        raise InputError(f"{f}: not a rejudge summary (kind is not 'rejudge')")
    return RejudgeSummary.model_validate(data)
