"""A panel of different endpoints (issue 37): each debater its own model, server, key, price and
limit. Two fake servers with opposite biases form one panel; each must receive exactly its own
debater's calls, with its own key, and the run meters each endpoint apart."""

from __future__ import annotations

import json

import pytest

from chateval.cli import main
from chateval.debate import Persona
from chateval.evaluation.config import EvalConfig, load_preset
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.util.errors import ConfigError

from .conftest import REPO, read_jsonl

PAIRWISE = REPO / "examples" / "faireval_pairwise.jsonl"
KEY_A = "sk-panel-endpoint-a-0123456789"
KEY_B = "sk-panel-endpoint-b-9876543210"
FIRST = "Assistant 1 is better.\nScore of Assistant 1: 9\nScore of Assistant 2: 2"
SECOND = "Assistant 2 is better.\nScore of Assistant 1: 2\nScore of Assistant 2: 9"


def speaker(request: dict) -> str:
    """Which debater sent a request: the system message names it ("You are Critic ...")."""
    system = next(m["content"] for m in request["messages"] if m["role"] == "system")
    return "critic" if "demanding critic" in system else "general_public"


def all_text(folder) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def servers(monkeypatch):
    monkeypatch.setenv("CHATEVAL_API_KEY", KEY_A)
    monkeypatch.setenv("PANEL_B_KEY", KEY_B)
    with FakeOpenAIServer(lambda body: FIRST) as a, FakeOpenAIServer(lambda body: SECOND) as b:
        yield a, b


def test_each_server_receives_its_debaters_calls(tmp_path, servers):
    a, b = servers
    out = tmp_path / "run"
    code = main(
        [
            "evaluate",
            str(PAIRWISE),
            "--limit",
            "3",
            "--model",
            "openai-compatible/judge-a",
            "--base-url",
            a.base_url,
            "--personas",
            "general_public,critic",
            "--turns",
            "2",
            "--out",
            str(out),
            "--no-cache",
            "--debater-model",
            "critic=openai-compatible/judge-b",
            "--debater-model",
            f"critic.base_url={b.base_url}",
            "--debater-model",
            "critic.api_key_env=PANEL_B_KEY",
            "--debater-model",
            "critic.price=1,2",
            "--debater-model",
            "critic.max_connections=2",
        ]
    )
    assert code == 0
    # who received what: every call on a server is its own debater's, for its own model, with its own key
    assert a.requests and b.requests
    assert {speaker(r) for r in a.requests} == {"general_public"}
    assert {speaker(r) for r in b.requests} == {"critic"}
    assert {r["model"] for r in a.requests} == {"judge-a"} and {r["model"] for r in b.requests} == {"judge-b"}
    assert {h["authorization"] for h in a.request_headers} == {f"Bearer {KEY_A}"}
    assert {h["authorization"] for h in b.request_headers} == {f"Bearer {KEY_B}"}
    # each debater judged with its server's bias
    for rec in read_jsonl(out / "samples.jsonl"):
        winners = {v["agent"].lower(): v["winner"] for v in rec["agents"]}
        assert winners == {"general_public": "1", "critic": "2"}, winners
    # metered per endpoint: the counts are what each server answered; the priced one has a cost
    summary = json.loads((out / "summary.json").read_text())
    by = summary["usage_by_endpoint"]
    port_b = f"openai-compatible/judge-b@127.0.0.1:{b.port}/v1"
    assert set(by) == {"openai-compatible/judge-a", port_b}
    assert by["openai-compatible/judge-a"]["calls"] == len(a.requests)
    assert by[port_b]["calls"] == len(b.requests)
    assert by[port_b]["cost_usd"] > 0 and by["openai-compatible/judge-a"]["cost_usd"] is None
    assert port_b in (out / "report.md").read_text()
    # the keys are secrets: never written; the key's variable name is recorded
    text = all_text(out)
    assert KEY_A not in text and KEY_B not in text
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["debater_models"]["critic"]["api_key_env"] == "PANEL_B_KEY"


