"""Issue 34, item 12: LongMemEval's official reader settings as options, checked on what the fake
OpenAI server received: the reader's 800-token output limit, the official json history layout
(sessions numbered by position, a date line, the turns as JSON; no session ids, no gold flags),
and the official full-history cut (the newest end, to the window minus reply minus 1,000 tokens)."""

from __future__ import annotations

import json

from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES
from ...test_protocols_defaults import OLDEST, _big_haystack, _is_judge, _lme, _messages, _reply


def _readers(server: FakeOpenAIServer) -> list[dict]:
    return [r for r in server.requests if not _is_judge(r)]


def test_reader_max_tokens_reaches_the_reader_only(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert (
            _lme(FIXTURES / "lme_tiny.json", tmp_path / "o", server, "--limit", "1", "--reader-max-tokens", "800") == 0
        )
        readers, judges = _readers(server), [r for r in server.requests if _is_judge(r)]
    assert [r["max_tokens"] for r in readers] == [800]
    assert judges and all(r["max_tokens"] != 800 for r in judges)  # the judge keeps its own limit
    config = json.loads((tmp_path / "o" / "config.json").read_text())
    assert config["judging"]["reader_max_tokens"] == 800
    assert "Reader output limit: 800 tokens." in (tmp_path / "o" / "report.md").read_text()
    with FakeOpenAIServer(responder=_reply) as server:  # default: the model's 1,024
        assert _lme(FIXTURES / "lme_tiny.json", tmp_path / "d", server, "--limit", "1") == 0
        assert [r["max_tokens"] for r in _readers(server)] == [1024]


def test_official_layout_numbers_sessions_and_shows_turns_as_json(tmp_path):
    data = _big_haystack(tmp_path, chars_per_session=300)
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(data, tmp_path / "o", server, "--set", "full_context.layout=longmemeval") == 0
        (reader,) = _readers(server)
    text = _messages(reader)
    for n, date in ((1, "2023/03/02 (Thu) 10:15"), (2, "2023/03/20 (Mon) 18:40"), (3, "2023/04/11 (Tue) 09:05")):
        assert f"### Session {n}:\nSession Date: {date}\nSession Content:\n\n[" in text
    first = text.split("Session Content:\n\n", 1)[1].split("\n", 1)[0]
    turns = json.loads(first)
    assert turns[0] == {"role": "user", "content": f"{OLDEST} My first car was a red Volvo."}
    assert set().union(*turns) == {"role", "content"}  # no has_answer
    assert "has_answer" not in text
    assert not any(f'"{sid}' in text or f" {sid}" in text for sid in ("answer_s1", "s2", "s3"))  # no session ids


def test_official_cut_keeps_the_oldest_part(tmp_path):
    data = _big_haystack(tmp_path)  # ~600,000 characters
    with FakeOpenAIServer(responder=_reply) as server:
        assert (
            _lme(
                data,
                tmp_path / "o",
                server,
                "--set",
                "full_context.layout=longmemeval",
                "--set",
                "full_context.truncate=official",
                "--set",
                "full_context.context_window=30000",
                "--reader-max-tokens",
                "800",
            )
            == 0
        )
        (reader,) = _readers(server)
    text = _messages(reader)
    assert OLDEST in text and "Still nothing." not in text  # the newest end is what is lost
    record = json.loads((tmp_path / "o" / "samples.jsonl").read_text().splitlines()[0])
    assert len(record["context"]) == (30000 - 800 - 1000) * 4  # window - 1,800 tokens, ~4 characters each


def test_official_cut_needs_a_window(tmp_path):
    data = _big_haystack(tmp_path, chars_per_session=300)
    with FakeOpenAIServer(responder=_reply) as server:
        rc = _lme(data, tmp_path / "o", server, "--set", "full_context.truncate=official")
        assert not _readers(server)
    record = json.loads((tmp_path / "o" / "samples.jsonl").read_text().splitlines()[0])
    assert rc == 1 and "full_context.context_window=N" in record["error"]
