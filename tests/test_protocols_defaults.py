"""Issue 28, items 1-3: LongMemEval's and LoCoMo's defaults follow the official code, checked on
what the fake OpenAI server received: the whole haystack for full_context, the official reader
framing (no system prompt, no "say you don't know"), and LongMemEval's official judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import FIXTURES

OLDEST = "OLDEST-SESSION-MARKER"


def _messages(body: dict) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def _is_judge(body: dict) -> bool:
    text = body["messages"][-1]["content"]
    return "yes or no only" in text or "Reply with a JSON object" in text


def _reply(body: dict) -> str:
    """Either judge protocol gets a readable 'correct' (so each test fails only on what it checks)."""
    text = body["messages"][-1]["content"]
    if "Reply with a JSON object" in text:
        return '{"correct": true, "reason": "ok"}'
    return "Yes." if _is_judge(body) else "An answer."


def _big_haystack(tmp_path: Path, chars_per_session: int = 200_000) -> Path:
    """One question whose three sessions take ~150,000 approximate tokens (above the budget
    full_context used to truncate to), the oldest one carrying a marker."""
    filler = "I talked about my week and the weather again. " * (chars_per_session // 47)
    sessions = [[{"role": "user", "content": f"{OLDEST} My first car was a red Volvo.", "has_answer": True},
                 {"role": "assistant", "content": filler}],
                [{"role": "user", "content": "Nothing much.", "has_answer": False},
                 {"role": "assistant", "content": filler}],
                [{"role": "user", "content": "Still nothing.", "has_answer": False},
                 {"role": "assistant", "content": filler}]]
    data = [{"question_id": "big_1", "question_type": "single-session-user",
             "question": "What was my first car?", "answer": "a red Volvo",
             "question_date": "2023/05/10 (Wed) 12:00",
             "haystack_session_ids": ["answer_s1", "s2", "s3"],
             "haystack_dates": ["2023/03/02 (Thu) 10:15", "2023/03/20 (Mon) 18:40", "2023/04/11 (Tue) 09:05"],
             "haystack_sessions": sessions, "answer_session_ids": ["answer_s1"]}]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    return path


def _lme(data: Path, out: Path, server: FakeOpenAIServer, *extra: str, model: str = "openai-compatible/x") -> int:
    return main(["bench", "longmemeval", "--data", str(data), "--systems", "full_context", "--answer-model", model,
                 "--base-url", server.base_url, "--embedder", "hash", "--no-cache", "--out", str(out), *extra])


# --- item 1: the whole haystack ------------------------------------------------------------------

@pytest.mark.slow
def test_full_context_reader_gets_the_whole_haystack_by_default(tmp_path):
    data = _big_haystack(tmp_path)
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(data, tmp_path / "o", server) == 0
        readers = [r for r in server.requests if not _is_judge(r)]
    assert len(readers) == 1 and OLDEST in _messages(readers[0])  # the oldest session was not dropped
    record = json.loads((tmp_path / "o" / "samples.jsonl").read_text().splitlines()[0])
    assert record["context_tokens"] > 120_000


def test_truncation_is_an_option(tmp_path):
    data = _big_haystack(tmp_path)
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(data, tmp_path / "o", server, "--set", "full_context.max_context_tokens=120000") == 0
        readers = [r for r in server.requests if not _is_judge(r)]
    assert readers and OLDEST not in _messages(readers[0])


def test_a_model_known_too_small_fails_the_unit_naming_the_option(tmp_path):
    data = _big_haystack(tmp_path)
    with FakeOpenAIServer(responder=_reply) as server:
        rc = _lme(data, tmp_path / "o", server, model="openai-compatible/phi-4")  # a 16k-token window
        sent = list(server.requests)
    record = json.loads((tmp_path / "o" / "samples.jsonl").read_text().splitlines()[0])
    assert rc == 1 and not sent  # refused before any call
    assert record["status"] == "failed"
    assert "16,384" in record["error"] and "--set full_context.max_context_tokens=N" in record["error"]
    # A declared larger window lets it through (the table is only a default).
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(data, tmp_path / "o2", server, "--set", "full_context.context_window=200000",
                    model="openai-compatible/phi-4") == 0


# --- item 2: the reader prompt -------------------------------------------------------------------

def test_longmemeval_reader_prompt_is_the_official_step_by_step_one(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(FIXTURES / "lme_tiny.json", tmp_path / "o", server, "--limit", "2") == 0
        readers = [r for r in server.requests if not _is_judge(r)]
    assert len(readers) == 2
    for body in readers:
        assert [m["role"] for m in body["messages"]] == ["user"]  # no system prompt
        text = _messages(body)
        assert "step by step" in text and "then reason" in text
        assert "don't know" not in text.lower() and "do not know" not in text.lower()
        assert "Current date: 2023-05-10" in text  # LongMemEval's prompt carries the question date


def test_longmemeval_concise_reader_is_an_option(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(FIXTURES / "lme_tiny.json", tmp_path / "o", server, "--limit", "1",
                    "--reader-prompt", "chateval") == 0
        readers = [r for r in server.requests if not _is_judge(r)]
    assert readers[0]["messages"][0]["role"] == "system" and "don't know" in readers[0]["messages"][0]["content"]
    assert "Answer the question concisely." in _messages(readers[0])


def _locomo(out: Path, server: FakeOpenAIServer, *extra: str) -> int:
    return main(["bench", "locomo", "--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "full_context",
                 "--answer-model", "openai-compatible/x", "--base-url", server.base_url, "--embedder", "hash",
                 "--no-cache", "--max-questions", "2", "--out", str(out), *extra])


@pytest.mark.slow
def test_locomo_reader_has_no_system_prompt_and_no_date_line(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _locomo(tmp_path / "o", server) == 0
        readers = [r for r in server.requests if not _is_judge(r)]
    assert len(readers) == 2
    for body in readers:
        assert [m["role"] for m in body["messages"]] == ["user"]
        text = _messages(body)
        assert "current date" not in text.lower() and "don't know" not in text.lower()
        assert "short phrase" in text  # the official answer style is kept
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["reader_prompt"] == "official"


def test_locomo_earlier_framing_is_an_option(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _locomo(tmp_path / "o", server, "--reader-prompt", "chateval") == 0
        readers = [r for r in server.requests if not _is_judge(r)]
    assert readers[0]["messages"][0]["role"] == "system"
    assert "Current date:" in _messages(readers[0])


# --- item 3: the official judge ------------------------------------------------------------------

def _typed_fixture(tmp_path: Path) -> Path:
    """lme_tiny with one question of each type the official judge treats on its own."""
    data = json.loads((FIXTURES / "lme_tiny.json").read_text())
    types = {"t_cat": "single-session-preference", "t_garden": "knowledge-update"}
    for q in data:
        q["question_type"] = types.get(q["question_id"], q["question_type"])
    path = tmp_path / "typed.json"
    path.write_text(json.dumps(data))
    return path


def test_longmemeval_judge_is_the_official_protocol_by_default(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(_typed_fixture(tmp_path), tmp_path / "o", server) == 0
        judged = [r for r in server.requests if _is_judge(r)]
    assert len(judged) == 5
    for body in judged:
        assert body["max_tokens"] == 10 and body["temperature"] == 0 and "response_format" not in body
        assert [m["role"] for m in body["messages"]] == ["user"]
    by_question = {q: next(_messages(b) for b in judged if q in _messages(b))
                   for q in ("new job", "cat Miso", "visit in May", "What did I plant", "colour is my car")}
    preference, abstention = by_question["cat Miso"], by_question["colour is my car"]
    assert "Rubric:" in preference and "personal information" in preference and "Correct answer" not in preference
    assert "Explanation:" in abstention and "identify the question as unanswerable" in abstention
    assert "off-by-one" in by_question["visit in May"] and "Correct answer:" in by_question["visit in May"]
    assert "earlier information" in by_question["What did I plant"]
    assert "updated answer" in by_question["What did I plant"]
    assert "Correct answer:" in by_question["new job"] and "Rubric" not in by_question["new job"]
    rows = [json.loads(line) for line in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]
    assert all(r["judge"]["single"]["protocol"] == "official" and r["correct"] for r in rows)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["judge_protocol"] == "official" and summary["judge_model"] == "openai-compatible/x"
    assert "not LongMemEval's official judge gpt-4o-2024-08-06" in summary["judge_model_note"]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "Judge model: openai-compatible/x" in report and "Not the official judge" in report


def test_the_official_judge_model_is_not_flagged(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(FIXTURES / "lme_tiny.json", tmp_path / "o", server, "--limit", "1",
                    "--judge-model", "openai-compatible/gpt-4o-2024-08-06") == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["judge_model_note"] is None
    assert "Not the official judge" not in (tmp_path / "o" / "report.md").read_text()


def test_runs_without_an_answer_step_do_not_record_a_reader_prompt(tmp_path):
    """--hypotheses (and --retrieval-only) runs answer nothing: the reader framing is not part of
    their identity, so such a run made before the option still resumes."""
    qids = [q["question_id"] for q in json.loads((FIXTURES / "lme_tiny.json").read_text())]
    hyp = tmp_path / "h.jsonl"
    hyp.write_text("".join(json.dumps({"question_id": q, "hypothesis": "Fernbrook"}) + "\n" for q in qids))
    out = tmp_path / "o"
    assert main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--hypotheses", str(hyp),
                 "--out", str(out)]) == 0
    assert "reader_prompt" not in json.loads((out / "config.json").read_text())["judging"]
    assert json.loads((out / "summary.json").read_text())["reader_prompt"] is None
