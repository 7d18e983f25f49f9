"""The `http` memory system against the reference agent (examples/http_agent.py) and a
misbehaving agent, both started on 127.0.0.1: protocol v1 on the wire, concurrency by case id,
retrieval metrics from `retrieved`, usage metering, and retries that end in a quoted error."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.datasets import load_longmemeval
from chateval.util.errors import ConfigError
from chateval.memory import MEMORY_SYSTEMS
from chateval.memory.systems.http_agent import HttpAgentError
from chateval.models import ModelLayer, ModelSpec

from .conftest import EXAMPLES, FIXTURES, read_jsonl

LME, LOCOMO = FIXTURES / "lme_tiny.json", FIXTURES / "locomo_tiny.json"


def _reference_module():
    spec = importlib.util.spec_from_file_location("reference_http_agent", EXAMPLES / "http_agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recorder:
    """Wraps the reference agent's handler to record every request body."""

    def __init__(self) -> None:
        self.ref = _reference_module()
        self.requests: list[tuple[str, dict]] = []
        recorder = self

        class Handler(self.ref.Handler):
            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                recorder.requests.append((self.path, json.loads(raw)))
                self.rfile = __import__("io").BytesIO(raw)
                self.headers.replace_header("Content-Length", str(len(raw)))
                super().do_POST()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture()
def agent():
    rec = Recorder()
    yield rec
    rec.server.shutdown()


def make(url: str, **settings):
    return MEMORY_SYSTEMS.get("http")(ModelLayer(ModelSpec.parse("offline")),
                                      settings={"url": url, "retry_base_delay_s": 0.01, **settings})


async def test_protocol_on_the_wire_and_retrieved_items(agent):
    q = next(q for q in load_longmemeval(LME) if q.question_id == "t_job")
    system = make(agent.url)
    await system.ingest_all(q.sessions)
    resp = await system.respond(q.question, q.question_date)
    paths = [p for p, _ in agent.requests]
    assert paths == ["/reset"] + ["/ingest"] * 4 + ["/respond"]
    case = agent.requests[0][1]["case_id"]
    assert case.startswith("chateval-") and all(body["case_id"] == case for _, body in agent.requests)
    ingest = agent.requests[1][1]
    assert set(ingest) == {"case_id", "session_id", "date", "turns"} and ingest["date"].startswith("2023-03-02")
    assert set(ingest["turns"][0]) == {"turn_id", "role", "content"}
    ask = agent.requests[-1][1]
    assert ask["question"] == q.question and ask["dialogue"] is None and ask["date"].startswith("2023-05-10")
    assert "Fernbrook" in resp.answer and resp.context
    assert resp.recalled[0].session_id == "answer_s_work" and resp.recalled[0].turn_ids == ["answer_s_work_1"]


async def test_cases_run_concurrently_apart(agent):
    qs = load_longmemeval(LME)[:2]
    systems = [make(agent.url) for _ in qs]

    async def run(system, q):
        await system.ingest_all(q.sessions)
        return await system.respond(q.question, q.question_date)

    answers = await asyncio.gather(*(run(s, q) for s, q in zip(systems, qs)))
    assert systems[0].case_id != systems[1].case_id
    assert "Fernbrook" in answers[0].answer and "Miso" in answers[1].answer
    systems[0].reset()
    assert systems[0].case_id != agent.requests[0][1]["case_id"]  # a reset starts a fresh case


async def test_dialogue_is_sent_for_conversation_continuation(agent):
    from chateval.memory.types import Turn

    system = make(agent.url)
    dialogue = [Turn(id="n1", role="user", content="Hi again!"), Turn(id="n2", role="assistant", content="Hello!"),
                Turn(id="n3", role="user", content="Remember my cat?")]
    await system.respond(dialogue, datetime(2024, 1, 1, tzinfo=timezone.utc))
    ask = agent.requests[-1][1]
    assert ask["question"] == "Remember my cat?" and [t["turn_id"] for t in ask["dialogue"]] == ["n1", "n2", "n3"]


# --- a misbehaving agent --------------------------------------------------------------------
class Faulty:
    def __init__(self, script: list[tuple[int, str]]) -> None:
        self.script, self.calls = list(script), 0
        faulty = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                faulty.calls += 1
                status, body = faulty.script.pop(0) if faulty.script else (200, "{}")
                if status == 0:  # hang past the client's timeout
                    __import__("time").sleep(0.5)
                    status = 200
                blob = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(blob)))
                self.end_headers()
                self.wfile.write(blob)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


ANSWER = json.dumps({"answer": "fine", "context": "c", "retrieved": None,
                     "usage": {"prompt_tokens": 120, "completion_tokens": 8}})


