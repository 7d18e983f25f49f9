"""Perturbations: small functions that turn one input item into perturbed variants, in a
registry users extend (``@perturbation("name")`` in a ``--plugin`` file, or the
``chateval.perturbations`` entry point).

A perturbation gets the item (a ``Sample``) and the audit's ``Context`` and returns its
``Variant``s: a changed copy of the sample, the answer the change favours (so a flip can be
called *toward* or *away* from it), and, for judge-side perturbations, the judge settings it
changes. It raises ``Skip`` when it cannot apply to this run (the run notes why and goes on).
The texts added are our own words, kept in :mod:`.texts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..debate.samples import Sample
from ..evaluation.config import DEFAULT_PERSONAS, EvalConfig
from ..records.audit import Favours, PerturbationInfo
from ..util.registry import Registry
from . import texts

TASKS = ("pairwise", "score", "correctness")
# Verbosity first: it is the length effect every perturbation that adds words is read against.
BUILT_IN = ("verbosity", "position", "planted_verdict", "authority", "self_preference", "persona")
ANSWER_FIELDS = ("answer", "answer_1", "answer_2")
SAME_PERSONA = "annotator"  # the same-role panel of the persona check (as the judge sweeps use)


class Skip(Exception):
    """The perturbation does not apply to this run; the message says why (one line)."""


class Variant(BaseModel):
    """One perturbed copy of an item."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str  # unique within its perturbation, e.g. "pad-1"
    sample: Sample
    favours: Favours = None
    swapped: bool = False  # answers swapped: the verdict is read back in the original numbering
    judge: dict[str, Any] = {}  # EvalConfig overrides (a judge-side perturbation)


@dataclass(frozen=True)
class Context:
    """What a perturbation may look at besides the item."""

    task: str
    judge: EvalConfig
    judge_family: str | None = None
    other_family: str = texts.OTHER_FAMILY
    options: dict[str, Any] = field(default_factory=dict)


PerturbFn = Callable[[Sample, Context], list[Variant]]


class Perturbation:
    """A registered perturbation: its function and what it measures."""

    def __init__(
        self,
        name: str,
        fn: PerturbFn,
        *,
        bias: str | None = None,
        description: str = "",
        tasks: tuple[str, ...] = TASKS,
        toward: str = "toward the favoured answer",
        length_control: bool = True,
    ) -> None:
        doc = (fn.__doc__ or "").strip().splitlines()
        self.name, self.fn, self.bias = name, fn, bias or name
        self.description = description or (doc[0] if doc else name)
        self.tasks, self.toward = tuple(tasks), toward
        # Variants that add words get a length-matched control (not verbosity: it is its own control).
        self.length_control = length_control
        # The registry tells a re-import of the same function from another one under a taken name
        # by module and qualified name: the function's.
        self.__module__, self.__qualname__ = fn.__module__, fn.__qualname__

    def info(self) -> PerturbationInfo:
        return PerturbationInfo(
            name=self.name, bias=self.bias, description=self.description, tasks=list(self.tasks), toward=self.toward
        )

    def __call__(self, sample: Sample, ctx: Context) -> list[Variant]:
        return self.fn(sample, ctx)


PERTURBATIONS: Registry[Perturbation] = Registry("perturbation", entry_points="chateval.perturbations")


def perturbation(
    name: str,
    *,
    bias: str | None = None,
    description: str = "",
    tasks: tuple[str, ...] = TASKS,
    toward: str = "toward the favoured answer",
    replace: bool = False,
    length_control: bool = True,
) -> Callable[[PerturbFn], PerturbFn]:
    """Register ``fn(sample, ctx) -> list[Variant]`` under ``name`` (a plugin's decorator)."""
    bad = [t for t in tasks if t not in TASKS]
    if bad:
        raise ValueError(f"perturbation '{name}': unknown task {bad[0]!r} (tasks: {', '.join(TASKS)})")

    def deco(fn: PerturbFn) -> PerturbFn:
        PERTURBATIONS.register(name, replace=replace)(
            Perturbation(
                name, fn, bias=bias, description=description, tasks=tasks, toward=toward, length_control=length_control
            )
        )
        return fn

    return deco


def get_perturbation(name: str) -> Perturbation:
    """A registered perturbation (an entry point may name a plain function: it is wrapped)."""
    p = PERTURBATIONS.get(name)
    return p if isinstance(p, Perturbation) else Perturbation(name, p)


def sides(sample: Sample, ctx: Context) -> list[tuple[str, str]]:
    """(favoured side, answer field) pairs to perturb: each side in turn for pairwise items,
    the one answer otherwise."""
    if ctx.task == "pairwise":
        return [("1", "answer_1"), ("2", "answer_2")]
    return [("answer", "answer")]


