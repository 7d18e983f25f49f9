"""A model provider added by a plugin file (examples/extending/my_provider.py) and by an entry
point: registered in the provider registry, accepted by --plugin on its own, and what it sends
is what the fake server on 127.0.0.1 receives."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys

import pytest
from autogen_core.models import UserMessage

from chateval.models import GenParams, ModelLayer, ModelSpec, RetryPolicy
from chateval.models.providers import PROVIDERS, provider
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.util.errors import ConfigError

from .conftest import EXAMPLES, REPO

PLUGIN = EXAMPLES / "extending" / "my_provider.py"
KEY = "sk-gateway-secret-123"


def test_plugin_provider_runs_evaluate_against_the_server(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO), GATEWAY_API_KEY=KEY, GATEWAY_TEAM="qa")
    with FakeOpenAIServer() as server:
        done = subprocess.run(
            [sys.executable, "-m", "chateval.cli", "evaluate", str(EXAMPLES / "faireval_pairwise.jsonl"),
             "--plugin", str(PLUGIN), "--model", "gateway/judge-1", "--base-url", server.base_url,
             "--agents", "1", "--turns", "1", "--limit", "2", "--no-cache", "--out", str(out)],
            check=False, env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)
        bodies, headers = server.requests, server.request_headers
    assert done.returncode == 0, done.stderr
    assert len(bodies) == 2  # one judge, one turn, two samples
    assert {b["model"] for b in bodies} == {"judge-1"}
    assert all(h[":path"] == "/v1/chat/completions" for h in headers)
    assert all(h["authorization"] == f"Bearer {KEY}" and h["x-team"] == "qa" for h in headers)
    assert any("Assistant 1" in m["content"] for m in bodies[0]["messages"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "gateway/judge-1" and summary["n_ok"] == 2 and summary["usage"]["calls"] == 2
    assert not any(KEY in p.read_text() for p in out.iterdir() if p.is_file())  # key() scrubbed it


def test_a_plugin_that_only_adds_a_provider_is_accepted_and_listed_in_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "chateval.cli", "evaluate", str(EXAMPLES / "faireval_pairwise.jsonl"),
         "--plugin", str(PLUGIN), "--model", "nope/x", "--out", str(tmp_path / "o")],
        check=False, env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    # The plugin loaded (no "registered nothing"); the unknown provider's error lists the new one.
    assert done.returncode == 2 and "registered nothing" not in done.stderr
    assert "unknown provider 'nope'" in done.stderr and "gateway" in done.stderr, done.stderr


@pytest.fixture
def fresh_providers(monkeypatch):
    """The provider registry as it is, restored afterwards, with entry points to be read again."""
    monkeypatch.setattr(PROVIDERS, "_items", dict(PROVIDERS._items))
    monkeypatch.setattr(PROVIDERS, "_eps_loaded", False)
    return PROVIDERS


def test_a_provider_name_is_not_taken_twice(fresh_providers):
    with pytest.raises(ConfigError, match="provider 'openai' is already registered"):
        provider("openai")(lambda *a: None)
    with pytest.raises(ConfigError, match="provider name"):
        provider("bad/name")


def entry_point_module(tmp_path, monkeypatch, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


EP_SOURCE = '''
from chateval.models.openai_backend import OpenAIBackend
from chateval.models.providers import info, openai_sdk


def build(spec, url, params, retry, structured):  # no decorator: the entry point registers it
    return OpenAIBackend(openai_sdk("ep-key", url, retry), spec.model, info(structured, True))
'''


async def test_a_provider_from_an_entry_point(fresh_providers, tmp_path, monkeypatch):
    entry_point_module(tmp_path, monkeypatch, "ep_provider_pack", EP_SOURCE)
    eps = [md.EntryPoint("epgate", "ep_provider_pack:build", "chateval.providers")]
    monkeypatch.setattr(md, "entry_points", lambda group=None, **kw: eps if group == "chateval.providers" else [])
    assert "epgate" in fresh_providers.names()
    with FakeOpenAIServer() as server:
        server.script(["hello from the gateway"])
        layer = ModelLayer(ModelSpec.parse("epgate/m-7", server.base_url), cache=None,
                           params=GenParams(temperature=0.0, max_tokens=5), retry=RetryPolicy(base_delay_s=0.01))
        comp = await layer.complete([UserMessage(content="Say hi.", source="user")])
        await layer.close()
        (body,), (headers,) = server.requests, server.request_headers
    assert comp.text == "hello from the gateway"
    assert body["model"] == "m-7" and body["messages"][0]["content"] == "Say hi."
    assert body["max_tokens"] == 5 and headers["authorization"] == "Bearer ep-key"


def test_a_broken_provider_entry_point_is_one_clear_error(fresh_providers, tmp_path, monkeypatch):
    entry_point_module(tmp_path, monkeypatch, "ep_provider_broken", "NOT_A_BUILDER = 3\n")
    eps = [md.EntryPoint("epbad", "ep_provider_broken:NOT_A_BUILDER", "chateval.providers")]
    monkeypatch.setattr(md, "entry_points", lambda group=None, **kw: eps if group == "chateval.providers" else [])
    with pytest.raises(ConfigError, match="provider entry point must name a builder function"):
        ModelSpec.parse("epbad/m", "http://127.0.0.1:1/v1")
