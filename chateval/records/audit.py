"""The records of ``chateval audit``, written and read through this one module: what the run
writes (one ``AuditUnit`` per judged variant in samples.jsonl, an ``AuditSummary`` in
summary.json) and what the viewer, the report and a user's notebook read back (``read_audit``).

A *variant* is one perturbed copy of an input item (or the item itself, ``original``); an
``AuditedVariant`` pairs a variant's verdict with its item's original verdict and says whether
the verdict flipped and which way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field, ValidationError

from ..debate.panel import JudgeResult
from ..paired import PairedDifference
from ..runs.envelope import check
from ..runs.folder import SUMMARY
from ..util.errors import InputError
from .run import read_run

FORMAT_VERSION = 1  # fields added since are optional: version-1 readers still read them
ORIGINAL = "original"
# Which answer a variant favours: a pairwise side, the single answer of a score/correctness
# item, or none (a change of judge, not of the input).
Favours = Literal["1", "2", "answer"] | None
Direction = Literal["toward", "away"] | None


class PerturbationInfo(BaseModel):
    """A registered perturbation as a run records it."""

    name: str
    bias: str  # what it measures, in a few words
    description: str
    tasks: list[str]
    toward: str = "toward the favoured answer"  # what a flip 'toward' means for it


class AuditUnit(JudgeResult):
    """One line of samples.jsonl: one judged variant of one item (the judge's full result)."""

    key: str
    item: str  # the input item's id
    perturbation: str  # a registered name, or "original"
    variant: str  # e.g. "pad-1", "planted-json-2"; "original" for the item itself
    favours: Favours = None
    swapped: bool = False  # the answers were swapped: the verdict is read back in the original numbering
    judge: dict[str, Any] = Field(default_factory=dict)  # judge settings the variant changes (personas)
    # The length-matched control of the variant ``variant``: the words it added replaced by as many
    # neutral words in the same answers (key ``ITEM::PERTURBATION::VARIANT~length``).
    control: bool = False
    format_version: int = FORMAT_VERSION


class KeptVerdict(NamedTuple):
    """What the summary reads of a verdict (see :class:`KeptUnit`)."""

    winner: Any
    correct: Any
    score: Any


class KeptUnit(NamedTuple):
    """What the audit's summary reads of a judged variant: its keys, what it favours and its
    verdict's outcome. ``chateval audit`` keeps one per variant (a few hundred bytes, against
    about 5 KiB for an ``AuditUnit`` even without its debate; issue 38 item 3)."""

    key: str
    item: str
    perturbation: str
    variant: str
    favours: Favours
    swapped: bool
    control: bool
    status: str
    verdict: KeptVerdict | None

    @classmethod
    def of(cls, u: AuditUnit) -> KeptUnit:
        v = u.verdict
        return cls(
            u.key,
            sys.intern(u.item),  # shared by an item's variants; names shared by every item
            sys.intern(u.perturbation),
            sys.intern(u.variant),
            u.favours,
            u.swapped,
            u.control,
            sys.intern(u.status),
            None if v is None else KeptVerdict(v.winner, v.correct, v.score),
        )


class AuditedVariant(BaseModel):
    """A variant's verdict next to its item's original verdict."""

    item: str
    key: str  # the variant's key in samples.jsonl (and its anchor in the viewer)
    original_key: str
    perturbation: str
    variant: str
    favours: Favours = None
    original: Any = None  # winner "1"/"2"/"tie", correct true/false/null, or a score
    perturbed: Any = None  # in the original numbering
    flipped: bool
    direction: Direction = None
    # The favoured answer had not won the original verdict (pairwise: lost or tied; correctness:
    # not judged correct; score: always, no answer had won), so obeying the perturbation changes
    # the verdict; None when the variant favours no answer.
    lost: bool | None = None
    control: bool = False  # a length-matched control, not a variant of the perturbation itself


class BiasSummary(BaseModel):
    """One perturbation's flip rate over the run."""

    perturbation: str
    bias: str
    toward_means: str
    n: int  # variants compared (both verdicts present)
    n_items: int
    flips: int
    rate: float | None
    ci95: tuple[float, float] | None  # Wilson
    toward: int
    away: int
    by_variant: dict[str, dict[str, Any]] = Field(default_factory=dict)  # variant -> {n, flips, rate}
    not_compared: int = 0  # variants (or their originals) that failed or gave no verdict
    # The headline: among variants favouring the answer that had lost (``lost``), the share whose
    # verdict flipped toward it. A judge that always obeys the perturbation reads 100%.
    n_lost: int = 0
    toward_lost: int = 0
    rate_lost: float | None = None
    ci95_lost: tuple[float, float] | None = None
    # The other half: variants favouring the answer that had already won (any flip counts).
    n_won: int = 0
    flips_won: int = 0
    rate_won: float | None = None
    ci95_won: tuple[float, float] | None = None
    # Net of length (perturbations that add words): the headline's variants against their
    # length-matched controls, paired (chateval.paired: rate_lost minus the controls' rate).
    control_rate_lost: float | None = None
    net_of_length: PairedDifference | None = None

    @property
    def headline_rate(self) -> float | None:
        """What the report leads with: ``rate_lost``, or the plain flip rate when no variant
        favours an answer (persona)."""
        return self.rate_lost if self.n_lost else self.rate


class AuditSummary(BaseModel):
    """summary.json of an audit run."""

    kind: Literal["audit"] = "audit"
    format_version: int = FORMAT_VERSION
    input: str
    task: str
    model: str
    offline: bool
    note: str | None = None
    judge: dict[str, Any] = Field(default_factory=dict)  # strategy, agents, turns, personas, swap
    perturbations: list[PerturbationInfo] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)  # perturbation -> why it did not run
    n_items: int
    n_units: int
    n_ok: int
    n_failed: int
    failed_keys: list[str] = Field(default_factory=list)
    complete: bool
    biases: list[BiasSummary] = Field(default_factory=list)
    variants: list[AuditedVariant] = Field(default_factory=list)
    score_threshold: float | None = None  # score task: the change that counts as a flip
    usage: dict[str, Any] = Field(default_factory=dict)
    calls_per_item: float | None = None  # model calls made (not from cache) per input item
    headline: list[dict[str, Any]] = Field(default_factory=list)
    config_hash: str = ""
    wall_time_s: float = 0.0
    wall_time_attempts_s: list[float] = Field(default_factory=list)


def is_audit(summary: dict[str, Any]) -> bool:
    return isinstance(summary, dict) and summary.get("kind") == "audit"


def _run_dir(path: Path) -> Path:
    """The run directory of ``path``: itself, or the folder of its summary.json."""
    return path if path.is_dir() or path.name != SUMMARY else path.parent


def read_summary(path: str | Path) -> AuditSummary:
    path = _run_dir(Path(path))
    run = read_run(path, samples=False, subruns=False)
    if run.summary is None:
        raise InputError(f"{path / SUMMARY}: no such file (the audit stopped before its summary)")
    return check(AuditSummary, run.summary.data(), f"{path / SUMMARY}: not an audit summary;")


def read_units(path: str | Path) -> list[AuditUnit]:
    """The judged variants of an audit run directory (foreign records skipped; an unreadable
    line, but a torn last one, is an error naming it)."""
    out = []
    for rec in read_run(_run_dir(Path(path)), subruns=False).records:
        try:
            out.append(AuditUnit.model_validate(rec.data()))
        except ValidationError:
            continue
    return out


def read_audit(path: str | Path) -> tuple[AuditSummary, list[AuditUnit]]:
    """An audit run directory: its summary and every judged variant."""
    return read_summary(path), read_units(path)