def test_cache_and_dry_run_are_per_endpoint(tmp_path, servers, capsys):
    a, b = servers
    common = [
        "--limit",
        "2",
        "--model",
        "openai-compatible/judge",
        "--base-url",
        a.base_url,
        "--personas",
        "general_public,critic",
        "--turns",
        "1",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--debater-model",
        f"critic.base_url={b.base_url}",
    ]
    assert main(["evaluate", str(PAIRWISE), *common, "--out", str(tmp_path / "r1")]) == 0
    na, nb = len(a.requests), len(b.requests)
    assert na == nb == 2  # same model name, two servers: one call each per item
    # the second run is answered from the cache, each endpoint's reply kept apart
    assert main(["evaluate", str(PAIRWISE), *common, "--out", str(tmp_path / "r2")]) == 0
    assert (len(a.requests), len(b.requests)) == (na, nb)
    for rec in read_jsonl(tmp_path / "r2" / "samples.jsonl"):
        assert {v["agent"].lower(): v["winner"] for v in rec["agents"]} == {"general_public": "1", "critic": "2"}
    capsys.readouterr()
    assert main(["evaluate", str(PAIRWISE), *common, "--out", str(tmp_path / "r3"), "--dry-run", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert {m["model"]: m["calls"] for m in est["models"]} == {
        "openai-compatible/judge": 2,
        f"openai-compatible/judge@127.0.0.1:{b.port}/v1": 2,
    }
    assert (len(a.requests), len(b.requests)) == (na, nb)  # a dry run sends nothing


def test_persona_file_and_preset_give_an_endpoint(tmp_path, servers):
    a, b = servers
    personas = tmp_path / "personas"
    personas.mkdir()
    (personas / "skeptic.yaml").write_text(
        f"name: Skeptic\nrole: You doubt every claim.\nmodel: openai-compatible/judge-b\n"
        f"base_url: {b.base_url}\napi_key_env: PANEL_B_KEY\nprice: [0.5, 1.5]\nmax_connections: 1\n"
    )
    code = main(
        [
            "evaluate",
            str(PAIRWISE),
            "--limit",
            "1",
            "--model",
            "openai-compatible/judge-a",
            "--base-url",
            a.base_url,
            "--persona-dir",
            str(personas),
            "--personas",
            "general_public,skeptic",
            "--turns",
            "1",
            "--out",
            str(tmp_path / "r"),
            "--no-cache",
        ]
    )
    assert code == 0
    assert len(a.requests) == 1 and len(b.requests) == 1
    assert "You doubt every claim" in b.requests[0]["messages"][0]["content"]
    assert b.request_headers[0]["authorization"] == f"Bearer {KEY_B}"
    preset = tmp_path / "mixed.yaml"
    preset.write_text(f"debater_models:\n  critic:\n    model: openai-compatible/j\n    base_url: {b.base_url}\n")
    cfg = EvalConfig.merged(load_preset(preset))
    assert cfg.debater_models["critic"].base_url == b.base_url


def test_bad_endpoint_fields_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown field 'colour'"):
        EvalConfig.merged({"debater_models": ["critic.colour=red"]})
    with pytest.raises(ConfigError, match="api_key_env"):
        EvalConfig.merged({"debater_models": ["critic.api_key_env=not a name"]})
    with pytest.raises(ConfigError, match="price"):
        EvalConfig.merged({"debater_models": ["critic.price=1"]})
    with pytest.raises(ValueError):
        Persona(name="x", role="y", base_url="ftp://nowhere")


def test_a_missing_key_variable_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    code = main(
        [
            "evaluate",
            str(PAIRWISE),
            "--limit",
            "1",
            "--model",
            "offline",
            "--personas",
            "general_public,critic",
            "--debater-model",
            "critic=openai-compatible/x",
            "--debater-model",
            "critic.base_url=http://127.0.0.1:9/v1",
            "--debater-model",
            "critic.api_key_env=NO_SUCH_KEY_VAR",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert code == 2
    assert "NO_SUCH_KEY_VAR" in capsys.readouterr().err


def test_calibrate_grid_holds_a_mixed_panel(tmp_path, servers):
    from chateval.calibration import calibrate, parse_setting

    a, b = servers
    s = parse_setting(
        f"mixed=one_by_one_3x2,agents=2,turns=1,debater_models=critic=openai-compatible/judge-b,"
        f"critic.base_url={b.base_url},critic.api_key_env=PANEL_B_KEY"
    )
    assert s.overrides["debater_models"][0] == "critic=openai-compatible/judge-b" and s.overrides["agents"] == 2
    plain = parse_setting("plain=one_by_one_3x2,agents=2,turns=1")
    pairs = REPO / "tests" / "fixtures" / "calibrate_pairwise.jsonl"
    summary = calibrate(
        pairs,
        tmp_path / "cal",
        model="openai-compatible/judge-a",
        base_url=a.base_url,
        settings=[plain, s],
        cache=False,
    )
    n = len(read_jsonl(pairs))
    assert len(b.requests) == n and {speaker(r) for r in b.requests} == {"critic"}
    assert len(a.requests) == 4 * n  # the single baseline 1, plain 2 debaters, mixed its other debater only
    assert summary.settings["mixed"].panel.model == (
        f"openai-compatible/judge-a + openai-compatible/judge-b@127.0.0.1:{b.port}/v1"
    )
    assert summary.settings["plain"].panel.model == "openai-compatible/judge-a"


def test_escalation_and_samples_keep_the_per_endpoint_count(tmp_path, servers):
    a, b = servers
    out = tmp_path / "run"
    code = main(
        [
            "evaluate",
            str(PAIRWISE),
            "--limit",
            "2",
            "--model",
            "openai-compatible/judge-a",
            "--base-url",
            a.base_url,
            "--personas",
            "general_public,critic",
            "--turns",
            "1",
            "--escalate",
            "--samples",
            "2",
            "--temperature",
            "0.5",
            "--out",
            str(out),
            "--no-cache",
            "--debater-model",
            f"critic.base_url={b.base_url}",
        ]
    )
    assert code == 0
    for rec in read_jsonl(out / "samples.jsonl"):
        by = rec["usage_by_endpoint"]
        assert sum(u["calls"] for u in by.values()) == rec["usage"]["calls"] == rec["calls"]
    summary = json.loads((out / "summary.json").read_text())
    by = summary["usage_by_endpoint"]
    port_b = f"openai-compatible/judge-a@127.0.0.1:{b.port}/v1"
    assert by["openai-compatible/judge-a"]["calls"] == len(a.requests)  # the screen and general_public
    assert by[port_b]["calls"] == len(b.requests)
    assert {speaker(r) for r in b.requests} == {"critic"}
