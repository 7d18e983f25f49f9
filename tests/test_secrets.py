"""Secrets: an API key never reaches anything chateval writes or prints.

A canary key is set as OPENAI_API_KEY and CHATEVAL_API_KEY and embedded as user:password in
--base-url. Runs go through every outcome (success with the cache on, 500 forever, 401 whose
body echoes the key, timeouts, garbage bodies quoting the key, a failing memory benchmark),
and then every byte under the test's folders (run directories, completion and embedding
caches), stdout, stderr, the log records and the exception texts are searched for the canary.
The endpoint must still have received the key as the Bearer token, or the search would prove
nothing.

Further down, canaries that reach chateval only through one setting: an HTTP agent whose URL
carries user:password and a token query parameter and whose key sits in a variable of its own
(the agent echoes them in answers and errors), invalid --base-url / --qdrant-url values with a
password, and base URLs with a query string (what the fake servers received: the query as query
parameters of each request).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from typing import Iterator

import pytest
from autogen_core.models import UserMessage

from chateval import Evaluator
from chateval.cli import main
from chateval.util.errors import ModelCallError
from chateval.models import ModelLayer, ModelSpec, RetryPolicy
from chateval.testing.fake_openai import FakeOpenAIServer, Fault

from .conftest import FIXTURES, read_jsonl, write_jsonl

CANARY = "sk-canary-7f3a9b"
MODEL = "openai-compatible/m"
FAST = ["--max-retries", "1", "--retry-base-delay", "0.01", "--timeout", "10"]


@pytest.fixture(autouse=True)
def canary_env(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("CHATEVAL_API_KEY", CANARY)
    caplog.set_level(logging.INFO)  # httpx logs each request's URL at INFO


def with_credentials(base_url: str) -> str:
    """The fake server's own loopback URL, with user:canary credentials in its netloc."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(netloc=f"user:{CANARY}@{parts.netloc}"))


def pairs(path: Path, n: int = 3) -> Path:
    return write_jsonl(path, [{"id": f"p{i}", "question": f"Question {i}?", "answer_1": "Yes.", "answer_2": "No."}
                              for i in range(n)])


class AuthFailServer:
    """An endpoint that answers 401 and, like some real ones, quotes the key it was given."""

    def __init__(self) -> None:
        self.authorization: list[str | None] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization")
                owner.authorization.append(auth)
                key = (auth or "").removeprefix("Bearer ")
                body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}.",
                                             "type": "invalid_request_error", "param": None,
                                             "code": "invalid_api_key"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def auth_fail() -> Iterator[AuthFailServer]:
    s = AuthFailServer()
    try:
        yield s
    finally:
        s.close()


def files_under(*roots: Path) -> list[Path]:
    return [p for r in roots if r.exists() for p in r.rglob("*") if p.is_file()]


def assert_no_canary(tmp_path: Path, texts: list[str], caplog) -> None:
    roots = [tmp_path, Path(os.environ["CHATEVAL_CACHE_DIR"])]  # run dirs, inputs, both caches
    files = files_under(*roots)
    leaked = [str(p) for p in files if CANARY.encode() in p.read_bytes()]
    assert not leaked, leaked
    for text in texts + [caplog.text]:
        assert CANARY not in text


def assert_bearer(headers: list[dict[str, str]] | list[str | None]) -> None:
    got = [h.get("authorization") if isinstance(h, dict) else h for h in headers]
    assert got and all(h == f"Bearer {CANARY}" for h in got), got[:3]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- chateval evaluate ------------------------------------------------------------------------

def test_successful_run_with_cache(tmp_path, capsys, caplog):
    data = pairs(tmp_path / "in.jsonl")
    with FakeOpenAIServer() as server:
        args = ["evaluate", str(data), "--model", MODEL, "--base-url", with_credentials(server.base_url),
                "--cache-dir", str(tmp_path / "cache"), *FAST]
        first = run_cli(capsys, *args, "--out", str(tmp_path / "a"))
        second = run_cli(capsys, *args, "--out", str(tmp_path / "b"))  # all from the cache
        headers = server.request_headers
    assert first[0] == 0 and second[0] == 0
    assert_bearer(headers)
    assert len(headers) == 3 * 4  # the second run made no requests
    assert any((tmp_path / "cache").iterdir())
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["config"]["base_url"].startswith("http://***@127.0.0.1:")
    assert_no_canary(tmp_path, [*first[1:], *second[1:]], caplog)


