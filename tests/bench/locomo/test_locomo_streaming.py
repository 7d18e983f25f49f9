"""LoCoMo streams (issue 38 item 3): run_units keeps no record, the summary, comparisons and --errata
are built from each unit's view (views.py) read a record at a time from samples.jsonl, with the
usage summed as it goes by. The oracle: the summary computed the old way, from the whole records
(summarize_locomo as it was before views, copied here), equal field by field; report.md written
from either is the same text."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from chateval.bench.comparisons import locomo_comparisons
from chateval.bench.locomo import locomo as lc
from chateval.bench.locomo.errata import summarize_errata
from chateval.bench.locomo.metrics import ADVERSARIAL, category_name
from chateval.bench.locomo.report import metric_block, write_locomo_report
from chateval.bench.locomo.views import LoCoMoRecords, unit_view
from chateval.bench.stats import mean_or_none, percentile
from chateval.bench.summaries import run_counts, usage_sum
from chateval.cli import main
from chateval.datasets.errata import load_errata

from ...conftest import FIXTURES, read_jsonl

LOCOMO, ERRATA = FIXTURES / "locomo_tiny.json", FIXTURES / "locomo_tiny_errata.json"
# Fields of a QA row the summary never reads: a view that kept them would not be a view.
DROPPED = {"question", "gold", "evidence", "prediction", "raw_answer", "asked", "context", "retrieved", "tokens_approx"}


def same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _lat(xs: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(xs, 50), "p95": percentile(xs, 95)}


def locomo_summary_before_views(
    records: list[dict[str, Any]], *, systems: list[str], categories: list[int], offline: bool
) -> dict[str, Any]:
    """The oracle: summarize_locomo as it was before views, over every whole record."""
    by_system: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_system[r.get("method") or str(r.get("key", "::?")).split("::")[-1]].append(r)
    per: dict[str, Any] = {}
    for s in systems:
        units = by_system.get(s, [])
        all_qa = [dict(q, conversation=u.get("conversation")) for u in units for q in (u.get("qa") or [])]
        ok = [q for q in all_qa if q.get("status") == "ok"]
        by_cat = {
            category_name(c): metric_block([q for q in ok if q["category"] == c]) | {"category": c} for c in categories
        }
        latency = {}
        ingest = [u["latency"]["ingest_s"] for u in units if "ingest_s" in (u.get("latency") or {})]
        if ingest:
            latency["ingest_s"] = _lat(ingest)
        for stage in ("recall_s", "answer_s", "judge_s"):
            xs = [q["latency"][stage] for q in ok if stage in (q.get("latency") or {})]
            if xs:
                latency[stage] = _lat(xs)
        agree = [q["judge"]["agreement"] for q in ok if (q.get("judge") or {}).get("agreement") is not None]
        per[s] = {
            "n_units": len(units),
            "n_units_failed": sum(1 for u in units if u.get("status") != "ok"),
            "n_qa": len(all_qa),
            "n_qa_ok": len(ok),
            "n_qa_failed": len(all_qa) - len(ok),
            "failed": (
                [{"key": u.get("key"), "error": u.get("error")} for u in units if u.get("status") != "ok"]
                + [
                    {"key": f"{q.get('conversation')}::{s}::qa{q.get('qa_index')}", "error": q.get("error")}
                    for q in all_qa
                    if q.get("status") != "ok"
                ]
            )[:20],
            "categories": by_cat,
            "overall": metric_block(ok),
            "overall_no_adversarial": metric_block([q for q in ok if q["category"] != ADVERSARIAL]),
            "latency": latency,
            "mean_context_tokens": mean_or_none(q.get("context_tokens") for q in ok),
            "answer_usage": usage_sum(u.get("usage") for u in units),
            "judge_usage": usage_sum((q.get("judge") or {}).get("usage") for q in ok),
            "judge_agreement": {"n": len(agree), "rate": sum(agree) / len(agree)} if agree else None,
            "n_no_evidence": sum(1 for q in ok if q.get("no_evidence")),
        }
    return {
        "systems": per,
        "categories": {category_name(c): c for c in categories},
        "comparisons": locomo_comparisons(records, systems),
    } | run_counts(records, offline=offline)


@pytest.mark.parametrize("flaky", [False, True], ids=["all-ok", "one-qa-failed"])
def test_locomo_summary_and_report_are_those_of_the_whole_records(tmp_path, monkeypatch, flaky):
    if flaky:  # the second QA answered fails: failed QA and a failed unit reach the summary
        real, calls = lc.LoCoMo._answer, {"n": 0}

        async def answer(*args):
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("model went away")
            return await real(*args)

        monkeypatch.setattr(lc.LoCoMo, "_answer", staticmethod(answer))
    data = json.loads(LOCOMO.read_text())
    data[0]["qa"][1]["evidence"] = []  # a QA listing no evidence: counted apart (n_no_evidence)
    (tmp_path / "locomo.json").write_text(json.dumps(data))
    out = tmp_path / "run"
    argv = ["bench", "locomo", "--data", str(tmp_path / "locomo.json"), "--systems", "full_context,retrieval", "--judge", "both"]
    argv += ["--errata", str(ERRATA), "--answer-model", "offline", "--embedder", "hash", "--out", str(out)]
    assert main(argv) == (1 if flaky else 0)
    written = json.loads((out / "summary.json").read_text())
    records = read_jsonl(out / "samples.jsonl")
    qa = [q for r in records for q in r["qa"]]
    # The file keeps the records whole: contexts, predictions, judges' reasons and usage.
    assert qa and all(q.get("context") for q in qa if q.get("status") == "ok") and records[0]["usage"]
    assert any("errata" in q for q in qa) and any((q.get("judge") or {}).get("agreement") is not None for q in qa)
    assert any(q.get("status") != "ok" for q in qa) is flaky
    assert any(q.get("no_evidence") for q in qa if q.get("status") == "ok")

    methods = list(written["systems"])
    whole = locomo_summary_before_views(
        records, systems=methods, categories=list(written["categories"].values()), offline=written["offline"]
    )
    whole["errata"] = summarize_errata(records, methods, load_errata(ERRATA), written["errata"]["outside_data"])
    for key, value in whole.items():
        assert same(written[key], value), key
    assert written["complete"] is (len(records) == 2 and not flaky)

    # report.md from the old summary is the run's report, byte for byte.
    (tmp_path / "old").mkdir()
    write_locomo_report(tmp_path / "old", written | whole)
    assert (tmp_path / "old" / "report.md").read_text() == (out / "report.md").read_text()

    # The views keep none of the long texts and no per-call usage.
    for r in records:
        v = unit_view(r)
        assert "usage" not in v and "stats" not in v and all(not DROPPED & set(q) for q in v["qa"])
        assert all("usage" not in (q.get("judge") or {}) and "reason" not in str(q.get("judge")) for q in v["qa"])
        assert len(json.dumps(v)) < len(json.dumps(r)) / 3
    assert same(LoCoMoRecords(records).usage(methods[0])[0], written["systems"][methods[0]]["answer_usage"])
