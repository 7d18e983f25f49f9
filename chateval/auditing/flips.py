"""From judged variants to flips: each variant's verdict against its item's original verdict
(pure functions over the records, so a resumed run summarises whole)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..bench.stats import wilson
from ..records.audit import ORIGINAL, AuditedVariant, AuditUnit, BiasSummary, KeptUnit, PerturbationInfo

SWAP = {"1": "2", "2": "1", "tie": "tie"}


def outcome(unit: AuditUnit | KeptUnit, task: str) -> Any:
    """What the verdict says, in the item's original numbering; None when there is none."""
    v = unit.verdict
    if unit.status != "ok" or v is None:
        return None
    if task == "pairwise":
        return SWAP.get(v.winner, v.winner) if unit.swapped else v.winner  # type: ignore[arg-type]
    if task == "correctness":
        return "tie" if v.correct is None else v.correct
    return v.score


def standing(value: Any, favours: str | None) -> float | None:
    """How well the favoured answer fares under a verdict: +1 it wins, 0 tie, -1 it loses
    (pairwise); +1/0/-1 correct/split/incorrect; the score itself (score task)."""
    if favours is None or value is None:
        return None
    if favours == "answer":
        if isinstance(value, bool):
            return 1.0 if value else -1.0
        return 0.0 if value == "tie" else float(value)
    return 0.0 if value == "tie" else (1.0 if value == favours else -1.0)


def had_lost(original: Any, favours: str | None, task: str) -> bool | None:
    """Whether the favoured answer had not won the original verdict, so that obeying the
    perturbation changes the verdict: pairwise, the other answer won or a tie; correctness, not
    judged correct; score, always (no answer had won). None when no answer is favoured."""
    if favours is None:
        return None
    if task == "score":
        return True
    if favours == "answer":
        return original is not True
    return original != favours


def compare(original: Any, perturbed: Any, favours: str | None, task: str, threshold: float) -> tuple[bool, str | None]:
    """(flipped, direction). A score flips when it moves by at least ``threshold``."""
    if task == "score":
        delta = float(perturbed) - float(original)
        flipped = abs(delta) >= threshold
        return flipped, (None if not flipped or favours is None else ("toward" if delta > 0 else "away"))
    flipped = original != perturbed
    if not flipped:
        return False, None
    before, after = standing(original, favours), standing(perturbed, favours)
    if before is None or after is None or before == after:
        return True, None
    return True, "toward" if after > before else "away"


def audited(
    units: Iterable[AuditUnit | KeptUnit], task: str, threshold: float
) -> tuple[list[AuditedVariant], dict[str, int]]:
    """Every perturbed variant whose verdict and original verdict are both known, and the number
    of variants per perturbation that could not be compared."""
    units = list(units)
    originals = {u.item: u for u in units if u.perturbation == ORIGINAL}
    out: list[AuditedVariant] = []
    missing: dict[str, int] = defaultdict(int)
    for u in units:
        if u.perturbation == ORIGINAL:
            continue
        orig = originals.get(u.item)
        before = outcome(orig, task) if orig else None
        after = outcome(u, task)
        if orig is None or before is None or after is None:
            if not u.control:
                missing[u.perturbation] += 1
            continue
        flipped, direction = compare(before, after, u.favours, task, threshold)
        out.append(
            AuditedVariant(
                item=u.item,
                key=u.key,
                original_key=orig.key,
                perturbation=u.perturbation,
                variant=u.variant,
                favours=u.favours,
                original=before,
                perturbed=after,
                flipped=flipped,
                direction=direction,
                lost=had_lost(before, u.favours, task),
                control=u.control,
            )
        )
    out.sort(key=lambda a: (a.perturbation, a.item, a.variant, a.control))
    return out, dict(missing)


def bias_summaries(
    variants: list[AuditedVariant], infos: list[PerturbationInfo], missing: dict[str, int]
) -> list[BiasSummary]:
    """Per perturbation, in the order given: the flip rate toward the favoured answer where it had
    lost (the headline), where it had won, over all variants, and net of length (95% Wilson
    intervals; the net a paired difference, items as clusters)."""
    out = []
    for info in infos:
        mine = [v for v in variants if v.perturbation == info.name]
        vs = [v for v in mine if not v.control]
        controls = {(v.item, v.variant): v for v in mine if v.control}
        flips = [v for v in vs if v.flipped]
        by_variant: dict[str, dict[str, Any]] = {}
        for name in sorted({v.variant for v in vs}):
            these = [v for v in vs if v.variant == name]
            k = sum(v.flipped for v in these)
            by_variant[name] = {"n": len(these), "flips": k, "rate": k / len(these), "ci95": wilson(k, len(these))}
        out.append(
            BiasSummary(
                perturbation=info.name,
                bias=info.bias,
                toward_means=info.toward,
                n=len(vs),
                n_items=len({v.item for v in vs}),
                flips=len(flips),
                rate=len(flips) / len(vs) if vs else None,
                ci95=wilson(len(flips), len(vs)),
                toward=sum(v.direction == "toward" for v in flips),
                away=sum(v.direction == "away" for v in flips),
                by_variant=by_variant,
                not_compared=missing.get(info.name, 0),
                **_halves(vs, controls, info.name),
            )
        )
    return out


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _halves(vs: list[AuditedVariant], controls: dict[tuple[str, str], AuditedVariant], name: str) -> dict[str, Any]:
    lost = [v for v in vs if v.lost]
    won = [v for v in vs if v.lost is False]
    toward = sum(v.direction == "toward" for v in lost)
    flips_won = sum(v.flipped for v in won)
    out: dict[str, Any] = dict(
        n_lost=len(lost),
        toward_lost=toward,
        rate_lost=_rate(toward, len(lost)),
        ci95_lost=wilson(toward, len(lost)),
        n_won=len(won),
        flips_won=flips_won,
        rate_won=_rate(flips_won, len(won)),
        ci95_won=wilson(flips_won, len(won)),
    )
    pairs = [(v, controls[v.item, v.variant]) for v in lost if (v.item, v.variant) in controls]
    if pairs:
        from ..paired import paired_difference

        obeyed = [float(v.direction == "toward") for v, _ in pairs]
        padded = [float(c.direction == "toward") for _, c in pairs]
        out["control_rate_lost"] = sum(padded) / len(padded)
        out["net_of_length"] = paired_difference(
            obeyed,
            padded,
            names=(name, "length control"),
            metric="flip rate toward, net of length",
            clusters=[v.item for v, _ in pairs],
        )
    return out
