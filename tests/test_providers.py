"""Every provider through the one model layer, against the fake server speaking its wire protocol
on 127.0.0.1: what the server received (path, auth, model, messages, limits, schema), metering,
retries, the cache, and one-line errors for a missing key or a missing extra."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timezone

import pytest
from autogen_core.models import SystemMessage, UserMessage

from chateval.cli import main
from chateval.util.errors import ConfigError, ModelCallError
from chateval.memory.extract import SUMMARIZE_SESSION, SessionInputs
from chateval.memory.types import Turn
from chateval.models import CompletionCache, GenParams, ModelLayer, ModelSpec, RetryPolicy
from chateval.models.providers import GEMINI_URL, OLLAMA_URL
from chateval.testing.fake_openai import DEFAULT_REPLY, FakeOpenAIServer, Fault
from chateval.testing.schema_reply import schema_responder

from .conftest import REPO, read_jsonl

pytest.importorskip("anthropic", reason="the providers extra (pip install -e '.[providers]') is not installed")
pytest.importorskip("ollama", reason="the providers extra (pip install -e '.[providers]') is not installed")

MESSAGES = [SystemMessage(content="You are terse."), UserMessage(content="Say hi.", source="user")]


@dataclass
class Case:
    provider: str
    key_env: str | None
    path: str  # the path the server must see (query included where the protocol has one)
    auth: tuple[str, str] | None  # the header carrying the key, and its value

    def url(self, server: FakeOpenAIServer) -> str:
        root = server.base_url.removesuffix("/v1")
        return server.base_url if self.provider == "gemini" else root


KEY = "sk-provider-canary"
CASES = [
    Case("anthropic", "ANTHROPIC_API_KEY", "/v1/messages", ("x-api-key", KEY)),
    Case("azure", "AZURE_OPENAI_API_KEY", "/openai/deployments/my-deploy/chat/completions?api-version=2024-10-21",
         ("api-key", KEY)),
    Case("ollama", None, "/api/chat", None),
    Case("gemini", "GEMINI_API_KEY", "/v1/chat/completions", ("authorization", f"Bearer {KEY}")),
]
IDS = [c.provider for c in CASES]


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def layer(case: Case, server: FakeOpenAIServer, monkeypatch, **kw) -> ModelLayer:
    for env in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_VERSION", "OLLAMA_HOST",
                "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(env, raising=False)
    if case.key_env:
        monkeypatch.setenv(case.key_env, KEY)
    model = "my-deploy" if case.provider == "azure" else "test-model"
    return ModelLayer(ModelSpec.parse(f"{case.provider}/{model}", case.url(server)), secrets=[KEY],
                      params=GenParams(temperature=0.3, max_tokens=77), retry=RetryPolicy(base_delay_s=0.01), **kw)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_what_the_server_receives_and_what_is_metered(case, server, monkeypatch):
    lay = layer(case, server, monkeypatch)
    comp = await lay.complete(MESSAGES)
    await lay.close()
    (body,), (headers,) = server.requests, server.request_headers
    assert headers[":path"] == case.path
    if case.auth:
        assert headers[case.auth[0]] == case.auth[1]
    assert comp.text.startswith("Both responses")
    if case.provider == "anthropic":  # the system prompt apart, max_tokens required
        assert body["system"] == "You are terse." and body["messages"] == [{"role": "user", "content": "Say hi."}]
        assert body["max_tokens"] == 77 and body["temperature"] == 0.3 and body["model"] == "test-model"
    elif case.provider == "ollama":  # generation settings under options
        assert body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert body["options"]["num_predict"] == 77 and body["options"]["temperature"] == 0.3
        assert body["stream"] is False and body["model"] == "test-model"
    else:
        assert body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert body["max_tokens"] == 77 and body["temperature"] == 0.3
    # Usage as the server reported it, in the protocol's own fields.
    served = server.completions[0]
    reported = {"anthropic": ("input_tokens", "output_tokens"), "ollama": ("prompt_eval_count", "eval_count")}
    p_key, c_key = reported.get(case.provider, ("prompt_tokens", "completion_tokens"))
    usage = served.get("usage", served)
    assert (lay.totals.prompt_tokens, lay.totals.completion_tokens) == (usage[p_key], usage[c_key])
    assert lay.totals.calls == 1 and lay.totals.cost_usd is None  # no price for these names: unknown


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_faults_are_retried_and_a_rejected_key_is_not(case, server, monkeypatch):
    server.script([Fault("429", retry_after=0.01), Fault("500"), "fine", Fault("401")])
    lay = layer(case, server, monkeypatch)
    assert (await lay.complete(MESSAGES)).text == "fine"
    with pytest.raises(ModelCallError) as err:
        await lay.complete(MESSAGES + [UserMessage(content="again", source="user")])
    await lay.close()
    assert str(err.value).endswith("failed after 1 attempt(s): HTTP 401 from the model endpoint")
    assert KEY not in str(err.value) and len(server.requests) == 4
    assert lay.totals.retries == 2 and lay.totals.failed_calls == 1


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_replies_are_cached(case, server, monkeypatch, tmp_path):
    lay = layer(case, server, monkeypatch, cache=CompletionCache(tmp_path / "c"))
    first = await lay.complete(MESSAGES)
    again = await lay.complete(MESSAGES)
    await lay.close()
    assert len(server.requests) == 1 and again.cached and again.text == first.text


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_typed_steps_ask_for_their_schema_where_the_protocol_has_one(case, monkeypatch):
    inputs = SessionInputs(session_id="s1", date=datetime(2024, 1, 1, tzinfo=timezone.utc),
                           turns=[Turn(id="s1_0", role="user", content="I adopted a cat named Miso.")])
    with FakeOpenAIServer(responder=schema_responder('{"summary": "described in the prompt"}')) as server:
        lay = layer(case, server, monkeypatch)
        out = await SUMMARIZE_SESSION.run(lay, inputs)
        await lay.close()
        (body,) = server.requests
    if case.provider == "anthropic":  # the Messages API has no schema parameter: the prompt describes it
        assert out.summary == "described in the prompt" and "response_format" not in body and "format" not in body
    elif case.provider == "ollama":  # Ollama takes the schema as `format`
        assert out.summary == "placeholder" and body["format"]["required"] == ["summary"]
    else:
        assert out.summary == "placeholder" and body["response_format"]["json_schema"]["name"] == "Summary"


@pytest.mark.parametrize("case", [c for c in CASES if c.key_env], ids=[c.provider for c in CASES if c.key_env])
def test_a_missing_key_is_one_line(case, monkeypatch):
    monkeypatch.delenv(case.key_env, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(ConfigError, match=f"needs the {case.key_env} environment variable"):
        ModelLayer(ModelSpec.parse(f"{case.provider}/m"))


@pytest.mark.parametrize("provider,module", [("anthropic", "anthropic"),
                                             ("ollama", "autogen_ext.models.ollama")])
def test_a_missing_extra_is_one_line(provider, module, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setitem(sys.modules, module, None)  # what an environment without the extra looks like
    with pytest.raises(ConfigError, match=r"pip install 'chateval\[providers\]'"):
        ModelLayer(ModelSpec.parse(f"{provider}/m"))


def test_endpoints_come_from_the_flag_the_environment_or_the_default(monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    assert ModelSpec.parse("gemini/gemini-2.0-flash").base_url == GEMINI_URL
    assert ModelSpec.parse("ollama/llama3.1").base_url == OLLAMA_URL
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:11435")
    assert ModelSpec.parse("ollama/llama3.1").base_url == "http://127.0.0.1:11435"
    assert ModelSpec.parse("ollama/llama3.1", "http://127.0.0.1:1").base_url == "http://127.0.0.1:1"
    with pytest.raises(ConfigError, match="needs --base-url or AZURE_OPENAI_ENDPOINT"):
        ModelSpec.parse("azure/my-deploy")


@pytest.mark.slow
def test_evaluate_end_to_end_with_anthropic(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeOpenAIServer() as server:
        rc = main(["evaluate", str(REPO / "examples" / "faireval_pairwise.jsonl"), "--model", "anthropic/claude-x",
                   "--base-url", server.base_url.removesuffix("/v1"), "--limit", "2", "--out", str(tmp_path / "o")])
        paths = {h[":path"] for h in server.request_headers}
    rows = read_jsonl(tmp_path / "o" / "samples.jsonl")
    assert rc == 0 and len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    assert paths == {"/v1/messages"}
    assert KEY not in (tmp_path / "o" / "config.json").read_text()


def test_an_echoed_provider_key_is_scrubbed_from_the_run(tmp_path, monkeypatch):
    # A key only ANTHROPIC_API_KEY holds: nothing but that variable's scrubbing can hide it.
    key = "anthropic-only-key-9876543210"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    with FakeOpenAIServer(responder=lambda body: f"{DEFAULT_REPLY}\n(echoing {key})") as server:
        rc = main(["evaluate", str(REPO / "examples" / "faireval_pairwise.jsonl"), "--model", "anthropic/claude-x",
                   "--base-url", server.base_url.removesuffix("/v1"), "--limit", "2", "--out", str(tmp_path / "o"),
                   "--no-cache", "--keep-raw-history"])
        assert all(h["x-api-key"] == key for h in server.request_headers)
    out = tmp_path / "o"
    assert rc == 0 and "echoing ***" in (out / "samples.jsonl").read_text()
    assert not [f.name for f in out.iterdir() if key in f.read_text()]