@pytest.mark.slow
@pytest.mark.parametrize("fault", [
    Fault("500"), Fault("timeout", delay=1.0), Fault("reset"),
    Fault("garbage", body=f"invalid key {CANARY}"),
    Fault("garbage", content_type="text/html", body=f"<p>Invalid API key {CANARY}</p>"),
], ids=["500-forever", "timeout", "reset", "garbage-json", "garbage-html"])
def test_failing_endpoint(tmp_path, capsys, caplog, fault):
    data = pairs(tmp_path / "in.jsonl", n=2)
    with FakeOpenAIServer(faults={fault: 1.0}) as server:
        code, out, err = run_cli(capsys, "evaluate", str(data), "--out", str(tmp_path / "run"), "--model", MODEL,
                                 "--base-url", with_credentials(server.base_url), "--cache-dir",
                                 str(tmp_path / "cache"), *FAST, "--timeout", "0.5")
        headers = server.request_headers
    assert code == 1
    assert_bearer(headers)
    rows = read_jsonl(tmp_path / "run" / "samples.jsonl")
    assert rows and all(r["status"] == "failed" and r["error"] for r in rows)
    assert_no_canary(tmp_path, [out, err], caplog)


def test_bad_auth_401_quoting_the_key(tmp_path, capsys, caplog, auth_fail):
    data = pairs(tmp_path / "in.jsonl", n=2)
    code, out, err = run_cli(capsys, "evaluate", str(data), "--out", str(tmp_path / "run"), "--model", MODEL,
                             "--base-url", with_credentials(auth_fail.base_url), "--cache-dir",
                             str(tmp_path / "cache"), *FAST)
    assert code == 1
    assert_bearer(auth_fail.authorization)
    assert len(auth_fail.authorization) == 2  # 401 is not retried: one call per sample
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n_failed"] == 2
    assert "HTTP 401" in (tmp_path / "run" / "samples.jsonl").read_text()
    assert_no_canary(tmp_path, [out, err], caplog)


async def test_api_results_and_exceptions(tmp_path, caplog, auth_fail):
    texts: list[str] = []
    ev = Evaluator(model=MODEL, base_url=with_credentials(auth_fail.base_url), cache=False, turns=1, agents=1,
                   max_retries=0)
    try:
        result = await ev.compare("Q?", "a", "b")
    finally:
        await ev.aclose()
    assert result.status == "failed" and "HTTP 401" in result.error
    texts += [result.error, result.model_dump_json(), json.dumps(ev.run_config())]
    layer = ModelLayer(ModelSpec.parse(MODEL, base_url=with_credentials(auth_fail.base_url)),
                       retry=RetryPolicy(max_retries=0, timeout_s=5),
                       secrets=[os.environ["CHATEVAL_API_KEY"]])
    try:
        with pytest.raises(ModelCallError) as info:
            await layer.complete([UserMessage(content="hi", source="user")])
    finally:
        await layer.close()
    texts += [str(info.value), repr(info.value), "".join(traceback.format_exception(info.value))]
    assert_bearer(auth_fail.authorization)
    assert len(auth_fail.authorization) == 2
    assert_no_canary(tmp_path, texts, caplog)


@pytest.mark.slow
def test_failing_run_in_a_real_process(tmp_path, auth_fail):
    data = pairs(tmp_path / "in.jsonl", n=2)
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "chateval.cli", "evaluate", str(data), "--out", str(tmp_path / "run"),
                           "--model", MODEL, "--base-url", with_credentials(auth_fail.base_url), "--no-cache", *FAST],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert_bearer(auth_fail.authorization)
    assert CANARY not in proc.stdout and CANARY not in proc.stderr and "Traceback" not in proc.stderr
    assert not [p for p in files_under(tmp_path) if CANARY.encode() in p.read_bytes()]


