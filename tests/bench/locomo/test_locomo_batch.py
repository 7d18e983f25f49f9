"""Issue 34, item 9: LoCoMo's batched full-context protocol as an option, checked on what the
fake OpenAI server received (several questions in one call, the whole conversation once, JSON
answers read back to each question) and on what the run records."""

from __future__ import annotations

import json
import re

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES

LOCOMO = FIXTURES / "locomo_tiny.json"


def _batched(body: dict) -> bool:
    return "<<<BEGIN QUESTIONS>>>" in body["messages"][-1]["content"]


def _reply(body: dict) -> str:
    """Batch calls: answer each numbered question with its own number; anything else: a JSON verdict."""
    text = body["messages"][-1]["content"]
    if _batched(body):
        block = text.split("<<<BEGIN QUESTIONS>>>", 1)[1].split("<<<END QUESTIONS>>>", 1)[0]
        asked = re.findall(r"^(\d+)\. (.*)$", block, flags=re.M)
        return json.dumps(
            {
                "answers": [
                    {"number": int(n), "answer": "(a)" if "Select the correct" in q else f"answer {n}"}
                    for n, q in asked
                ]
            }
        )
    return '{"correct": true, "reason": "ok"}'


def _run(out, server, *extra: str) -> int:
    return main(
        [
            "bench",
            "locomo",
            "--data",
            str(LOCOMO),
            "--systems",
            "full_context",
            "--answer-model",
            "openai-compatible/x",
            "--base-url",
            server.base_url,
            "--embedder",
            "hash",
            "--no-cache",
            "--out",
            str(out),
            *extra,
        ]
    )


def test_full_context_batch_asks_several_questions_per_call(tmp_path):
    n_qa = len(json.loads(LOCOMO.read_text())[0]["qa"])  # 6
    with FakeOpenAIServer(responder=_reply) as server:
        assert _run(tmp_path / "o", server, "--full-context-batch", "4") == 0
        calls = [r for r in server.requests if _batched(r)]
    assert len(calls) == 2  # 4 + 2 questions
    texts = [c["messages"][-1]["content"] for c in calls]
    assert [len(re.findall(r"^\d+\. ", t.split("<<<BEGIN QUESTIONS>>>")[1], flags=re.M)) for t in texts] == [4, 2]
    first_turn = json.loads(LOCOMO.read_text())[0]["conversation"]["session_1"][0]["text"]
    assert all(t.count(first_turn) == 1 for t in texts)  # the whole conversation, once per call
    assert all([m["role"] for m in c["messages"]] == ["user"] for c in calls)
    assert "Use DATE of CONVERSATION" in texts[0]  # the official question forms (category 2 here, 5 below)
    rows = [q for line in (tmp_path / "o" / "samples.jsonl").read_text().splitlines() for q in json.loads(line)["qa"]]
    assert len(rows) == n_qa
    # Each question got its own numbered answer back; category 5's bare option maps back to its text.
    assert [r["raw_answer"] for r in rows] == ["answer 1", "answer 2", "answer 3", "answer 4", "answer 1", "(a)"]
    option_a = re.search(r"\(a\) (.*) \(b\)", rows[5]["asked"]).group(1)
    assert rows[5]["category"] == 5 and rows[5]["prediction"] == option_a
    config = json.loads((tmp_path / "o" / "config.json").read_text())
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert config["judging"]["full_context_batch"] == 4 and summary["full_context_batch"] == 4
    assert "4 questions per call" in (tmp_path / "o" / "report.md").read_text()


def test_one_question_per_call_stays_the_default(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _run(tmp_path / "o", server) == 0
        assert not [r for r in server.requests if _batched(r)]
    config = json.loads((tmp_path / "o" / "config.json").read_text())
    assert "full_context_batch" not in config["judging"]  # a default run keeps its identity
    assert "one question per call" in (tmp_path / "o" / "report.md").read_text()


def test_a_missing_answer_fails_only_its_question(tmp_path):
    def drop_second(body: dict) -> str:
        if _batched(body):
            return json.dumps({"answers": [a for a in json.loads(_reply(body))["answers"] if a["number"] != 2]})
        return _reply(body)

    with FakeOpenAIServer(responder=drop_second) as server:
        assert _run(tmp_path / "o", server, "--full-context-batch", "10") == 1
    rows = json.loads((tmp_path / "o" / "samples.jsonl").read_text().splitlines()[0])["qa"]
    failed = [r for r in rows if r.get("status") == "failed"]
    assert len(failed) == 1 and "no answer numbered 2" in failed[0]["error"]


def test_offline_batched_run(tmp_path):
    out = tmp_path / "off"
    assert (
        main(
            [
                "bench",
                "locomo",
                "--data",
                str(LOCOMO),
                "--systems",
                "full_context,retrieval",
                "--answer-model",
                "offline",
                "--embedder",
                "hash",
                "--out",
                str(out),
                "--full-context-batch",
                "20",
            ]
        )
        == 0
    )
    rows = {
        json.loads(line)["method"]: json.loads(line)["qa"] for line in (out / "samples.jsonl").read_text().splitlines()
    }
    assert all(r["raw_answer"].startswith("[offline]") for r in rows["full_context"])
