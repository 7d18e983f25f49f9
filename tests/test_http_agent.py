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
        self.peers: list[tuple[str, int]] = []  # the client's address per request (a reused connection: the same)
        recorder = self

        class Handler(self.ref.Handler):
            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                recorder.requests.append((self.path, json.loads(raw)))
                recorder.peers.append(self.client_address)
                # The body again for the agent; then the connection's own stream, for keep-alive.
                conn, self.rfile = self.rfile, __import__("io").BytesIO(raw)
                self.headers.replace_header("Content-Length", str(len(raw)))
                try:
                    super().do_POST()
                finally:
                    self.rfile = conn

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
    assert paths == ["/reset", "/ingest_batch", "/respond"]  # the 4 sessions in one request
    case = agent.requests[0][1]["case_id"]
    assert case.startswith("chateval-") and all(body["case_id"] == case for _, body in agent.requests)
    batch = agent.requests[1][1]
    assert set(batch) == {"case_id", "sessions"}
    assert [x["session_id"] for x in batch["sessions"]] == [s.id for s in sorted(q.sessions, key=lambda s: s.date)]
    ingest = batch["sessions"][0]
    assert set(ingest) == {"session_id", "date", "turns"} and ingest["date"].startswith("2023-03-02")
    assert set(ingest["turns"][0]) == {"turn_id", "role", "content"}
    ask = agent.requests[-1][1]
    assert ask["question"] == q.question and ask["dialogue"] is None and ask["date"].startswith("2023-05-10")
    assert "Fernbrook" in resp.answer and resp.context
    assert resp.recalled[0].session_id == "answer_s_work" and resp.recalled[0].turn_ids == ["answer_s_work_1"]
    assert system.item_count() == sum(len(s.turns) for s in q.sessions)
    # One client, kept alive: every request of the case came on one connection.
    assert len(set(agent.peers)) == 1
    await system.aclose()


async def test_one_session_form_without_batching(agent):
    q = next(q for q in load_longmemeval(LME) if q.question_id == "t_job")
    system = make(agent.url, ingest_batch=1)
    await system.ingest_all(q.sessions)
    await system.ingest(q.sessions[0].model_copy(update={"id": "later", "date": q.question_date}))
    paths = [p for p, _ in agent.requests]
    assert paths == ["/reset"] + ["/ingest"] * 5
    ingest = agent.requests[1][1]
    assert set(ingest) == {"case_id", "session_id", "date", "turns"} and ingest["date"].startswith("2023-03-02")
    assert set(ingest["turns"][0]) == {"turn_id", "role", "content"}
    assert agent.requests[-1][1]["session_id"] == "later"


async def test_batches_are_cut_at_ingest_batch_sessions(agent):
    q = next(q for q in load_longmemeval(LME) if q.question_id == "t_job")
    system = make(agent.url, ingest_batch=3)
    await system.ingest_all(q.sessions)
    sent = [(p, len(b["sessions"]) if p == "/ingest_batch" else b["session_id"]) for p, b in agent.requests[1:]]
    last = sorted(q.sessions, key=lambda s: s.date)[-1].id
    assert sent == [("/ingest_batch", 3), ("/ingest", last)]  # a lone last session: the one-session form
    resp = await system.respond(q.question, q.question_date)
    assert "Fernbrook" in resp.answer
    await system.aclose()


async def test_an_agent_without_the_batch_form_gets_one_session_a_request_remembered():
    rec = Recorder()
    base = rec.server.RequestHandlerClass

    class OldAgent(base):  # protocol v1 as it was: no /ingest_batch
        def do_POST(self):  # noqa: N802
            if self.path == "/ingest_batch":
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                rec.requests.append((self.path, {}))
                return self._send(404, {"error": "no endpoint /ingest_batch"})
            return super().do_POST()

    rec.server.RequestHandlerClass = OldAgent
    try:
        qs = load_longmemeval(LME)[:2]
        first, second = make(rec.url), make(rec.url)
        await first.ingest_all(qs[0].sessions)
        await second.ingest_all(qs[1].sessions)
        paths = [p for p, _ in rec.requests]
        n0, n1 = len(qs[0].sessions), len(qs[1].sessions)
        # One probe (404, not retried); the rest, and the next case, per session.
        assert paths == ["/reset", "/ingest_batch"] + ["/ingest"] * n0 + ["/reset"] + ["/ingest"] * n1
        for system, q, word in ((first, qs[0], "Fernbrook"), (second, qs[1], "Miso")):
            assert word in (await system.respond(q.question, q.question_date)).answer
            assert system.item_count() == sum(len(s.turns) for s in q.sessions)
            await system.aclose()
    finally:
        rec.server.shutdown()


async def test_the_client_is_reused_across_cases_and_closed(agent):
    system = make(agent.url)
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    await system.respond("Hi?", now)
    client = system._client
    system.reset()
    await system.respond("Hi again?", now)
    assert system._client is client and len(set(agent.peers)) == 1
    assert agent.requests[0][1]["case_id"] != agent.requests[2][1]["case_id"]
    system.close()  # from synchronous code inside the loop: closed by a task
    await asyncio.sleep(0.05)
    assert client.is_closed and system._client is None
    await system.respond("And a new client?", now)  # a closed system reconnects on use
    assert not system._client.is_closed
    await system.aclose()


def test_a_system_used_from_two_event_loops_gets_a_client_in_each(agent):
    system = make(agent.url)
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    asyncio.run(system.respond("one", now))
    first = system._client
    asyncio.run(system.respond("two", now))  # the first loop is closed: a new client
    assert system._client is not first and [p for p, _ in agent.requests].count("/respond") == 2
    asyncio.run(system.aclose())


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
    # A history arrives in /ingest_batch (its sessions as /ingest bodies) or one /ingest a session.
    ingests = [body for p, body in agent.requests if p == "/ingest"]
    ingests += [s for p, body in agent.requests if p == "/ingest_batch" for s in body["sessions"]]
    assert ingests and all(b["session_id"] not in originals for b in ingests)
    for b in ingests:
        assert all(set(t) == {"turn_id", "role", "content"} and t["turn_id"] not in originals for t in b["turns"])
    sent = json.dumps([body for _, body in agent.requests])
    assert not [i for i in originals if f'"{i}"' in sent] and "has_answer" not in sent
    rec = next(r for r in read_jsonl(out / "samples.jsonl") if r["question_id"] == "t_job")
    assert rec["retrieval"]["ranked_sessions"][0] == "answer_s_work"  # scored under the data set's id
