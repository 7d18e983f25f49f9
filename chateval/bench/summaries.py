"""Per-system summaries of memory benchmark runs (QA accuracy, retrieval, latency, cost), and the
headline every run prints (below)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from statistics import mean
from typing import Any

from ..models import UsageTotals
from ..runs.directory import RunDir
from .comparisons import longmemeval_comparisons
from .registry import BENCHMARKS
from .retrieval_metrics import KS
from .stats import accuracy_by, mean_or_none, percentile

# What a benchmark keeps of its records for its summary (issue 38 item 3).
#
# A unit's record goes to disk as it finishes and is not kept (``run_units``); the summary is then
# built in a second pass over samples.jsonl, a line at a time. A benchmark whose summary reads only
# some fields passes ``keep=`` a *view*: a function from a record to the little it needs (no
# answers, contexts, transcripts or per-call usage), so what stays in memory per unit is a few
# hundred bytes, not the record.

View = Callable[[dict[str, Any]], dict[str, Any]]


def whole(record: dict[str, Any]) -> dict[str, Any]:
    """The record itself (a benchmark whose summary has not been given a view)."""
    return record


def fields(*names: str) -> View:
    """A view keeping only the top-level ``names`` a record has."""

    def view(record: dict[str, Any]) -> dict[str, Any]:
        return {k: record[k] for k in names if k in record}

    return view


class UsageSum:
    """A running :class:`UsageTotals` of usage dicts, added as records stream by; ``dump()`` is
    what ``summaries.usage_sum`` gives for the same dicts in the same order."""

    def __init__(self) -> None:
        self.total = UsageTotals()

    def add(self, usage: dict[str, Any] | None) -> None:
        if usage:
            self.total.merge(UsageTotals.model_validate(usage))

    def dump(self) -> dict[str, Any]:
        return self.total.model_dump()


def records_of(run: RunDir, keys: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The run's records (old and new) whose keys are ``keys``, read from samples.jsonl one at a
    time: for a summary built as they stream by (``run_units(..., keep=None)`` first)."""
    wanted = set(keys)
    return (r for r in run.iter_records() if r.get("key") in wanted)


LATENCY_STAGES = ("ingest_s", "recall_s", "answer_s", "judge_s")


def _judge_correct(which: str):
    def get(r: dict[str, Any]) -> bool | None:
        return ((r.get("judge") or {}).get(which) or {}).get("correct")

    return get


SMALL_N = 5  # a per-type accuracy over fewer questions is marked as unreliable in reports


def qa_table(rows: list[dict[str, Any]], which: str) -> dict[str, Any] | None:
    """LongMemEval's layout (their print_qa_metrics.py; Zep's Table 3): per type, overall,
    task-averaged, abstention. As in the official script, an abstention (``_abs``) question
    counts in its own question type *and* in the abstention row."""
    get = _judge_correct(which)
    judged = [r for r in rows if get(r) is not None]
    if not judged:
        return None
    by_type = accuracy_by(judged, lambda r: r["question_type"], get)
    abst = accuracy_by([r for r in judged if r.get("abstention")], lambda r: "abstention", get)
    overall = sum(1 for r in judged if get(r)) / len(judged)
    return {
        "n": len(judged),
        "overall": overall,
        "by_type": by_type,
        "task_averaged": mean(v["accuracy"] for v in by_type.values()) if by_type else None,
        "abstention": abst.get("abstention"),
    }


