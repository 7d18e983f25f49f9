"""Benchmarks and calibrate stream (issue 38 item 3): run_units starts units as workers free up and
keeps no record; --resume keeps only the finished keys; LongMemEval's summary and calibrate's
come from a pass over samples.jsonl and are the summaries computed the old way from the whole
records; the bootstraps draw a chunk of resamples at a time and give the same numbers as one
(resamples x items) matrix."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from statistics import mean

import numpy as np
import pytest

from chateval.bench.base import run_units
from chateval.bench.comparisons import longmemeval_comparisons
from chateval.bench.stats import mean_or_none
from chateval.bench.summaries import latency_table, qa_table, retrieval_table, run_counts, usage_sum
from chateval.calibration import calibrate
from chateval.calibration import metrics as M
from chateval.cli import main
from chateval.evaluation.inputs import load_samples
from chateval.paired import paired_difference, paired_metric_difference
from chateval.stats import resample
from chateval.stats.agreement import kappa_ci95
from chateval.runs.directory import RunDir, read_jsonl
from chateval.util.jsonl import dumps_line

from .conftest import FIXTURES, write_jsonl

TIMINGS = {"wall_time_s", "wall_time_attempts_s"}


def same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# --- run_units and --resume ------------------------------------------------------------------
def test_units_start_as_workers_free_up_and_records_are_not_kept(tmp_path):
    started: list[int] = []
    finished: list[int] = []

    async def fn(i: int) -> dict:
        started.append(i)
        assert len(started) - len(finished) <= 3  # never more units begun than workers
        await asyncio.sleep(0.001)
        finished.append(i)
        return {"value": i, "big": "x" * 1000}

    units = [(f"u{i}", i) for i in range(30)]

    async def go(resume: bool, **kw):
        with RunDir(tmp_path / "run", {"config_hash": "h"}, key="key", resume=resume) as run:
            return await run_units(units, fn, run, workers=3, **kw)

    assert asyncio.run(go(False, keep=None)) == []
    assert started == list(range(30))  # in input order
    # --resume: nothing to run; each record's view, read back from the file
    assert asyncio.run(go(True, keep=lambda r: r["value"])) == list(range(30)) and len(started) == 30
    assert asyncio.run(go(True))[0] == read_jsonl(tmp_path / "run" / "samples.jsonl")[0][0]  # whole by default
    assert [r["value"] for r in read_jsonl(tmp_path / "run" / "samples.jsonl")[0]] == list(range(30))


def test_resume_keeps_the_same_lines_as_reading_the_whole_file(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"format_version": 1, "config_hash": "h"}))
    rows = [
        {"key": "a", "status": "ok", "n": 1},
        {"key": "b", "status": "failed", "error": "x"},
        {"key": "c", "status": "ok", "n": 2},
        {"key": "a", "status": "ok", "n": 3},  # a key twice: its last line, where its first was
        {"key": "b", "status": "ok", "n": 4},
        {"key": "d", "status": "failed", "error": "y"},
    ]
    text = "".join(dumps_line(r) for r in rows) + "\n" + '{"key": "e", "status": "o'  # a blank and a torn line
    (out / "samples.jsonl").write_text(text)
    # The old way: every record read whole, the finished ones kept in a dict by key.
    whole, torn = read_jsonl(out / "samples.jsonl")
    done: dict[str, dict] = {}
    for r in whole:
        if r.get("status") == "ok":
            done[str(r["key"])] = r
    expected = "".join(dumps_line(r) for r in done.values())
    with RunDir(out, {"config_hash": "h"}, resume=True, key="key") as run:
        assert run.done == set(done) and run.dropped_failed == 2 and run.dropped_torn == torn == 1
        assert (out / "samples.jsonl").read_text() == expected
        assert run.accounting()["unreadable_lines"] == 1


# --- LongMemEval's summary ---------------------------------------------------------------------
def memory_summary_before_streaming(records: list[dict], methods: list[str], retrieval_only: bool, offline: bool):
    """The oracle: summarize_memory_run as it was before streaming, over every whole record."""
    by_method: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_method[r.get("method") or r.get("key", "::?").split("::")[-1]].append(r)
    per = {}
    for m in methods:
        rows = by_method.get(m, [])
        ok = [r for r in rows if r.get("status") == "ok"]
        entry = {
            "n": len(rows),
            "n_ok": len(ok),
            "n_failed": len(rows) - len(ok),
            "failed": [{"key": r.get("key"), "error": r.get("error")} for r in rows if r.get("status") != "ok"][:20],
            "retrieval": retrieval_table(ok),
            "latency": latency_table(ok),
            "mean_context_tokens": mean_or_none(r.get("context_tokens") for r in ok),
            "answer_usage": usage_sum(r.get("usage") for r in ok),
        }
        if not retrieval_only:
            entry["qa"] = {w: qa_table(ok, w) for w in ("single", "debate")}
            entry["judge_usage"] = usage_sum((r.get("judge") or {}).get("usage") for r in ok)
            agree = [r["judge"]["agreement"] for r in ok if (r.get("judge") or {}).get("agreement") is not None]
            entry["judge_agreement"] = {"n": len(agree), "rate": sum(agree) / len(agree)} if agree else None
        per[m] = entry
    comparisons = longmemeval_comparisons(records, methods, retrieval_only=retrieval_only)
    return {"methods": per, "comparisons": comparisons} | run_counts(records, offline=offline)


@pytest.mark.parametrize(
    "args",
    [
        ["--systems", "full_context,retrieval", "--judge", "both"],
        ["--retrieval-only", "--rankers", "bm25,dense", "--systems", "retrieval"],
    ],
)
def test_longmemeval_summary_is_the_summary_of_the_whole_records(tmp_path, args):
    out = tmp_path / "run"
    argv = ["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), *args]
    assert main([*argv, "--answer-model", "offline", "--embedder", "hash", "--out", str(out)]) in (0, 1)
    written = json.loads((out / "summary.json").read_text())
    records = read_jsonl(out / "samples.jsonl")[0]
    assert records and any(r.get("context") or r.get("retrieval") for r in records)  # the file keeps them whole
    whole = memory_summary_before_streaming(
        records, list(written["methods"]), "--retrieval-only" in args, written["offline"]
    )
    for key, value in whole.items():
        assert same(written[key], value), key
    assert written["complete"] is (len(records) == written["n_expected"])
    assert sum(m["n"] for m in written["methods"].values()) == len(records)


# --- calibrate ------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [FIXTURES / "calibrate_pairwise.jsonl", FIXTURES / "calibrate_scores.jsonl"])
def test_calibrate_numbers_are_those_of_the_whole_records(tmp_path, data):
    out = tmp_path / "cal"
    summary = calibrate(data, out, model="offline", settings=["multi=chateval_default"], resamples=300)
    task = summary.task
    samples = load_samples(data, task)[0]
    clusters = {x.id: str(x.meta["cluster"]) for x in samples if x.meta.get("cluster") is not None} or None
    items = M.Items(task, {x.id: x.label for x in samples}, clusters)
    # The old way: each setting's verdicts from its whole records in memory.
    preds = {}
    for name in ("single", "multi"):
        records = read_jsonl(out / name / "samples.jsonl")[0]
        assert records and all(r.get("transcript") for r in records)
        preds[name] = {r["key"]: M.predicted(task, r) for r in records if r.get("status") == "ok"}
        sub = json.loads((out / name / "summary.json").read_text())
        assert sub["n_ok"] == len(preds[name]) and sub["n_samples"] == len(records)
    opts = {"resamples": 300, "seed": summary.seed}
    for name in ("single", "multi"):
        got = {m: s.model_dump() for m, s in summary.setting(name).agreement.items()}
        assert same(got, {m: s.model_dump() for m, s in M.setting_agreement(items, preds[name], **opts).items()})
    vs = {m: d.model_dump() for m, d in summary.setting("multi").vs_baseline.items()}
    old = M.paired_vs(items, "multi", preds["multi"], "single", preds["single"], **opts)
    assert same(vs, {m: d.model_dump() for m, d in old.items()})


# --- bootstraps drawn a chunk at a time ------------------------------------------------------
@pytest.fixture(params=[1 << 40, 7, 1000], ids=["one matrix", "a row at a time", "chunks"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(resample, "CHUNK_CELLS", request.param)
    return request.param


def results(seed: int) -> list:
    rng = np.random.default_rng(seed)
    n = 60
    gold = [str(x) for x in rng.integers(0, 3, n)]
    a = [g if rng.random() < 0.7 else str(rng.integers(0, 3)) for g in gold]
    b = [g if rng.random() < 0.5 else str(rng.integers(0, 3)) for g in gold]
    equal = [i // 3 for i in range(n)]  # 20 clusters of 3
    unequal = [min(i // 2, 25) for i in range(n)]  # 25 of 2 and one of 10
    hits = ([float(x == g) for x, g in zip(a, gold)], [float(x == g) for x, g in zip(b, gold)])
    scores = (list(rng.normal(size=n)), list(rng.normal(size=n)))
    out = [paired_difference(*scores, resamples=500, seed=3), paired_difference(*hits, resamples=500, seed=3)]
    out.append(kappa_ci95(gold, a, ["0", "1", "2"], resamples=500, seed=3))
    for clusters in (None, equal, unequal):
        out.append(paired_difference(*scores, clusters=clusters, resamples=500, seed=3))
        out.append(paired_metric_difference(gold, a, b, "kappa", clusters=clusters, resamples=500, seed=3))
        labels = dict(zip((f"i{i}" for i in range(n)), gold))
        groups = None if clusters is None else dict(zip(labels, clusters))
        items = M.Items("pairwise", {i: {"0": "1", "1": "2", "2": "tie"}[g] for i, g in labels.items()}, groups)
        pred = {i: {"0": "1", "1": "2", "2": "tie"}[x] for i, x in zip(labels, a)}
        out.append(M.setting_agreement(items, pred, resamples=500, seed=3))
    return [json.dumps(r.model_dump() if hasattr(r, "model_dump") else
                       {k: v.model_dump() if hasattr(v, "model_dump") else v for k, v in r.items()},
                       sort_keys=True) for r in out]


def test_chunked_bootstraps_give_the_numbers_of_one_matrix(chunk, monkeypatch):
    got = results(11)
    monkeypatch.setattr(resample, "CHUNK_CELLS", 1 << 40)  # one chunk: the (resamples x items) matrix of before
    assert got == results(11)
    assert mean(len(r) for r in got) > 100  # each holds its interval and test