# --- a memory benchmark ----------------------------------------------------------------------

def lme_file(path: Path) -> Path:
    path.write_text(json.dumps([{
        "question_id": "q1", "question_type": "single-session-user", "question": "Where do I live?",
        "answer": "Berlin", "question_date": "2023/06/30 (Fri) 10:00",
        "haystack_session_ids": ["answer_1"], "haystack_dates": ["2023/06/01 (Thu) 09:00"],
        "haystack_sessions": [[{"role": "user", "content": "I moved to Berlin.", "has_answer": True},
                               {"role": "assistant", "content": "Welcome!"}]],
        "answer_session_ids": ["answer_1"],
    }]))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("endpoint", ["401", "500-forever"])
def test_failing_memory_benchmark(tmp_path, capsys, caplog, auth_fail, endpoint):
    data = lme_file(tmp_path / "lme.json")
    server = FakeOpenAIServer(faults={"500": 1.0}) if endpoint == "500-forever" else None
    try:
        base_url = server.base_url if server else auth_fail.base_url
        code, out, err = run_cli(capsys, "bench", "longmemeval", "--data", str(data), "--out", str(tmp_path / "lme"),
                                 "--systems", "full_context,retrieval", "--answer-model", MODEL, "--base-url",
                                 with_credentials(base_url), "--embedder", "hash", "--judge", "both",
                                 "--cache-dir", str(tmp_path / "cache"), *FAST)
        headers = server.request_headers if server else auth_fail.authorization
    finally:
        if server:
            server.close()
    assert code == 1
    assert_bearer(headers)
    rows = read_jsonl(tmp_path / "lme" / "samples.jsonl")
    assert len(rows) == 2 and all(r["status"] == "failed" for r in rows)
    assert (tmp_path / "lme" / "report.md").exists()
    assert_no_canary(tmp_path, [out, err], caplog)


