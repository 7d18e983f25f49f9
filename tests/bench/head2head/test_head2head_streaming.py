"""head2head streams (issue 38 item 3): the run's summary comes from one pass over samples.jsonl,
each case kept as a small view (no answers, contexts or transcripts, usage summed as it goes); it
must equal, field by field, the summary computed the old way from the whole records, and report.md
written from that summary must be the run's."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import combinations
from typing import Any

import pytest

from chateval.bench.comparisons import head2head_comparisons
from chateval.bench.head2head.bradley_terry import rank
from chateval.bench.head2head.multi import SCORE, pair_key, summarize_multi, write_multi_report
from chateval.bench.head2head.report import (
    SIDES,
    outcome_table,
    proportion,
    summarize_head2head,
    write_head2head_report,
)
from chateval.bench.head2head.style_control import styled_ranking, two_system
from chateval.bench.stats import mean_or_none, percentile
from chateval.bench.summaries import run_counts, usage_sum
from chateval.memory import MEMORY_SYSTEMS

from ...conftest import FIXTURES, read_jsonl
from .test_bench_head2head import h2h


# --- the oracle: the summaries as they were, over every whole record ---------------------------
def old_summarize_head2head(records, *, systems, offline):
    judged = [r for r in records if r.get("status") == "ok" and r.get("verdict") in ("A", "B", "tie")]
    out = {"systems": dict(zip(SIDES, systems)), "perspective": "A"}
    out |= outcome_table([r["verdict"] for r in judged])
    by_type = defaultdict(list)
    for r in judged:
        by_type[r.get("question_type") or "all"].append(r["verdict"])
    out["by_type"] = {t: outcome_table(v) for t, v in sorted(by_type.items())} if len(by_type) > 1 else {}

    both = [r for r in judged if r.get("order_disagreement") is not None]
    out["order_disagreement"] = proportion(sum(1 for r in both if r["order_disagreement"]), len(both)) | {
        "n": len(both)
    }
    # Position preference: of the order verdicts that name a winner, how often the answer shown first won.
    first = [
        (o.get("winner") == o.get("shown_first"))
        for r in judged
        for o in (r.get("orders") or {}).values()
        if o and o.get("winner") in SIDES
    ]
    out["first_shown_wins"] = proportion(sum(first), len(first)) | {"n": len(first)}
    out["agent_agreement"] = old_agent_agreement(judged)
    # AlpacaEval-2-style length control and Arena-Hard-style style control, beside the raw rates
    scored = [r for r in judged if set(r.get("answers") or {}) >= set(SIDES)]
    out["style_control"] = two_system(
        [[("A", "B", SCORE[r["verdict"]], r["answers"]["A"], r["answers"]["B"])] for r in scored]
    )

    ok_answers = [r for r in records if r.get("answers")]
    out["context_tokens"] = {s: mean_or_none((r.get("context_tokens") or {}).get(s) for r in ok_answers) for s in SIDES}
    out["latency"] = old_latency(records)
    usage = {s: usage_sum((r.get("usage") or {}).get(s) for r in records) for s in SIDES}
    usage["judge"] = usage_sum((r.get("usage") or {}).get("judge") for r in records)
    usage["total"] = usage_sum(usage[k] for k in ("A", "B", "judge"))
    out["usage"] = usage
    failed = [r for r in records if r.get("status") != "ok"]
    out["failed"] = [{"key": r.get("key"), "error": r.get("error")} for r in failed][:20]
    out["comparisons"] = head2head_comparisons(records, systems)
    return out | run_counts(records, offline=offline)


def old_agent_agreement(judged: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How often each calibrated debater's winner equals the panel's."""
    per: dict[str, list[bool]] = defaultdict(list)
    for r in judged:
        for a in r.get("agents") or []:
            if a.get("winner"):
                per[a.get("persona") or a.get("agent")].append(a["winner"] == r["verdict"])
    return {p: {"n": len(v), "rate": sum(v) / len(v)} for p, v in per.items()} or None


