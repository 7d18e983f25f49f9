"""``chateval memory list`` and ``chateval memory ask``, in process with the offline model."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest

import chateval.memory.systems  # noqa: F401  (registers the built-in systems)
from chateval.cli import main
from chateval.memory import MEMORY_SYSTEMS

from .conftest import SHARED, local_systems

LME_ORACLE = SHARED / "longmemeval" / "longmemeval_oracle.json"
QID = "6613b389"  # 3 evidence sessions, gold answer "2"

pytestmark = [
    pytest.mark.skipif(not LME_ORACLE.exists(), reason=f"shared data not found at {SHARED}"),
    # qdrant-client's version check thread; chateval filters it, but pytest resets warning filters per test.
    pytest.mark.filterwarnings("ignore:Failed to obtain server version"),
]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(*extra: str) -> int:
    return main(["memory", "ask", "--data", str(LME_ORACLE), "--question-id", QID, "--embedder", "hash", *extra])


def one_line_error(err: str, *needles: str) -> None:
    text = err.strip()
    assert text.startswith("error: ") and "\n" not in text, text
    assert "Traceback" not in text
    for n in needles:
        assert n in text, text


def test_memory_list(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    assert main(["memory", "list"]) == 0
    out = capsys.readouterr().out
    for name in MEMORY_SYSTEMS.names():
        assert re.search(rf"^\W*{name}\b", out, re.M), name
    assert "max_context_tokens=120000" in out and "truncate='oldest_first'" in out
    assert MEMORY_SYSTEMS.get("full_context").description in out
    assert "LongMemEval" in out  # full_context's paper


@pytest.mark.slow
@pytest.mark.parametrize("name", local_systems())
def test_ask_every_system(capsys, name):
    assert ask("--system", name) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert f"system    {name}" in out
    assert f"question  {QID} [temporal-reasoning], asked 2023-07-07 23:22" in out
    assert "How many months before my anniversary did Rachel get engaged?" in out
    assert "sessions  3 ingested in date order (0 empty)" in out
    assert re.search(r"^answer    \S", out, re.M)
    assert re.search(r"^gold      2$", out, re.M)
    assert re.search(r"^context   \d+ tokens \(approx\.\)", out, re.M)
    calls = re.search(r"^llm calls (\d+) \((\d+) ingesting, (\d+) answering\), (\d+) cached", out, re.M)
    # One answer call; THEANINE also refines each retrieved timeline (at most k*n more);
    # longmemeval_rag first reads the question's time range (time_aware=boost by default).
    answering = int(calls.group(3)) if calls else 0
    assert calls and int(calls.group(1)) >= 1 and (answering == 1 or (name.startswith("theanine") and 2 <= answering <= 4)
                                                   or (name == "longmemeval_rag" and answering == 2))
    assert "offline model" in captured.err and "ingesting 3 session(s)" in captured.err


def test_ask_shows_recalled_items_with_provenance(capsys):
    assert ask("--system", "retrieval", "--set", "k=2") == 0
    out = capsys.readouterr().out
    assert "system    retrieval (k=2, min_score=None)" in out
    assert "recalled  2 item(s), best first" in out
    items = re.findall(r"^  (\d+)\. \[2023-07-07 \d\d:\d\d\] score [\d.-]+  session (answer_aaf71ce2_\d) \*  "
                       r"turns (answer_aaf71ce2_\d_\d+)", out, re.M)
    assert [n for n, _, _ in items] == ["1", "2"]
    assert all(turn.startswith(session + "_") for _, session, turn in items)


def test_ask_full_context_show_context(capsys):
    assert ask("--system", "full_context", "--show-context") == 0
    out = capsys.readouterr().out
    assert "recalled  - (this system recalls no items" in out
    # Oldest first, by position and date: the file's ids (answer_aaf71ce2_3, _1, _2 in date order)
    # never reach the reader's context (issue 34).
    order = [out.index(f"## Session {n} (") for n in (1, 2, 3)]
    assert order == sorted(order) and "## Session answer_" not in out
    assert "llm calls 1 (0 ingesting, 1 answering), 0 cached" in out


def test_ask_settings_are_applied(capsys):
    assert ask("--system", "full_context", "--set", "max_context_tokens=1", "--set", "truncate=oldest_first") == 0
    out = capsys.readouterr().out
    assert "max_context_tokens=1," in out and re.search(r"^context   0 tokens", out, re.M)


@pytest.mark.slow
def test_second_ask_is_answered_from_the_cache(capsys):
    assert ask("--system", "retrieval") == 0
    first = capsys.readouterr().out
    assert "llm calls 4 (3 ingesting, 1 answering), 0 cached" in first
    assert ask("--system", "retrieval") == 0
    assert "llm calls 0 (0 ingesting, 0 answering), 4 cached" in capsys.readouterr().out
    assert ask("--system", "retrieval", "--no-cache") == 0
    assert "llm calls 4 (3 ingesting, 1 answering), 0 cached" in capsys.readouterr().out


def test_qdrant_url_to_nothing_is_a_one_line_error(capsys):
    url = f"http://127.0.0.1:{closed_port()}"
    assert ask("--system", "retrieval", "--qdrant-url", url) == 2
    captured = capsys.readouterr()
    one_line_error(captured.err, f"cannot reach Qdrant at {url}")
    assert captured.out == ""  # nothing was ingested or answered


@pytest.mark.slow
def test_qdrant_url_to_nothing_from_a_shell():
    """The real process: one line on stderr, no traceback, no warning from qdrant-client's thread."""
    url = f"http://127.0.0.1:{closed_port()}"
    proc = subprocess.run(
        [sys.executable, "-m", "chateval.cli", "memory", "ask", "--system", "full_context", "--data", str(LME_ORACLE),
         "--question-id", QID, "--qdrant-url", url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    one_line_error(proc.stderr, f"cannot reach Qdrant at {url}")


@pytest.mark.parametrize("args,needles", [
    (["--system", "nope"], ["unknown memory system 'nope'", "full_context"]),
    (["--system", "retrieval", "--set", "no_such_knob=1"], ["memory system 'retrieval': setting 'no_such_knob'"]),
    (["--system", "retrieval", "--set", "k=many"], ["setting 'k'"]),
    (["--system", "retrieval", "--set", "k"], ["--set 'k': expected KEY=VALUE"]),
    (["--system", "retrieval", "--qdrant-url", "localhost:6333"], ["expected an http:// or https:// URL"]),
    (["--system", "retrieval", "--embedder", "word2vec"], ["embedding spec 'word2vec'"]),
    (["--system", "retrieval", "--model", "nope/x"], ["unknown provider 'nope'"]),
])
def test_bad_options_are_one_line_errors(capsys, args, needles):
    assert ask(*args) == 2
    captured = capsys.readouterr()
    one_line_error(captured.err, *needles)
    assert captured.out == ""


def test_question_not_in_file_and_bad_file(capsys, tmp_path):
    assert main(["memory", "ask", "--system", "full_context", "--data", str(LME_ORACLE), "--question-id", "nope"]) == 2
    one_line_error(capsys.readouterr().err, "no question with question_id 'nope' (500 questions in the file)")
    bad = tmp_path / "bad.json"
    bad.write_text('{"question_id": "x"}')
    assert main(["memory", "ask", "--system", "full_context", "--data", str(bad), "--question-id", "x"]) == 2
    one_line_error(capsys.readouterr().err, "expected a JSON list of questions")


def test_memory_without_subcommand_prints_help(capsys):
    assert main(["memory"]) == 2
    assert "list" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["memory", "ask", "--system", "full_context"])  # --data and --question-id are required
    assert info.value.code == 2


def test_ask_against_an_openai_compatible_server(capsys):
    """The same command with a real client: one request (full_context answers in one call)
    whose prompt holds the printed context, and the server's reply printed as the answer."""
    from chateval.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(responder=lambda body: "Rachel got engaged 2 months before.") as server:
        assert ask("--system", "full_context", "--model", "openai-compatible/chat-model",
                   "--base-url", server.base_url, "--no-cache", "--show-context") == 0
        (request,) = server.requests
    out = capsys.readouterr().out
    assert request["model"] == "chat-model"
    prompt = "\n".join(m["content"] for m in request["messages"])
    assert "## Session 3 (" in prompt and "Rachel get engaged?" in prompt and "answer_aaf71ce2" not in prompt
    assert re.search(r"^answer    Rachel got engaged 2 months before\.$", out, re.M)
    assert "llm calls 1 (0 ingesting, 1 answering), 0 cached" in out and "(approx.)" not in out.split("llm calls")[1]
