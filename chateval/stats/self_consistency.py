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
    return (
        f"{sc['samples']} samples per item: on average {sc['mean_agreement']:.1%} of an item's repeats "
        f"gave its majority verdict; {sc['unanimous']} of {sc['n_items']} items unanimous"
    )
