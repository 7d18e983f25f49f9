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
from chateval.evaluation.evaluator import Evaluator
from chateval.evaluation.inputs import load_samples
from chateval.runs.directory import read_jsonl

from .conftest import EXAMPLES, FIXTURES

TIMINGS = {"wall_time_s", "wall_time_attempts_s"}


@pytest.mark.parametrize(
    "data,settings",
    [
        (EXAMPLES / "faireval_pairwise.jsonl", {"swap": True, "escalate": True}),
        (EXAMPLES / "faireval_pairwise.jsonl", {"stop_early": True, "agents": 3}),
        (FIXTURES / "calibrate_scores.jsonl", {"task": "score"}),
        (EXAMPLES / "correctness.jsonl", {"task": "correctness"}),
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
    samples, invalid = load_samples(data, ev.config.task, aspects=ev.config.aspects)
    config = json.loads((out / "config.json").read_text())
    whole = ev.run_summary(records, len(samples), config, invalid)
    assert set(whole) <= set(written)
    for key, value in whole.items():
        assert json.dumps(written[key], sort_keys=True) == json.dumps(value, sort_keys=True), key
    assert set(written) - set(whole) - TIMINGS <= {
        "format_version",
        "n_expected",
        "n_missing",
        "missing_keys",
        "unreadable_lines",
        "complete",
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