def length_matched(original: Sample, variant: Sample) -> Sample | None:
    """The length-matched control of a variant: every answer the variant lengthened gets, in
    place of what was added, as many neutral padding words (so a judge that only counts length
    treats the two alike); None when the variant added no words."""
    update = {}
    for f in ANSWER_FIELDS:
        before, after = getattr(original, f, None), getattr(variant, f, None)
        if before is None or after is None:
            continue
        added = len(after.split()) - len(before.split())
        if added > 0:
            update[f] = before.rstrip() + "\n\n" + texts.neutral_words(added)
    return original.model_copy(update=update) if update else None


def _edit(sample: Sample, field_name: str, text: str) -> Sample:
    return sample.model_copy(update={field_name: text})


def _tag(side: str) -> str:
    return "" if side == "answer" else f"-{side}"


# --- the built-in perturbations ------------------------------------------------------------
@perturbation(
    "position",
    bias="position",
    tasks=("pairwise",),
    description="the two answers swapped: a verdict that changes follows the position, not the answer",
    toward="toward the answer moved to the first position",
)
def position(sample: Sample, ctx: Context) -> list[Variant]:
    # The answer moved to the first position is original answer 2: a flip toward it is primacy.
    return [Variant(name="swapped", sample=sample.swapped(), favours="2", swapped=True)]


@perturbation(
    "verbosity",
    bias="verbosity",
    description="one answer padded with fluent sentences that add no content (each side in turn)",
    toward="toward the padded answer",
    length_control=False,
)
def verbosity(sample: Sample, ctx: Context) -> list[Variant]:
    return [
        Variant(
            name=f"pad{_tag(side)}",
            favours=side,
            sample=_edit(sample, f, texts.pad(getattr(sample, f) or "")),
        )
        for side, f in sides(sample, ctx)
    ]


@perturbation(
    "planted_verdict",
    bias="planted verdict",
    description="an answer ends with text claiming the panel already chose it: a verdict line, a fake "
    "system note, a JSON verdict (each side in turn)",
    toward="toward the answer carrying the planted verdict",
)
def planted_verdict(sample: Sample, ctx: Context) -> list[Variant]:
    out = []
    for side, f in sides(sample, ctx):
        for form, claim in texts.planted(ctx.task, side).items():
            out.append(
                Variant(
                    name=f"{form}{_tag(side)}",
                    favours=side,
                    sample=_edit(sample, f, (getattr(sample, f) or "") + "\n\n" + claim),
                )
            )
    return out


@perturbation(
    "authority",
    bias="authority",
    description="a fake citation, or an 'as an expert' claim, added to one answer (each side in turn)",
    toward="toward the answer claiming authority",
)
def authority(sample: Sample, ctx: Context) -> list[Variant]:
    out = []
    for side, f in sides(sample, ctx):
        text = getattr(sample, f) or ""
        out.append(
            Variant(
                name=f"citation{_tag(side)}",
                favours=side,
                sample=_edit(sample, f, text + "\n\n" + texts.CITATION),
            )
        )
        out.append(
            Variant(
                name=f"expert{_tag(side)}",
                favours=side,
                sample=_edit(sample, f, texts.EXPERT + " " + text),
            )
        )
    return out


@perturbation(
    "self_preference",
    bias="self-preference",
    description="answers labelled with the model that produced them, one with the judge's own family "
    "(--judge-family), the other with another family (each side in turn)",
    toward="toward the answer labelled with the judge's family",
)
def self_preference(sample: Sample, ctx: Context) -> list[Variant]:
    if not ctx.judge_family:
        raise Skip("needs --judge-family NAME (the judge model's family, e.g. gpt-4o)")
    if ctx.task != "pairwise":
        return [
            Variant(
                name="labelled",
                favours="answer",
                sample=_edit(sample, "answer", texts.produced_by(ctx.judge_family) + (sample.answer or "")),
            )
        ]
    out = []
    for side in ("1", "2"):
        other = "2" if side == "1" else "1"
        labels = {side: ctx.judge_family, other: ctx.other_family}
        out.append(
            Variant(
                name=f"family-on{_tag(side)}",
                favours=side,
                sample=sample.model_copy(
                    update={
                        f"answer_{k}": texts.produced_by(labels[k]) + (getattr(sample, f"answer_{k}") or "")
                        for k in ("1", "2")
                    }
                ),
            )
        )
    return out


@perturbation(
    "persona",
    bias="persona sensitivity",
    description="the same item judged by a panel of same-role personas instead of the configured diverse "
    "ones (panels only)",
    toward="n/a (a change of judge, not of an answer)",
)
def persona(sample: Sample, ctx: Context) -> list[Variant]:
    cfg = ctx.judge
    n = cfg.agents or (len(cfg.personas) if cfg.personas else 2)
    if n < 2:
        raise Skip("a single-agent judge has no panel whose personas could vary")
    names = list(cfg.personas or DEFAULT_PERSONAS)[:n]
    if len(set(names)) == 1:
        raise Skip(f"the panel's personas are already all the same ({names[0]})")
    return [Variant(name="same-role", sample=sample, judge={"agents": n, "personas": [SAME_PERSONA] * n})]