def old_latency(records: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for side in SIDES:
        entry = {}
        for stage in ("ingest_s", "recall_s", "answer_s"):
            xs = [r["latency"][side][stage] for r in records if stage in ((r.get("latency") or {}).get(side) or {})]
            if xs:
                entry[stage] = {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}
        out[side] = entry
    xs = [r["latency"]["judge_s"] for r in records if "judge_s" in (r.get("latency") or {})]
    out["judge"] = {"judge_s": {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}} if xs else {}
    return out


def old_summarize_multi(records, *, systems, offline):
    ok = [r for r in records if r.get("status") == "ok"]
    pairs = {}
    matrix = {s: {} for s in systems}
    for a, b in combinations(systems, 2):
        key = pair_key(a, b)
        verdicts = [r["pairs"][key]["verdict"] for r in ok if key in (r.get("pairs") or {})]
        table = outcome_table(verdicts)
        both = [r["pairs"][key] for r in ok if r["pairs"][key].get("order_disagreement") is not None]
        table["order_disagreement"] = proportion(sum(1 for p in both if p["order_disagreement"]), len(both))
        pairs[key] = {"systems": {"A": a, "B": b}} | table
        matrix[a][b] = {k: table[k]["count"] for k in ("wins", "ties", "losses")} | {"n": table["n"]}
        matrix[b][a] = {
            "wins": table["losses"]["count"],
            "ties": table["ties"]["count"],
            "losses": table["wins"]["count"],
            "n": table["n"],
        }
    cases = [[(p["systems"]["A"], p["systems"]["B"], SCORE[p["verdict"]]) for p in r["pairs"].values()] for r in ok]
    note = None
    try:
        ranking = [r.model_dump() for r in rank(cases, systems)]
    except ValueError as e:  # e.g. every case of a system failed
        ranking, note = [], str(e)
    else:
        note = None
    # Arena-Hard-style style control: the strengths at equal length and formatting
    styled = [
        [
            (p["systems"]["A"], p["systems"]["B"], SCORE[p["verdict"]], *(r["answers"][p["systems"][k]] for k in "AB"))
            for p in r["pairs"].values()
        ]
        for r in ok
    ]
    usage = {s: usage_sum((r.get("usage") or {}).get(s) for r in records) for s in systems}
    usage["judge"] = usage_sum((r.get("usage") or {}).get("judge") for r in records)
    usage["total"] = usage_sum(usage.values())
    failed = [{"key": r.get("key"), "error": r.get("error")} for r in records if r.get("status") != "ok"][:20]
    return {
        "systems_all": systems,
        "n": len(ok),
        "pairs": pairs,
        "matrix": matrix,
        "ranking": ranking,
        "ranking_note": note,
        "ranking_method": "Bradley–Terry (scipy L-BFGS, weak prior), 95% bootstrap CI",
        "ranking_style_controlled": styled_ranking(styled, systems),
        "usage": usage,
        "failed": failed,
        "comparisons": head2head_comparisons(records, systems),
    } | run_counts(records, offline=offline)


def same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def check(out, tmp_path, multi: bool) -> dict:
    written = json.loads((out / "summary.json").read_text())
    records = read_jsonl(out / "samples.jsonl")
    assert records and any(r.get("transcript") or r.get("contexts") for r in records)  # the file keeps them whole
    systems = written["systems_all"] if multi else list(written["systems"].values())
    old = (old_summarize_multi if multi else old_summarize_head2head)(
        records, systems=systems, offline=written["offline"]
    )
    for key, value in old.items():
        assert same(written[key], value), key
    assert written["complete"] is (len(records) == written["n_cases"])
    # report.md as the old summary writes it (a field the view dropped would show here)
    (tmp_path / "oracle").mkdir(parents=True)
    (write_multi_report if multi else write_head2head_report)(tmp_path / "oracle", written | old)
    assert (tmp_path / "oracle" / "report.md").read_text() == (out / "report.md").read_text()
    # The offline panel mostly ties: the same records with every kind of verdict, order winner and
    # agent winner, summarized both ways (so a view dropping e.g. ``shown_first`` shows).
    varied = [vary(r, i) for i, r in enumerate(records)]
    new = (summarize_multi if multi else summarize_head2head)(varied, systems=systems, offline=True)
    old = (old_summarize_multi if multi else old_summarize_head2head)(varied, systems=systems, offline=True)
    assert same(new, old)
    return written


def vary(r: dict, i: int) -> dict:
    r = json.loads(json.dumps(r))
    cycle = ("A", "B", "tie")
    if "verdict" in r and r.get("status") == "ok":
        r["verdict"] = cycle[i % 3]
    for j, o in enumerate((r.get("orders") or {}).values()):
        o["winner"] = cycle[(i + j) % 3]
    for j, a in enumerate(r.get("agents") or []):
        a["winner"] = cycle[(i + 2 * j) % 3]
    for j, p in enumerate((r.get("pairs") or {}).values()):
        p["verdict"] = cycle[(i + j) % 3]
        p["order_disagreement"] = (i + j) % 2 == 0
    return r


@pytest.mark.parametrize("data", ["lme_tiny.json", "locomo_tiny.json"])
def test_two_system_summary_is_that_of_the_whole_records(tmp_path, data):
    out = tmp_path / "run"
    assert h2h(FIXTURES / data, out) == 0
    s = check(out, tmp_path, multi=False)
    assert s["style_control"] and s["n"] > 0 and s["usage"]["judge"]["calls"] > 0


def test_failed_units_and_three_systems_are_summarized_as_before(tmp_path, monkeypatch):
    cls = MEMORY_SYSTEMS.get("retrieval")
    original = cls.respond

    async def flaky(self, query, now):
        if query == "How old is my cat Miso?":
            raise RuntimeError("boom from the test")
        return await original(self, query, now)

    monkeypatch.setattr(cls, "respond", flaky)
    out = tmp_path / "two"
    assert h2h(FIXTURES / "lme_tiny.json", out) == 1
    s = check(out, tmp_path / "a", multi=False)
    assert s["n_failed"] == 1 and "boom from the test" in s["failed"][0]["error"]
    out = tmp_path / "three"
    assert h2h(FIXTURES / "lme_tiny.json", out, systems="full_context,retrieval,session_summaries") == 1
    s = check(out, tmp_path / "b", multi=True)
    assert s["n_failed"] == 1 and s["ranking"] and s["ranking_style_controlled"]