def retrieval_table(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    recs = [r["retrieval"] for r in rows if r.get("retrieval")]
    if not recs:
        return None
    ok = [x for x in recs if x.get("evaluable")]
    excluded = Counter(x.get("reason") for x in recs if not x.get("evaluable"))
    out: dict[str, Any] = {"n_evaluable": len(ok), "excluded": dict(excluded)}
    for level in ("session", "turn"):
        have = [x for x in ok if x.get(level) is not None]  # a hypotheses file has no turn ranking
        xs = [x[level] for x in have]
        out[level] = {k: mean(x[k] for x in xs) for k in (xs[0].keys() if xs else [])}
        depths = [(x.get("depth") or {}).get(level) for x in have]
        # For each k, how many questions' rankings were shorter than k (their @k is capped).
        out.setdefault("capped", {})[level] = {str(k): sum(1 for d in depths if d is not None and d < k) for k in KS}
    return out


def latency_table(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    out = {}
    for stage in LATENCY_STAGES:
        xs = [r["latency"][stage] for r in rows if stage in (r.get("latency") or {})]
        if xs:
            out[stage] = {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}
    return out


def usage_sum(dicts: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    total = UsageTotals()
    for d in dicts:
        if d:
            total.merge(UsageTotals.model_validate(d))
    return total.model_dump()


def memory_view(r: dict[str, Any]) -> dict[str, Any]:
    """What a memory run's summary reads of an answered question beyond its usage (summed as it
    streams by): ids, type, retrieval scores, latencies and the judges' verdicts (not their
    reasons), not the answer, its context or the judges' usage."""
    kept = ("status", "method", "question_id", "question_type", "abstention", "retrieval", "latency", "context_tokens")
    out: dict[str, Any] = {k: r[k] for k in kept if k in r}
    judge = r.get("judge")
    if isinstance(judge, dict):
        verdicts = {w: judge[w] for w in ("single", "debate") if w in judge}
        judge = {w: {"correct": v.get("correct")} if isinstance(v, dict) else v for w, v in verdicts.items()} | {
            k: judge[k] for k in ("agreement",) if k in judge
        }
    if "judge" in r:
        out["judge"] = judge
    return out


MAX_FAILED = 20  # failed units listed per method or system (the summary's ``failed``)


class MemoryMethodTotals:
    """One method's (or system's) rows, a record at a time: counts, its first failures, running
    usage and the answered units' views (LongMemEval per method, TeaFarm per system)."""

    def __init__(self) -> None:
        self.n = 0
        self.failed: list[dict[str, Any]] = []
        self.ok: list[dict[str, Any]] = []
        self.answer_usage, self.judge_usage = UsageSum(), UsageSum()

    def add(self, r: dict[str, Any], view: dict[str, Any] | None) -> None:
        self.n += 1
        if view is None:
            if len(self.failed) < MAX_FAILED:
                self.failed.append({"key": r.get("key"), "error": r.get("error")})
            return
        self.ok.append(view)
        self.answer_usage.add(r.get("usage"))
        self.judge_usage.add((r.get("judge") or {}).get("usage"))


def summarize_memory_run(
    records: Iterable[dict[str, Any]], *, methods: list[str], retrieval_only: bool, offline: bool
) -> dict[str, Any]:
    """The summary of a memory run (LongMemEval), from its records read once, in any number: each
    is kept only as its :func:`memory_view`, its usage summed as it goes."""
    by_method: dict[str, MemoryMethodTotals] = defaultdict(MemoryMethodTotals)
    ok_views: list[dict[str, Any]] = []  # every method's, in the file's order (the comparisons')
    n_units = n_failed = 0
    for r in records:
        n_units += 1
        view = memory_view(r) if r.get("status") == "ok" else None
        n_failed += view is None
        if view is not None:
            ok_views.append(view)
        by_method[r.get("method") or r.get("key", "::?").split("::")[-1]].add(r, view)
    per: dict[str, Any] = {}
    for m in methods:
        t = by_method.get(m) or MemoryMethodTotals()
        ok = t.ok
        entry: dict[str, Any] = {
            "n": t.n,
            "n_ok": len(ok),
            "n_failed": t.n - len(ok),
            "failed": t.failed,
            "retrieval": retrieval_table(ok),
            "latency": latency_table(ok),
            "mean_context_tokens": mean_or_none(r.get("context_tokens") for r in ok),
            "answer_usage": t.answer_usage.dump(),
        }
        if not retrieval_only:
            entry["qa"] = {w: qa_table(ok, w) for w in ("single", "debate")}
            entry["judge_usage"] = t.judge_usage.dump()
            agree = [r["judge"]["agreement"] for r in ok if (r.get("judge") or {}).get("agreement") is not None]
            entry["judge_agreement"] = {"n": len(agree), "rate": sum(agree) / len(agree)} if agree else None
        per[m] = entry
    comparisons = longmemeval_comparisons(ok_views, methods, retrieval_only=retrieval_only)
    return {"methods": per, "comparisons": comparisons} | counts(n_units, n_failed, offline=offline)


def run_counts(
    records: list[dict[str, Any]], *, offline: bool, what: str = "answers and/or judgements"
) -> dict[str, Any]:
    """The part every memory benchmark summary shares: unit counts and the offline label."""
    return counts(len(records), sum(1 for r in records if r.get("status") != "ok"), offline=offline, what=what)


def counts(n_units: int, n_failed: int, *, offline: bool, what: str = "answers and/or judgements") -> dict[str, Any]:
    """:func:`run_counts` of a run whose units were counted as they streamed by."""
    out: dict[str, Any] = {"n_units": n_units, "n_failed": n_failed, "offline": offline}
    if offline:
        out["note"] = f"offline model involved: {what} are deterministic heuristics, not LLM outputs"
    return out


# --- the headline --------------------------------------------------------------------------------
#
# The numbers a run is read by, one row per system (or setting): n, the benchmark's main score,
# recall_all@5 where retrieval is scored, failed units and cost. Printed at the end of every
# ``chateval bench`` run and kept under ``headline`` in summary.json.
#
# Each benchmark builds its own rows (``Benchmark.headline``) and names its gate metrics; this
# module dispatches by the registry and holds the row builders several benchmarks share.

Pick = Callable[[dict[str, Any]], tuple[Any, Any, Any, Any]]


def summed_cost(*usages: dict[str, Any] | None) -> float | None:
    """The summed cost of usage blocks; None if any of them has no price."""
    costs = [(u or {}).get("cost_usd") for u in usages if u]
    known = [float(c) for c in costs if c is not None]
    return None if not costs or len(known) < len(costs) else sum(known)


def system_rows(
    summary: dict[str, Any], metric: str, pick: Pick, extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A row per entry of ``summary["systems"]``: ``pick(e)`` gives (value, n, failed, cost).
    ``extra(e)``: further labelled numbers of a system's row (LoCoMo's evidence recall, which is
    not LongMemEval's recall_all@5 and is not shown under that name)."""
    rows = []
    for name, e in (summary.get("systems") or {}).items():
        value, n, failed, spent = pick(e)
        rows.append(
            {
                "system": name,
                "n": n,
                "metric": metric,
                "value": value,
                **(extra(e) if extra else {}),
                "recall_all@5": None,
                "failed": failed,
                "cost_usd": spent,
            }
        )
    return rows


def setting_rows(summary: dict[str, Any], metric: str, pick: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """A row per judge setting (the judge benchmarks): ``pick(metrics)`` gives the value."""
    rows = []
    for name, s in (summary.get("settings") or {}).items():
        rows.append(
            {
                "system": name,
                "n": s.get("n_units"),
                "metric": metric,
                "value": pick(s.get("metrics") or {}),
                "recall_all@5": None,
                "failed": s.get("n_failed"),
                "cost_usd": (s.get("usage") or {}).get("cost_usd"),
            }
        )
    return rows


def headline(name: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    return BENCHMARKS.get(name).headline(summary)


def gate_measures(name: str, summary: dict[str, Any]) -> dict[str, dict[Any, Any]]:
    """{metric: {system: value}} for ``chateval.runs.gates.check``, as the benchmark measures it."""
    return BENCHMARKS.get(name).gate_measures(summary, summary.get("headline") or headline(name, summary))
