"""msc-response streams (issue 38 item 3): its summary comes from one pass over samples.jsonl, each
unit kept as a small view (no responses, gold, contexts, traces or debates; usage summed as it
goes), and the head-to-head phase keeps of each response only what the panel compares. The
summary must equal, field by field, the one computed the old way from the whole records, and
report.md written from that summary must be the run's."""

from __future__ import annotations

import json
from collections import Counter
from statistics import stdev
from typing import Any

import pytest

from chateval.bench import run as bench_run
from chateval.bench.comparisons import msc_response_comparisons
from chateval.bench.msc.pairs import compared
from chateval.bench.msc.report import (
    METRICS,
    helpfulness_pairs,
    summarize_msc_response,
    write_msc_response_report,
)
from chateval.bench.stats import mean_or_none
from chateval.bench.summaries import latency_table, run_counts, usage_sum

from ...conftest import read_jsonl
from .test_bench_msc_response import TINY, FailsOnThirdTurn


# --- the oracle: the summary as it was, over every whole record --------------------------------
def _mean_sd(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "mean": mean_or_none(values), "sd": stdev(values) if len(values) > 1 else None}


def old_summarize_msc_response(
    records: list[dict[str, Any]], *, systems: list[str], offline: bool, reference: str | None = None
) -> dict[str, Any]:
    pair_records = [r for r in records if r.get("kind") == "helpfulness_pair"]
    records = [r for r in records if r.get("kind") != "helpfulness_pair"]
    per: dict[str, Any] = {}
    for name in systems:
        rows = [r for r in records if r.get("system") == name or str(r.get("key", "")).endswith(f"::{name}")]
        ok = [r for r in rows if r.get("status") == "ok"]
        metrics = {
            m: _mean_sd([r["metrics"][m] for r in ok if (r.get("metrics") or {}).get(m) is not None]) for m in METRICS
        }
        helpful = [r["helpfulness"]["score"] for r in ok if (r.get("helpfulness") or {}).get("score") is not None]
        per[name] = {
            "n_units": len(rows),
            "n_ok": len(ok),
            "n_failed": len(rows) - len(ok),
            "failed": [{"key": r.get("key"), "error": r.get("error")} for r in rows if r.get("status") != "ok"][:20],
            "metrics": {m: v for m, v in metrics.items() if v["n"]},
            "helpfulness": _mean_sd(helpful) if helpful else None,
            "prompts": dict(Counter(r.get("prompt") or "not ours" for r in ok)),
            "mean_context_tokens": mean_or_none(r.get("context_tokens") for r in ok),
            "latency": latency_table(ok),
            "answer_usage": usage_sum(r.get("usage") for r in ok),
            "judge_usage": usage_sum((r.get("helpfulness") or {}).get("usage") for r in ok),
        }
    out = {"systems": per, "comparisons": msc_response_comparisons(records, systems, METRICS)}
    if reference is not None:
        out["helpfulness_reference"] = reference
        out["helpfulness_pairs"] = helpfulness_pairs(pair_records, reference, systems)
        # Added with the streaming: what the head-to-head panel's judgements of each baseline cost
        # (the summary before counted only the answers and the scored judge).
        for other, p in out["helpfulness_pairs"].items():
            p["judge_usage"] = usage_sum(
                r.get("usage") for r in pair_records if r.get("status") == "ok" and r["systems"]["B"] == other
            )
    return out | run_counts(records + pair_records, offline=offline, what="responses and/or helpfulness judgements")


def same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def vary(r: dict, i: int) -> dict:
    """The record with every kind of verdict and a spread of ratings (the offline panel mostly ties)."""
    r = json.loads(json.dumps(r))
    if r.get("kind") == "helpfulness_pair" and r.get("status") == "ok":
        r["verdict"] = ("A", "B", "tie")[i % 3]
    if isinstance(r.get("helpfulness"), dict) and r["helpfulness"].get("score") is not None:
        r["helpfulness"]["score"] = 1 + i % 10
    return r


def check(out, tmp_path) -> dict:
    written = json.loads((out / "summary.json").read_text())
    records = read_jsonl(out / "samples.jsonl")
    assert records and any(r.get("response") for r in records)  # the file keeps them whole
    systems = list(written["systems"])
    reference = written.get("helpfulness_reference")
    old = old_summarize_msc_response(records, systems=systems, offline=written["offline"], reference=reference)
    for key, value in old.items():
        assert same(written[key], value), key
    assert written["complete"] is (len(records) == written["n_units"])
    (tmp_path / "oracle").mkdir(parents=True)
    write_msc_response_report(tmp_path / "oracle", written | old)  # a field the view dropped would show here
    assert (tmp_path / "oracle" / "report.md").read_text() == (out / "report.md").read_text()
    varied = [vary(r, i) for i, r in enumerate(records)]
    new = summarize_msc_response(varied, systems=systems, offline=True, reference=reference)
    assert same(new, old_summarize_msc_response(varied, systems=systems, offline=True, reference=reference))
    return written


BASE = {"data": str(TINY), "embedder": "hash", "bertscore": False, "turns_per_episode": 2}


def test_scored_helpfulness_summary_is_that_of_the_whole_records(tmp_path):
    cfg = BASE | {"systems": ["theanine", "retrieval"], "helpfulness_protocol": "score", "out": str(tmp_path / "r")}
    bench_run("msc-response", cfg)
    s = check(tmp_path / "r", tmp_path)
    assert all(e["helpfulness"] and e["judge_usage"]["calls"] for e in s["systems"].values())


@pytest.mark.parametrize("compare", ["memories", "responses"])
def test_head_to_head_summary_is_that_of_the_whole_records_with_failures_and_resume(tmp_path, compare):
    out = tmp_path / "r"
    cfg = BASE | {"systems": ["retrieval", FailsOnThirdTurn], "turns_per_episode": None, "out": str(out)}
    cfg |= {"helpfulness_compare": compare}
    s = bench_run("msc-response", cfg)
    pairs = s["helpfulness_pairs"]["FailsOnThirdTurn"]
    assert pairs["n"] > 0 and pairs["n_failed"] == 2 and s["n_failed"] == 4  # two responses and their pairs
    assert pairs["judge_usage"]["calls"] >= 2 * pairs["n"]  # the panel's calls are counted (both orders)
    check(out, tmp_path / "first")
    # The panel saw each system's item as its whole record holds it (the phase kept only that).
    records = read_jsonl(out / "samples.jsonl")
    by = {(r["episode"], r["turn"], r.get("system")): r for r in records if r.get("system")}
    shown = [r for r in records if r.get("kind") == "helpfulness_pair" and r["status"] == "ok"]
    assert shown
    for r in shown:
        for side in "AB":
            unit = by[(r["episode"], r["turn"], r["systems"][side])]
            assert r[compare][side] == compared(unit, compare)
    bench_run("msc-response", cfg | {"resume": True})  # the failed ones run again (and fail again)
    s = check(out, tmp_path / "resumed")
    assert s["n_failed"] == 4
