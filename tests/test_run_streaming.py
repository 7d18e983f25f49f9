"""A run streams (issue 38 item 3): samples start as workers free up (the input is not turned
into one task per sample up front), results go to disk as they finish and are not kept, and the
summary is built from a second pass over samples.jsonl without transcripts and inputs, and is
the same, field for field and byte for byte, as the summary of the whole records."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from chateval.debate import Sample
from statistics import mean

from chateval.debate.tasks import get_task
from chateval.evaluation.evaluator import Evaluator
from chateval.evaluation.inputs import load_samples
from chateval.evaluation.report import label_agreement
from chateval.models import UsageTotals
from chateval.runs.directory import read_jsonl
from chateval.runs.savings import savings
from chateval.stats.self_consistency import repeat_accuracy, summarize_consistency

from .conftest import EXAMPLES, FIXTURES

TIMINGS = {"wall_time_s", "wall_time_attempts_s"}


def summary_before_streaming(records: list[dict], task: str, model: str, offline: bool) -> dict:
    """The oracle: summarize_judged as it was before streaming, over every whole record in memory."""
    ok = [r for r in records if r.get("status") == "ok"]
    failed = [r for r in records if r.get("status") != "ok"]
    usage = UsageTotals()
    for r in records:
        usage.merge(UsageTotals.model_validate(r.get("usage") or {}))
    agents = [a for r in records for a in r.get("agents") or []]
    endpoints: dict[str, UsageTotals] = {}
    for r in records:
        for name, u in (r.get("usage_by_endpoint") or {}).items():
            endpoints.setdefault(name, UsageTotals()).merge(UsageTotals.model_validate(u))
    by_endpoint = {"usage_by_endpoint": {k: v.model_dump() for k, v in endpoints.items()}} if endpoints else {}
    out = {
        "model": model,
        "offline": offline,
        "n_samples": len(records),
        "n_ok": len(ok),
        "n_failed": len(failed),
        "failed_ids": [r.get("id") for r in failed],
        "agent_verdicts": len(agents),
        "parse_errors": sum(1 for a in agents if a.get("parse_error")),
        "reasked": sum(1 for a in agents if a.get("reasked")),
        "usage": usage.model_dump(),
        **by_endpoint,
        **summarize_consistency(records),
        "mean_latency_s": mean(r.get("latency_s", 0.0) for r in records) if records else None,
    }
    if offline:
        out["note"] = "offline model: verdicts are deterministic heuristics, not LLM judgements"
    out |= savings(records)
    fmt = get_task(task)
    out |= fmt.summarize(ok)
    labelled = [(r, fmt.reference(r.get("label"))) for r in ok]
    labelled = [(r, lab) for r, lab in labelled if lab is not None and r.get("verdict")]
    if labelled:
        out["label_accuracy"] = fmt.label_accuracy(labelled)
        repeats = [(r["consistency"]["verdicts"], lab) for r, lab in labelled
                   if r.get("consistency") and not isinstance(lab, (dict, list, float))]
        if repeats and (spread := repeat_accuracy(repeats)):
            out["self_consistency"]["repeat_accuracy"] = spread
    return out | {"complete": True, "agreement": label_agreement(records, task)}


@pytest.mark.parametrize(
    "data,settings",
    [
        (EXAMPLES / "faireval_pairwise.jsonl", {"swap": True, "escalate": True}),
        (EXAMPLES / "faireval_pairwise.jsonl", {"stop_early": True, "agents": 3}),
        (FIXTURES / "calibrate_scores.jsonl", {"task": "score"}),
        (EXAMPLES / "correctness.jsonl", {"task": "correctness"}),
        (EXAMPLES / "faireval_pairwise.jsonl", {"samples": 3, "temperature": 0.7}),
    ],
)
def test_the_streamed_summary_is_the_summary_of_the_whole_records(tmp_path, data, settings):
    ev = Evaluator(model="offline", cache=False, **settings)
    out = tmp_path / "run"
    summary = ev.evaluate_file_sync(data, out, resume=False)
    written = json.loads((out / "summary.json").read_text())
    assert written == summary

    # What the summary was before streaming: computed from every whole record in memory.
    records = read_jsonl(out / "samples.jsonl")[0]
    assert records and all(r.get("transcript") for r in records)  # the file keeps the debates
    samples, _ = load_samples(data, ev.config.task, aspects=ev.config.aspects)
    assert len(records) == len(samples)
    whole = summary_before_streaming(records, ev.config.task, ev.layer.label, True)
    assert set(whole) <= set(written)
    for key, value in whole.items():
        assert json.dumps(written[key], sort_keys=True) == json.dumps(value, sort_keys=True), key
    assert set(written) - set(whole) - TIMINGS == {
        "format_version",
        "task",
        "strategy",
        "agents",
        "turns",
        "config_hash",
        "invalid_lines",
        "n_expected",
        "n_missing",
        "missing_keys",
        "unreadable_lines",
    }


def test_samples_are_taken_as_workers_free_up_and_results_are_not_kept(monkeypatch):
    ev = Evaluator(model="offline", cache=False, agents=2, turns=1)
    taken: list[int] = []
    finished: list[int] = []
    judging = 0
    most = 0
    real = ev.judge

    async def judge(s, task=None):
        nonlocal judging, most
        judging += 1
        most = max(most, judging)
        try:
            await asyncio.sleep(0.001)
            return await real(s, task)
        finally:
            judging -= 1

    monkeypatch.setattr(ev, "judge", judge)

    def samples(n: int) -> Iterator[Sample]:
        for i in range(n):
            taken.append(i)
            assert len(taken) - len(finished) <= 4 + 1  # never more than the workers ahead of what finished
            yield Sample(id=f"s{i}", question=f"Q{i}?", answer_1="one", answer_2="two")

    def done(i: int, r) -> None:
        assert r.id == f"s{i}"
        finished.append(i)

    asyncio.run(ev.judge_each(samples(40), done, concurrency=4))
    assert sorted(finished) == list(range(40)) and most == 4
