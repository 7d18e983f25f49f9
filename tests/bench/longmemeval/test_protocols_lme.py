"""LongMemEval's official counting (issue 14): abstention questions count in their type too."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from chateval.bench.report import write_memory_report
from chateval.bench.summaries import qa_table, summarize_memory_run

from ...conftest import SHARED


def _row(qid: str, qtype: str, correct: bool) -> dict:
    return {"question_id": qid, "question_type": qtype, "abstention": qid.endswith("_abs"),
            "status": "ok", "method": "m", "judge": {"single": {"correct": correct}}}


def test_abstention_counts_in_type_and_in_abstention_row():
    rows = [_row("a", "knowledge-update", True), _row("b", "knowledge-update", False),
            _row("c_abs", "knowledge-update", True), _row("d", "temporal-reasoning", True),
            _row("e_abs", "temporal-reasoning", False)]
    t = qa_table(rows, "single")
    assert t["by_type"]["knowledge-update"] == {"n": 3, "correct": 2, "accuracy": 2 / 3}
    assert t["by_type"]["temporal-reasoning"] == {"n": 2, "correct": 1, "accuracy": 0.5}
    assert t["abstention"] == {"n": 2, "correct": 1, "accuracy": 0.5}
    assert t["n"] == 5 and t["overall"] == 3 / 5
    assert t["task_averaged"] == pytest.approx((2 / 3 + 0.5) / 2)


def test_report_shows_n_and_marks_small_types(tmp_path):
    rows = [_row(f"q{i}", "multi-session", i % 2 == 0) for i in range(6)] + [_row("x_abs", "knowledge-update", True)]
    summary = summarize_memory_run(rows, methods=["m"], retrieval_only=False, offline=True)
    text = write_memory_report(tmp_path, summary, rows, title="T").read_text()
    line = next(l for l in text.splitlines() if l.startswith("| m |"))
    assert "100.0 (1†)" in line  # knowledge-update: n=1 < 5 is marked
    assert "50.0 (6) " in line  # multi-session: 3/6, not marked
    assert "† marks n < 5" in text


def _oracle() -> Path:
    root = Path(os.environ.get("CHATEVAL_DATA_DIR") or SHARED)
    path = root / "longmemeval" / "longmemeval_oracle.json"
    if not path.is_file():
        pytest.skip(f"shared LongMemEval oracle file not found at {path} (set CHATEVAL_DATA_DIR)")
    return path


def test_oracle_counts_match_hand_counts():
    """Judge every answerable question correct and every _abs question wrong: the per-type
    numbers are then fixed by the official oracle file's composition (500 questions, 30 _abs)."""
    data = json.loads(_oracle().read_text())
    rows = [_row(q["question_id"], q["question_type"], not q["question_id"].endswith("_abs")) for q in data]
    t = qa_table(rows, "single")
    got = {k: (v["correct"], v["n"]) for k, v in t["by_type"].items()}
    assert got == {
        "knowledge-update": (72, 78),  # the example: 6 _abs questions now in the type
        "multi-session": (121, 133),
        "single-session-assistant": (56, 56),
        "single-session-preference": (30, 30),
        "single-session-user": (64, 70),
        "temporal-reasoning": (127, 133),
    }
    assert (t["abstention"]["correct"], t["abstention"]["n"]) == (0, 30)
    assert t["n"] == 500 and t["overall"] == pytest.approx(470 / 500)


@pytest.mark.slow
def test_retrieval_depths_to_50_with_capped_cells_marked(tmp_path):
    from chateval.cli import main

    from ...conftest import FIXTURES

    out = tmp_path / "o"
    assert main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "retrieval",
                 "--embedder", "hash", "--retrieval-only", "--set", "retrieval.k=2", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    ret = summary["methods"]["retrieval"]["retrieval"]
    for k in (1, 3, 5, 10, 30, 50):
        assert f"recall_all@{k}" in ret["session"] and f"ndcg_any@{k}" in ret["turn"]
    depths = [r["retrieval"]["depth"]["session"] for r in rows if r["method"] == "retrieval"
              and r["retrieval"]["evaluable"]]
    # Every question's ranking is shorter than 50 on this tiny haystack: all capped at 50, none at 1.
    assert ret["capped"]["session"]["50"] == len(depths) == ret["n_evaluable"] and ret["capped"]["session"]["1"] == 0
    assert ret["capped"]["session"]["3"] == sum(1 for d in depths if d < 3)
    report = (out / "report.md").read_text()
    line = next(l for l in report.splitlines() if l.startswith("| retrieval |") and l.count("|") > 15)
    assert line.rstrip(" |").endswith("*") and "capped: for some questions" in report


def test_recall_depth_bounds_what_systems_are_asked(tmp_path):
    from chateval.cli import main

    from ...conftest import FIXTURES

    out = tmp_path / "o"
    assert main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "retrieval",
                 "--embedder", "hash", "--retrieval-only", "--rankers", "", "--recall-depth", "1",
                 "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    evaluable = [r["retrieval"] for r in rows if r["retrieval"]["evaluable"]]
    assert evaluable and all(len(r["ranked_sessions"]) == r["depth"]["session"] == 1 for r in evaluable)
    assert json.loads((out / "config.json").read_text())["judging"]["recall_depth"] == 1


@pytest.mark.slow
def test_official_judge_protocol_on_the_wire(tmp_path):
    from chateval.cli import main
    from chateval.testing.fake_openai import FakeOpenAIServer

    from ...conftest import FIXTURES

    prompt_dir = tmp_path / "prompts" / "bench"
    prompt_dir.mkdir(parents=True)
    (prompt_dir / "lme_judge_official.j2").write_text("MY LICENSED WORDING {{ question }} / {{ response }}")

    def reply(body: dict) -> str:
        text = body["messages"][-1]["content"]
        if text.startswith("MY LICENSED WORDING"):
            return "Yes." if "t_garden" not in text else "no, it is wrong"
        return "The answer."

    out = tmp_path / "o"
    with FakeOpenAIServer(responder=reply) as server:
        rc = main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context",
                   "--answer-model", "openai-compatible/x", "--base-url", server.base_url, "--embedder", "hash",
                   "--judge-protocol", "official", "--prompt-dir", str(tmp_path / "prompts"), "--out", str(out)])
        judged = [r for r in server.requests if r["messages"][-1]["content"].startswith("MY LICENSED WORDING")]
    assert rc == 0 and judged and all("response_format" not in r for r in judged)  # a plain yes/no reply
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for r in rows:
        single = r["judge"]["single"]
        assert single["protocol"] == "official" and single["correct"] == ("yes" in single["reason"].lower())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge_protocol"] == "official"
    assert json.loads((out / "config.json").read_text())["judging"]["judge_protocol"] == "official"
    assert "Single-judge protocol: official" in (out / "report.md").read_text()
