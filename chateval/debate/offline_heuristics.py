"""The offline model's heuristics: deterministic, never LLM judgements (the steps that use them
are in offline_judge; each task format turns them into its verdict).

A debater's view of an answer combines four features computed from the sample's fields:
coverage of the question's content words, agreement with the reference (token F1), support
in the context (share of the answer's content words found there) and detail (length,
saturating). Each persona weighs them a little differently (a fixed function of its name),
so a panel of different personas is not unanimous by construction. In later rounds a
debater moves halfway towards the debaters it has heard.
"""

from __future__ import annotations

import hashlib
import math
from statistics import mean

from ..util.text import coverage, token_f1, words
from .debaters import DebateTurnInputs
from .samples import Sample

_BASE = {"question": 0.35, "reference": 0.35, "context": 0.30, "detail": 0.25}
_ASPECT_WEIGHTS = {
    "naturalness": {"detail": 1.0, "question": 0.5},
    "coherence": {"context": 1.0, "question": 0.8},
    "engagingness": {"detail": 1.0, "context": 0.3},
    "groundedness": {"reference": 1.0, "context": 1.0},
    "understandability": {"detail": 0.6, "question": 0.6},
}
_ABSTAIN = (
    "not mentioned",
    "no information",
    "don't know",
    "do not know",
    "not available",
    "cannot answer",
    "not enough information",
    "don't have that information",
    "do not have that information",
)


def _jitter(persona: str, key: str) -> float:
    h = hashlib.sha256(f"{persona}|{key}".encode()).digest()
    return 0.75 + 0.5 * h[0] / 255


def features(answer: str | None, sample: Sample) -> dict[str, float]:
    feats: dict[str, float] = {}
    q = coverage(sample.question, answer)
    if q is not None:
        feats["question"] = q
    if sample.reference:
        feats["reference"] = token_f1(answer, sample.reference)
    if sample.context:
        support = coverage(answer, sample.context)
        if support is not None:
            feats["context"] = support
    feats["detail"] = min(1.0, math.log1p(len(words(answer))) / math.log1p(120))
    return feats


def quality(answer: str | None, sample: Sample, persona: str, aspect: str | None = None) -> int:
    """A 1-10 score for ``answer`` as seen by ``persona`` (optionally for one aspect)."""
    if not (answer or "").strip():
        return 1
    feats = features(answer, sample)
    weights = _ASPECT_WEIGHTS.get((aspect or "").lower(), _BASE)
    total = wsum = 0.0
    for name, value in feats.items():
        w = weights.get(name, 0.0) * _jitter(persona, f"{aspect}|{name}")
        total += w * value
        wsum += w
    q = total / wsum if wsum else 0.5
    return max(1, min(10, int(round(1 + 9 * q))))


def persuaded(own: float, heard: list[float]) -> int:
    return int(math.floor((own + mean(heard)) / 2 + 0.5)) if heard else int(own)


def heard_personas(inp: DebateTurnInputs) -> list[str]:
    if inp.heard_summary:
        return [p for a, p in inp.panel.items() if a != inp.agent]
    return [inp.panel[a] for a in inp.heard]


def pairwise_scores(inp: DebateTurnInputs) -> tuple[int, int]:
    s, others = inp.sample, heard_personas(inp)
    own = (quality(s.answer_1, s, inp.persona), quality(s.answer_2, s, inp.persona))
    return (
        persuaded(own[0], [quality(s.answer_1, s, p) for p in others]),
        persuaded(own[1], [quality(s.answer_2, s, p) for p in others]),
    )


def on_scale(score: int, scale: tuple[int, int] | None) -> int:
    """A 1-10 heuristic score mapped linearly onto the sample's scale (e.g. USR's 1-3, 0-1)."""
    low, high = scale or (1, 10)
    return low + int(round((score - 1) * (high - low) / 9))


def aspect_scores(inp: DebateTurnInputs) -> dict[str, int]:
    s, others = inp.sample, heard_personas(inp)
    names = s.aspects or ["Score"]
    return {
        a: on_scale(
            persuaded(quality(s.answer, s, inp.persona, a), [quality(s.answer, s, p, a) for p in others]), s.scale
        )
        for a in names
    }


def heuristic_correct(
    answer: str | None, reference: str | None, *, abstention: bool = False, persona: str = ""
) -> bool:
    """Offline correctness: the reference is contained in the answer, or their token F1 is
    high enough; for unanswerable questions, the answer must say the information is missing."""
    ans, ref = (answer or "").lower(), (reference or "").lower()
    if abstention or any(m in ref for m in _ABSTAIN):
        return any(m in ans for m in _ABSTAIN)
    if ref and " ".join(words(ref)) in " ".join(words(ans)):
        return True
    return token_f1(answer, reference) >= 0.5 * _jitter(persona, "correct-threshold")


def is_correct(inp: DebateTurnInputs) -> bool:
    s = inp.sample
    return heuristic_correct(s.answer, s.reference, abstention=bool(s.meta.get("abstention")), persona=inp.persona)


def describe(inp: DebateTurnInputs, answers: list[tuple[str, str | None]]) -> str:
    """What the offline debater says about each answer it is shown (a task names them)."""
    s = inp.sample
    parts = []
    for label, ans in answers:
        f = features(ans, s)
        bits = [f"covers {f.get('question', 0):.0%} of the question's key terms"]
        if "reference" in f:
            bits.append(f"overlaps the reference at F1 {f['reference']:.2f}")
        if "context" in f:
            bits.append(f"{f['context']:.0%} of its content words are supported by the context")
        parts.append(f"{label} " + ", ".join(bits) + ".")
    return " ".join(parts)