@pytest.mark.slow
@pytest.mark.parametrize("script,ok", [
    ([(200, "{}"), (500, "boom"), (200, ANSWER)], True),                   # a 5xx is retried
    ([(200, "{}"), (200, "not json"), (200, ANSWER)], True),               # so is a garbage body
    ([(200, "{}"), (0, ANSWER), (200, ANSWER)], True),                     # and a timeout
])
async def test_faults_are_retried(script, ok):
    f = Faulty(script)
    system = make(f.url, timeout_s=0.2)
    resp = await system.respond("How are you?", datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert resp.answer == "fine" and f.calls == 3
    usage = system.log.totals()
    assert (usage.prompt_tokens, usage.completion_tokens) == (120, 8) and usage.cost_usd is None
    f.server.shutdown()


async def test_a_persistent_failure_quotes_the_agent():
    f = Faulty([(200, "{}")] + [(422, '{"error": "my vector store is down"}')] * 5)
    system = make(f.url, max_retries=2)
    with pytest.raises(HttpAgentError, match=r"HTTP 422: .*my vector store is down.*after 3 attempt"):
        await system.respond("How are you?", datetime(2024, 1, 1, tzinfo=timezone.utc))
    f.server.shutdown()


async def test_a_reply_of_the_wrong_shape_names_the_field():
    f = Faulty([(200, "{}"), (200, json.dumps({"reply": "hi"}))])
    with pytest.raises(HttpAgentError, match="field 'answer'"):
        await make(f.url).respond("Hi?", datetime(2024, 1, 1, tzinfo=timezone.utc))
    f.server.shutdown()


def test_bad_url_is_a_one_line_error():
    with pytest.raises(ConfigError, match="setting 'url'"):
        make("ftp://nowhere")


# --- end to end through the benchmarks --------------------------------------------------------
@pytest.mark.slow
def test_longmemeval_and_teafarm_through_the_cli(agent, tmp_path):
    out = tmp_path / "lme"
    assert main(["bench", "longmemeval", "--data", str(LME), "--systems", "http", "--set", f"http.url={agent.url}",
                 "--out", str(out), "--embedder", "hash", "--no-cache"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["n_failed"] == 0 and s["methods"]["http"]["retrieval"]["n_evaluable"] == 4
    rec = next(r for r in read_jsonl(out / "samples.jsonl") if r["question_id"] == "t_job")
    assert rec["retrieval"]["session"]["recall_all@1"] == 1.0 and "Fernbrook" in rec["answer"]
    cases = {body["case_id"] for p, body in agent.requests if p == "/reset"}
    assert len(cases) == 5  # one fresh case per question


@pytest.mark.slow
@pytest.mark.parametrize("name,data,systems", [("teafarm", LOCOMO, "http"), ("locomo", LOCOMO, "http"),
                                               ("head2head", LME, "http,full_context")])
def test_other_benchmarks_through_the_cli(name, data, systems, agent, tmp_path):
    out = tmp_path / name
    assert main(["bench", name, "--data", str(data), "--systems", systems, "--set", f"http.url={agent.url}",
                 "--out", str(out), "--embedder", "hash", "--no-cache"]) == 0
    assert json.loads((out / "summary.json").read_text())["n_failed"] == 0
    asked = [body for p, body in agent.requests if p == "/respond"]
    assert asked and (name != "teafarm" or all(body["dialogue"] for body in asked))


@pytest.mark.slow
def test_retrieval_only_uses_the_agents_ranking(agent, tmp_path):
    out = tmp_path / "ret"
    assert main(["bench", "longmemeval", "--data", str(LME), "--systems", "http", "--set", f"http.url={agent.url}",
                 "--retrieval-only", "--rankers", "", "--out", str(out), "--embedder", "hash", "--no-cache"]) == 0
    assert json.loads((out / "summary.json").read_text())["methods"]["http"]["retrieval"]["n_evaluable"] == 4


def test_reference_agent_script_serves(tmp_path):
    ref = _reference_module()
    server = ref.serve()
    try:
        import urllib.request

        req = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/respond",
                                     data=json.dumps({"case_id": "x", "question": "hi", "date": None,
                                                      "dialogue": None}).encode(), method="POST")
        assert json.loads(urllib.request.urlopen(req, timeout=10).read())["answer"] == "I don't know."
    finally:
        server.shutdown()


@pytest.mark.slow
def test_the_agent_is_given_no_original_id_and_no_gold(agent, tmp_path):
    """Issue 34: what crosses the wire is the blinded history (opaque ids, role and content); the
    scores still use the data set's ids (the agent's ranking is mapped back)."""
    originals = {x for q in load_longmemeval(LME) for s in q.sessions for x in [s.id] + [t.id for t in s.turns]}
    out = tmp_path / "lme"
    assert main(["bench", "longmemeval", "--data", str(LME), "--systems", "http", "--set", f"http.url={agent.url}",
                 "--out", str(out), "--embedder", "hash", "--no-cache"]) == 0
    ingests = [body for p, body in agent.requests if p == "/ingest"]
    assert ingests and all(b["session_id"] not in originals for b in ingests)
    for b in ingests:
        assert all(set(t) == {"turn_id", "role", "content"} and t["turn_id"] not in originals for t in b["turns"])
    sent = json.dumps([body for _, body in agent.requests])
    assert not [i for i in originals if f'"{i}"' in sent] and "has_answer" not in sent
    rec = next(r for r in read_jsonl(out / "samples.jsonl") if r["question_id"] == "t_job")
    assert rec["retrieval"]["ranked_sessions"][0] == "answer_s_work"  # scored under the data set's id
