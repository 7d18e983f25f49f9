"""What head2head's summaries keep of a case record (issue 38 item 3): the run's records are read
once from samples.jsonl, each kept as a small *view* (verdicts, order and agent winners, latency,
context size, the answers' style features) while its usage is summed as it streams by; the
answers, contexts, judges' scores and transcripts are not kept."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..summaries import UsageSum, counts
from .style_control import style

KEPT = ("status", "verdict", "question_type", "order_disagreement", "context_tokens", "latency")


def case_view(r: dict[str, Any]) -> dict[str, Any]:
    """The fields of a case record (two systems or several) its summary, report and comparisons
    read beyond usage. ``styles`` stands for ``answers``: each answer's style features, the only
    thing the length and style control read of its text."""
    out: dict[str, Any] = {k: r[k] for k in KEPT if k in r}
    if "meta" in r:  # LoCoMo's conversation: the comparisons' cluster
        out["meta"] = {k: v for k, v in (r["meta"] or {}).items() if k == "conversation"}
    if "answers" in r:
        out["styles"] = {s: style(a) for s, a in (r["answers"] or {}).items()}
    if "orders" in r:
        orders = r["orders"] or {}
        out["orders"] = {k: ({f: o.get(f) for f in ("winner", "shown_first")} if o else o) for k, o in orders.items()}
    if "agents" in r:
        out["agents"] = [{f: a.get(f) for f in ("agent", "persona", "winner")} for a in r["agents"] or []]
    if "pairs" in r:
        out["pairs"] = {
            k: {f: p[f] for f in ("verdict", "order_disagreement", "systems") if f in p} for k, p in r["pairs"].items()
        }
    return out


class Cases:
    """A run's case records read once: their views in the file's order, usage summed per name
    (``usage_of``: the systems, or sides, and the judge), counts and the first failures."""

    def __init__(self, records: Iterable[dict[str, Any]], usage_of: Sequence[str]) -> None:
        self.views: list[dict[str, Any]] = []
        self.usage = {k: UsageSum() for k in usage_of}
        self.failed: list[dict[str, Any]] = []
        self.n_failed = 0
        for r in records:
            self.views.append(case_view(r))
            for k, total in self.usage.items():
                total.add((r.get("usage") or {}).get(k))
            if r.get("status") != "ok":
                self.n_failed += 1
                if len(self.failed) < 20:
                    self.failed.append({"key": r.get("key"), "error": r.get("error")})

    def counts(self, *, offline: bool) -> dict[str, Any]:
        return counts(len(self.views), self.n_failed, offline=offline)
