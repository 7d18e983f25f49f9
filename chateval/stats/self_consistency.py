"""The run's summary of self-consistency (``--samples N``): how far each item's repeats agreed
(the per-item spread is ``chateval.debate.consistency``), averaged over the items."""

from __future__ import annotations

from typing import Any


def summarize_consistency(records: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json's ``self_consistency``: the mean agreement of the repeats over the items."""
    spreads = [r["consistency"] for r in records if r.get("consistency")]
    rated = [s for s in spreads if s.get("agreement") is not None]
    if not spreads:
        return {}
    pairs = [s["pair_agreement"] for s in rated if s.get("pair_agreement") is not None]
    return {
        "self_consistency": {
            "samples": max(s["samples"] for s in spreads),
            "n_items": len(rated),
            "mean_agreement": sum(s["agreement"] for s in rated) / len(rated) if rated else None,
            "mean_pair_agreement": sum(pairs) / len(pairs) if pairs else None,
            "unanimous": sum(1 for s in rated if s["agreement"] == 1.0),
        }
    }


def consistency_text(summary: dict[str, Any]) -> str:
    """The summary's line on --samples: '' when the judge was asked once per item."""
    sc = summary.get("self_consistency")
    if not sc or sc.get("mean_agreement") is None:
        return ""
    text = (
        f"{sc['samples']} samples per item: on average {sc['mean_agreement']:.1%} of an item's repeats "
        f"gave its majority verdict; {sc['unanimous']} of {sc['n_items']} items unanimous"
    )
    ra = sc.get("repeat_accuracy")
    if ra and ra.get("sd") is not None:
        text += (
            f"; agreement with the labels per repeat {ra['mean']:.1%} ± {ra['sd']:.1%} (SD over repeats, "
            f"range {ra['range'][0]:.1%}–{ra['range'][1]:.1%})"
        )
    return text


def repeat_accuracy(pairs: list[tuple[list[Any], Any]]) -> dict[str, Any] | None:
    """Run-to-run variance: the agreement with the labels of each repeat on its own, from
    (each repeat's verdicts, reference) per labelled item; a repeat without a verdict is a miss."""
    if not pairs:
        return None
    n = min(len(v) for v, _ in pairs)
    per = [sum(v[i] == ref for v, ref in pairs) / len(pairs) for i in range(n)]
    mean = sum(per) / n
    sd = (sum((p - mean) ** 2 for p in per) / (n - 1)) ** 0.5 if n > 1 else None
    return {"n_items": len(pairs), "per_repeat": per, "mean": mean, "sd": sd, "range": [min(per), max(per)]}
