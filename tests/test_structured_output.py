"""Structured output on every LLM step, against fake OpenAI-compatible servers of the two kinds
users run: one that answers plain prose unless a JSON schema is requested (then it returns an
object of that schema, as guided decoding does), and one that rejects ``response_format`` with
HTTP 400. Assertions are on what the servers received."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.debate.parsing import PairwiseOut
from chateval.util.errors import ModelCallError
from chateval.memory.extract import SUMMARIZE_SESSION, SessionInputs
from chateval.memory.types import Turn
from chateval.models import ModelLayer, ModelSpec, RetryPolicy
from chateval.models.steps import StepError
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.testing.schema_reply import PLAIN_REPLY, instance_of, schema_responder

from .conftest import FIXTURES, local_systems

LME = FIXTURES / "lme_tiny.json"
LOCOMO = FIXTURES / "locomo_tiny.json"
INPUTS = SessionInputs(session_id="s1", date=datetime(2024, 1, 1, tzinfo=timezone.utc),
                       turns=[Turn(id="s1_0", role="user", content="I adopted a cat named Miso.")])


def layer(server: FakeOpenAIServer, structured: str = "auto") -> ModelLayer:
    return ModelLayer(ModelSpec.parse("openai-compatible/x", server.base_url), structured=structured,  # type: ignore[arg-type]
                      retry=RetryPolicy(max_retries=0))


def schema_of(request: dict) -> dict | None:
    fmt = request.get("response_format")
    return fmt["json_schema"]["schema"] if fmt else None


# --- the layer ---------------------------------------------------------------------------------
async def test_typed_steps_ask_openai_compatible_servers_for_their_schema():
    with FakeOpenAIServer(responder=schema_responder()) as server:
        out = await SUMMARIZE_SESSION.run(layer(server), INPUTS)
        (req,) = server.requests
    assert out.summary == "placeholder"  # the server's schema-shaped reply, validated
    assert req["response_format"]["type"] == "json_schema"
    assert req["response_format"]["json_schema"]["name"] == "Summary"
    assert schema_of(req)["required"] == ["summary"]


async def test_a_server_that_rejects_schemas_is_detected_once_and_steps_continue(caplog):
    fenced = 'Here it is:\n```json\n{"summary": "Miso the cat"}\n```'
    with FakeOpenAIServer(reject_response_format=True) as server:
        server.script([fenced, fenced, "Sure! " + json.dumps({"summary": "again"}) + " Hope that helps."])
        lay = layer(server)
        judge = lay.derive(ModelSpec.parse("openai-compatible/x", server.base_url))
        with caplog.at_level(logging.WARNING, logger="chateval.models"):
            first = await SUMMARIZE_SESSION.run(lay, INPUTS)
            again = await SUMMARIZE_SESSION.run(judge, INPUTS.model_copy(update={"session_id": "s2"}))
        reqs = server.requests
    assert first.summary == "Miso the cat" and again.summary == "again"  # JSON found in prose and fences
    # One request with the schema (400), then the same call without; the derived layer never retries it.
    assert [bool(r.get("response_format")) for r in reqs] == [True, False, False]
    assert reqs[0]["messages"] == reqs[1]["messages"]
    assert '{"summary": "..."}' in reqs[1]["messages"][-1]["content"]  # the schema, described in the prompt
    assert not lay.supports_structured and not judge.supports_structured
    warnings = [r for r in caplog.records if "rejected a JSON-schema response_format" in r.getMessage()]
    assert len(warnings) == 1
    assert lay.totals.calls == 2  # the rejected request is not an answer, nor a failed attempt


async def test_structured_on_does_not_fall_back():
    with FakeOpenAIServer(reject_response_format=True) as server:
        with pytest.raises(ModelCallError) as err:
            await SUMMARIZE_SESSION.run(layer(server, "on"), INPUTS)
        assert len(server.requests) == 1  # a 400 is not retried
    assert "HTTP 400" in str(err.value) and "response_format" in str(err.value) and "--structured auto" in str(err.value)


async def test_structured_off_never_sends_a_schema_and_quotes_an_unreadable_reply():
    with FakeOpenAIServer(responder=schema_responder()) as server:
        with pytest.raises(StepError) as err:
            await SUMMARIZE_SESSION.run(layer(server, "off"), INPUTS)
        assert [r.get("response_format") for r in server.requests] == [None, None]  # the ask and one re-ask
    assert f"the model said: {PLAIN_REPLY[:200]!r}" in str(err.value)


def test_verdict_schemas_carry_the_score_range():
    schema = PairwiseOut.model_json_schema()
    assert schema["properties"]["score_assistant_1"] | {"minimum": 1, "maximum": 10} == schema["properties"]["score_assistant_1"]
    assert instance_of(schema) == {"score_assistant_1": 1, "score_assistant_2": 1}


# --- every memory benchmark and system, end to end ----------------------------------------------
def bench(name: str, data: Path, out: Path, systems: str, server: FakeOpenAIServer, *extra: str) -> int:
    return main(["bench", name, "--data", str(data), "--systems", systems, "--answer-model", "openai-compatible/x",
                 "--base-url", server.base_url, "--embedder", "hash", "--out", str(out), "--limit", "2",
                 "--max-retries", "0", "--workers", "4", *extra])


def systems() -> str:
    names = local_systems()
    try:
        import graphiti_core  # noqa: F401
    except ImportError:
        names = [n for n in names if n != "zep"]
    return ",".join(names)


RUNS = [("longmemeval", LME, ("--judge", "both")), ("locomo", LOCOMO, ()), ("head2head", LME, ()), ("teafarm", LOCOMO, ())]


@pytest.mark.slow
@pytest.mark.parametrize("name,data,extra", RUNS, ids=[r[0] for r in RUNS])
def test_every_benchmark_and_system_completes_against_a_plain_text_server(name, data, extra, tmp_path):
    with FakeOpenAIServer(responder=schema_responder()) as server:
        rc = bench(name, data, tmp_path / "o", "retrieval,full_context" if name == "head2head" else systems(),
                   server, *extra)
        reqs = server.requests
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert rc == 0 and summary["n_failed"] == 0 and summary["n_units"] > 0, summary.get("failed")
    typed = [r for r in reqs if r.get("response_format")]
    assert typed and all(schema_of(r) for r in typed)


@pytest.mark.parametrize("name,data,extra", RUNS, ids=[r[0] for r in RUNS])
def test_a_server_rejecting_schemas_fails_units_with_the_quoted_reply(name, data, extra, tmp_path):
    # LongMemEval's default single judge (the official protocol) asks for a plain reply: the JSON
    # judge is the one whose schema the server rejects here.
    extra = (*extra, "--judge-protocol", "chateval") if name == "longmemeval" else extra
    with FakeOpenAIServer(responder=schema_responder(), reject_response_format=True) as server:
        rc = bench(name, data, tmp_path / "o", "retrieval,full_context", server, *extra)
        reqs = server.requests
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    records = [json.loads(line) for line in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]
    failed = [r for r in records if r.get("status") != "ok"] + summary.get("generation", {}).get("failed", [])
    assert rc == 1 and summary["n_failed"] == len(failed) > 0
    assert all("the model said: 'Thanks for asking." in f["error"] for f in failed), [f["error"] for f in failed]
    # Detected once for the whole run: only calls already in flight (one per worker) carried a schema.
    assert 1 <= sum(1 for r in reqs if r.get("response_format")) <= 4 < len(reqs)


def test_structured_is_an_option_of_every_command(tmp_path):
    with FakeOpenAIServer(responder=schema_responder()) as server:
        common = ["--base-url", server.base_url, "--structured", "off"]
        assert main(["evaluate", str(FIXTURES.parent.parent / "examples" / "faireval_pairwise.jsonl"), "--model", "openai-compatible/x", "--limit", "1",
                     "--out", str(tmp_path / "e"), *common]) in (0, 1)
        main(["memory", "ask", "--data", str(LME), "--question-id", "t_garden", "--system", "session_summaries",
              "--model", "openai-compatible/x", "--embedder", "hash", *common])
        assert main(["bench", "longmemeval", "--data", str(LME), "--systems", "full_context", "--answer-model",
                     "openai-compatible/x", "--limit", "1", "--out", str(tmp_path / "b"), *common]) in (0, 1)
        reqs = server.requests
    assert reqs and not any(r.get("response_format") for r in reqs)
