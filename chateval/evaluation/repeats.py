"""--samples N: one item judged by N repeats of the same panel, combined into one result (the
majority verdict, every repeat's usage, the spread in ``consistency``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..debate import JudgeResult, Panel, Sample
from ..debate.consistency import consistency, verdict_key
from ..models import UsageTotals


async def judge_repeated(panels: Sequence[Panel], sample: Sample) -> JudgeResult:
    """The item judged by each repeat of the panel (each keeps its own replies in the cache):
    the result of the first repeat that gave the majority verdict, with every repeat's usage
    and calls, and the spread of the verdicts in ``consistency``."""
    results = list(await asyncio.gather(*(p.judge(sample) for p in panels)))
    keys = [verdict_key(panels[0].task, r.verdict if r.status == "ok" else None) for r in results]
    spread = consistency(keys)
    chosen = results[keys.index(spread.majority)] if spread.n_ok else results[0]
    out = chosen.model_copy(deep=True)
    out.consistency = spread
    out.usage, out.calls = UsageTotals(), 0
    by_endpoint: dict[str, UsageTotals] = {}
    for r in results:
        out.usage.merge(r.usage)
        out.calls += r.calls
        for name, u in (r.usage_by_endpoint or {}).items():
            by_endpoint.setdefault(name, UsageTotals()).merge(u)
    out.usage_by_endpoint = by_endpoint or None
    out.latency_s = max(r.latency_s for r in results)
    return out