# --- the HTTP agent: credentials in its URL, a key in its environment, an agent that echoes both ---
class EchoAgent:
    """An HTTP agent (protocol v1) that quotes what authenticated it, as a careless agent might:
    answers and contexts repeat the Authorization header (decoded when it is Basic auth), and the
    question about the car fails for good with an error body that quotes it too."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []  # (path with query, Authorization)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                auth = self.headers.get("Authorization")
                owner.requests.append((self.path, auth))
                said = auth or ""
                if said.startswith("Basic "):
                    said += " = " + base64.b64decode(said.removeprefix("Basic ")).decode()
                status, reply = 200, {}
                if urlsplit(self.path).path == "/respond":
                    if "car" in body["question"].lower():
                        status, reply = 500, {"error": f"upstream refused credentials {said}"}
                    else:
                        reply = {"answer": f"I was called with {said}", "context": f"auth: {said}"}
                blob = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(blob)))
                self.end_headers()
                self.wfile.write(blob)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def echo_agent() -> Iterator[EchoAgent]:
    agent = EchoAgent()
    try:
        yield agent
    finally:
        agent.close()


def assert_absent(canaries: list[str], roots: list[Path], texts: list[str]) -> None:
    leaked = [(c, str(p)) for p in files_under(*roots) for c in canaries if c.encode() in p.read_bytes()]
    assert not leaked, leaked
    assert not [(c, t[:200]) for t in texts for c in canaries if c in t]


@pytest.mark.slow
@pytest.mark.parametrize("auth", ["key", "basic"])
def test_http_agent_credentials_and_an_agent_that_echoes_them(tmp_path, capsys, caplog, monkeypatch, echo_agent,
                                                              auth):
    # Canaries of this test only (not the model keys the fixture puts in the environment): they
    # are known to chateval only through --set http.url and http.api_key_env.
    password, token, key = f"pw-canary-{auth}-51c7", f"tok-canary-{auth}-0d2e", f"agent-canary-{auth}-8b4f"
    monkeypatch.setenv("MY_AGENT_KEY", key)
    url = f"http://agent-user:{password}@127.0.0.1:{echo_agent.port}/?tenant=t1&token={token}"
    sets = ["--set", f"http.url={url}", "--set", "http.max_retries=1", "--set", "http.retry_base_delay_s=0.01"]
    if auth == "key":
        sets += ["--set", "http.api_key_env=MY_AGENT_KEY"]
    run = tmp_path / "run"
    code, out, err = run_cli(capsys, "bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"),
                             "--systems", "http", *sets, "--out", str(run), "--embedder", "hash", "--no-cache")
    view = run_cli(capsys, "view", str(run))
    # The agent got its credentials (else the search below would prove nothing) and the query
    # string as query parameters of every endpoint.
    sent = {a for _, a in echo_agent.requests}
    expected = (f"Bearer {key}" if auth == "key"
                else "Basic " + base64.b64encode(f"agent-user:{password}".encode()).decode())
    assert sent == {expected}
    # (a history arrives in one /ingest_batch: the protocol's batch form)
    assert {p for p, _ in echo_agent.requests} == {f"/{e}?tenant=t1&token={token}" for e in ("reset", "ingest_batch",
                                                                                              "respond")}
    assert code == 1 and view[0] == 0  # the car question failed; the others were answered
    rows = read_jsonl(run / "samples.jsonl")
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(rows) == 5 and len(failed) == 1 and "HTTP 500" in failed[0]["error"]
    assert "http://***@127.0.0.1:" in failed[0]["error"] and "token=***" in failed[0]["error"]
    assert all("***" in r["answer"] for r in rows if r["status"] == "ok")
    config = json.loads((run / "config.json").read_text())
    redacted = f"http://***@127.0.0.1:{echo_agent.port}/?tenant=***&token=***"
    assert config["judging"]["settings"]["http"]["url"] == redacted
    assert (run / "view.html").exists() and (run / "report.md").exists()
    basic = base64.b64encode(f"agent-user:{password}".encode()).decode()
    assert_absent([password, token, key, basic], [tmp_path],
                  [out, err, *view[1:], caplog.text])


# --- --base-url: an invalid one is quoted without its password; a query string stays a query ---
# Loopback hosts only: each URL is refused before any connection (bad scheme, bad port, an unclosed
# IPv6 bracket).
@pytest.mark.parametrize("url", ["ftp://user:{pw}@127.0.0.1/v1", "http://user:{pw}@127.0.0.1:port/v1",
                                 "http://user:{pw}@[127.0.0.1/v1?api_key={pw}"])
@pytest.mark.parametrize("command", ["evaluate", "bench"])
def test_an_invalid_base_url_is_quoted_without_credentials(tmp_path, capsys, caplog, url, command):
    password = "pw-canary-invalid-33e0"  # only ever on the command line
    data = pairs(tmp_path / "in.jsonl")
    argv = (["evaluate", str(data), "--model", MODEL] if command == "evaluate"
            else ["bench", "longmemeval", "--data", str(lme_file(tmp_path / "lme.json")), "--answer-model", MODEL])
    code, out, err = run_cli(capsys, *argv, "--out", str(tmp_path / "run"), "--base-url", url.format(pw=password))
    assert code == 2 and err.startswith("error: ") and "--base-url" in err and "Traceback" not in err
    assert "***@" in err
    assert_absent([password], [tmp_path], [out, err, caplog.text])


@pytest.mark.parametrize("suffix", ["/v1?api_key={q}&tenant=a", "/v1/?api_key={q}&tenant=a"])
def test_a_base_url_query_string_stays_a_query_string(tmp_path, capsys, caplog, suffix):
    token = "q-canary-4411"
    data = pairs(tmp_path / "in.jsonl", n=1)
    with FakeOpenAIServer() as server:
        root = server.base_url.removesuffix("/v1")
        code, out, err = run_cli(capsys, "evaluate", str(data), "--out", str(tmp_path / "run"), "--model", MODEL,
                                 "--base-url", root + suffix.format(q=token), "--agents", "1", "--turns", "1",
                                 "--no-cache", *FAST)
        paths = {h[":path"] for h in server.request_headers}
    assert code == 0, err
    assert paths == {f"/v1/chat/completions?api_key={token}&tenant=a"}
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["config"]["base_url"] == root + suffix.format(q="***").replace("tenant=a", "tenant=***")
    assert_absent([token], [tmp_path], [out, err, caplog.text])


async def test_query_strings_reach_embeddings_and_anthropic(tmp_path, monkeypatch):
    from chateval.memory.embeddings import make_embedder

    with FakeOpenAIServer(embedding_dim=8) as server:
        root = server.base_url.removesuffix("/v1")
        emb = make_embedder("openai-compatible/emb", layer=ModelLayer(ModelSpec.parse("offline")),
                            base_url=server.base_url + "/?api_key=emb-q", cache_dir=tmp_path / "emb")
        await emb.embed(["a text"])
        paths = [h[":path"] for h in server.request_headers]
        if __import__("importlib").util.find_spec("anthropic") is not None:
            monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
            layer = ModelLayer(ModelSpec.parse("anthropic/m", root + "?api_key=anth-q"),
                               retry=RetryPolicy(max_retries=0))
            try:
                await layer.complete([UserMessage(content="hi", source="user")])
            finally:
                await layer.close()
            assert server.request_headers[-1][":path"] == "/v1/messages?api_key=anth-q"
    assert paths == ["/v1/embeddings?api_key=emb-q"]


def test_ollama_refuses_what_its_client_would_drop():
    pytest.importorskip("ollama")
    from chateval.util.errors import ConfigError

    for url in ("http://127.0.0.1:11434/?api_key=pw-canary-ollama-1", "http://u:pw-canary-ollama-1@127.0.0.1:11434"):
        with pytest.raises(ConfigError, match="ollama endpoint") as info:
            ModelLayer(ModelSpec.parse("ollama/m", url))
        assert "pw-canary-ollama-1" not in str(info.value)


def test_scrub_covers_every_spelling():
    from chateval.util import secrets

    secret = 'sk-"quoted"&<odd>\u00e9-canary'
    secrets.register(secret)
    record = {"answer": f"key {secret}", secret: [f"x{secret}y"], "n": 3}
    assert secret not in json.dumps(secrets.scrub_obj(record), ensure_ascii=False)
    for spelled in (json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
                    __import__("html").escape(secret), __import__("markupsafe").escape(secret)):
        assert secrets.scrub(f"<p>{spelled}</p>") == "<p>***</p>"
    secrets.register("short")  # too short to scrub from free text without masking ordinary words
    assert secrets.scrub("a short answer") == "a short answer"


def test_an_unreachable_qdrant_url_is_quoted_without_credentials(tmp_path, capsys, caplog):
    pytest.importorskip("qdrant_client")
    password = "pw-canary-qdrant-7a19"
    code, out, err = run_cli(capsys, "bench", "longmemeval", "--data", str(lme_file(tmp_path / "lme.json")),
                             "--systems", "retrieval", "--embedder", "hash", "--out", str(tmp_path / "run"),
                             "--qdrant-url", f"http://user:{password}@127.0.0.1:9/?api_key={password}")
    assert code != 0 and "cannot reach Qdrant at http://***@127.0.0.1:9/?api_key=***" in err
    assert_absent([password], [tmp_path], [out, err, caplog.text])


def test_an_uncaught_exception_is_printed_scrubbed():
    # A crash in a real process: the interpreter prints the traceback after main() has returned.
    code = ("import sys, chateval.cli as cli; from chateval.util import secrets\n"
            "cli.COMMANDS['view'] = lambda args, console: (_ for _ in ()).throw(RuntimeError("
            "'boom ' + secrets.__name__ + ' ' + __import__('os').environ['OPENAI_API_KEY']))\n"
            "sys.exit(cli.main(['view', '.']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert proc.returncode == 1 and "RuntimeError: boom chateval.util.secrets ***" in proc.stderr
    assert CANARY not in proc.stderr + proc.stdout


# --- transforms of a key echoed by an endpoint ----------------------------------------------------
def echoed(key: str) -> dict[str, str]:
    """What a misbehaving endpoint might say back: the key upper-cased, spaced out, split over
    lines, reversed, in hex, and base64 of it alone and of the whole Authorization value."""
    return {
        "upper": key.upper(),
        "spaced": " ".join(key),
        "lines": "\n".join(key[i : i + 5] for i in range(0, len(key), 5)),
        "zero-width": "\u200b".join(key),
        "mixed": "".join(c.upper() if i % 2 else c for i, c in enumerate(key)),
        "reversed": key[::-1],
        "hex": key.encode().hex(),
        "HEX": key.encode().hex().upper(),
        "base64": base64.b64encode(key.encode()).decode(),
        "bearer-base64": base64.b64encode(f"Bearer {key}".encode()).decode(),
        "urlsafe-base64": base64.urlsafe_b64encode(f"x{key}".encode()).decode(),
    }


def squeezed(text: str) -> str:
    """Lower-cased, with whitespace and JSON's escapes of it taken out: a transform spread over a
    file is found as one string."""
    for esc in ("\\n", "\\r", "\\t", "\u200b", "\\u200b"):
        text = text.replace(esc, "")
    return "".join(text.lower().split())


def leaked_transforms(key: str, text: str) -> list[str]:
    flat = squeezed(text)
    found = [n for n, v in echoed(key).items() if squeezed(v) in flat]
    if "base64" not in found:  # of a longer string: the characters the key alone decides
        found += [
            f"b64@{k}" for k in range(3) if base64.b64encode(b"\0" * k + key.encode()).decode()[4:-4].lower() in flat
        ]
    return found


def test_scrub_masks_the_transforms_of_a_registered_secret():
    from chateval.util import secrets

    key = "sk-variant-canary-93c1e0"
    secrets.register(key)
    for name, form in echoed(key).items():
        for text in (f"the key was {form} (sorry)", json.dumps({"a": f"key: {form}"})):
            out = secrets.scrub(text)
            assert "***" in out and not leaked_transforms(key, out), (name, out)
    for name, form in echoed(key).items():  # in text that is not ASCII (the slower path)
        out = secrets.scrub(f"la clé « {form} » ✓")
        assert "***" in out and not leaked_transforms(key, out), (name, out)
    record = {"answer": f"hex {key.encode().hex()}", "turns": [{"text": f"REV {key[::-1]}"}]}
    assert not leaked_transforms(key, json.dumps(secrets.scrub_obj(record)))
    # Ordinary text is left alone, and so is a short secret's transform (it could be a word).
    prose = "Sky variants, canaries and 93 c1 e0 hex digits; nothing to mask here."
    assert secrets.scrub(prose) == prose
    secrets.register("short-pw")
    assert secrets.scrub("SHORT-PW and wp-trohs") == "SHORT-PW and wp-trohs"


def test_key_transforms_echoed_by_the_endpoint_are_written_nowhere(tmp_path, capsys, caplog):
    data = pairs(tmp_path / "in.jsonl", n=2)
    said = " | ".join(f"{n}: {v}" for n, v in echoed(CANARY).items())

    def responder(request: dict) -> str:
        return f"I was called with {said}. Verdict: [[A]]"

    with FakeOpenAIServer(responder=responder) as server:
        code, out, err = run_cli(
            capsys,
            "evaluate",
            str(data),
            "--out",
            str(tmp_path / "run"),
            "--model",
            MODEL,
            "--base-url",
            server.base_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            *FAST,
        )
        headers = server.request_headers
    assert_bearer(headers)  # the endpoint got the key: what it echoed is a transform of it
    run = tmp_path / "run"
    assert (run / "samples.jsonl").exists() and "***" in (run / "samples.jsonl").read_text()
    view = run_cli(capsys, "view", str(run))
    assert view[0] == 0
    leaks = {
        str(p): leaked_transforms(CANARY, p.read_bytes().decode("utf-8", "replace")) for p in files_under(tmp_path)
    }
    assert not {p: f for p, f in leaks.items() if f and not p.endswith("in.jsonl")}
    for text in (out, err, *view[1:], caplog.text):
        assert not leaked_transforms(CANARY, text)
