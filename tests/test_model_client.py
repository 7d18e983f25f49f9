"""The real model-call path (autogen's OpenAI client -> openai -> HTTP) against a local fake
endpoint: replies, metering, retries and their classification, re-asks, secrets, caching.

Everything talks only to 127.0.0.1 (``FakeOpenAIServer``); no test asserts on wall-clock time.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest
from autogen_core.models import SystemMessage, UserMessage

from chateval import Evaluator
from chateval.util.errors import ModelCallError
from chateval.models import CallLog, CompletionCache, GenParams, ModelLayer, ModelSpec, RetryPolicy
from chateval.models import layer as layer_module
from chateval.testing.fake_openai import DEFAULT_REPLY, FakeOpenAIServer, Fault

MODEL = "openai-compatible/test-model"
SECRET = "sk-test-SECRET-do-not-leak-0123456789"
GOOD = "Assistant 2 is clearly better.\nScore of Assistant 1: 3\nScore of Assistant 2: 9"
MESSAGES = [SystemMessage(content="You are terse."), UserMessage(content="Say hi.", source="user")]


class SpyPolicy(RetryPolicy):
    """The real policy, recording each delay it is asked for: (attempt, retry_after, delay)."""

    def model_post_init(self, __context: object) -> None:
        object.__setattr__(self, "calls", [])

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        d = super().delay(attempt, retry_after)
        self.calls.append((attempt, retry_after, d))  # type: ignore[attr-defined]
        return d


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("CHATEVAL_API_KEY", raising=False)
    monkeypatch.delenv("CHATEVAL_BASE_URL", raising=False)
    monkeypatch.delenv("CHATEVAL_PLUGINS", raising=False)


# Generous per-attempt timeouts: a loaded CI machine must not turn a normal reply into a retry.
# The timeout tests set their own short ones.
def make_layer(server: FakeOpenAIServer, *, model: str = MODEL, max_retries: int = 2, timeout_s: float = 10.0,
               params: GenParams | None = None, secrets: tuple[str, ...] = (),
               cache: CompletionCache | None = None) -> ModelLayer:
    return ModelLayer(
        ModelSpec.parse(model, base_url=server.base_url),
        params=params,
        retry=SpyPolicy(max_retries=max_retries, base_delay_s=0.01, timeout_s=timeout_s),
        cache=cache,
        secrets=secrets,
    )


def make_evaluator(server: FakeOpenAIServer, **settings) -> Evaluator:
    settings = {"model": MODEL, "base_url": server.base_url, "cache": False, "max_retries": 2,
                "timeout_s": 10.0, "turns": 1} | settings
    ev = Evaluator(**settings)
    ev.layer.retry.base_delay_s = 0.01  # the Evaluator has no setting for it; keep retries quick
    return ev


@pytest.fixture
async def layers(server):
    """``layers(**options)``: a ModelLayer on the fake server (``make_layer``'s options), closed
    after the test on the test's own event loop."""
    made: list[ModelLayer] = []

    def make(**options) -> ModelLayer:
        made.append(make_layer(server, **options))
        return made[-1]

    yield make
    for layer in made:
        await layer.close()


@pytest.fixture
async def evaluators(server):
    """``evaluators(**settings)``: an Evaluator on the fake server (``make_evaluator``), closed after the test."""
    made: list[Evaluator] = []

    def make(**settings) -> Evaluator:
        made.append(make_evaluator(server, **settings))
        return made[-1]

    yield make
    for ev in made:
        await ev.aclose()


# --- ModelLayer.complete -------------------------------------------------------------------------

async def test_normal_reply_is_metered(server, layers, no_key):
    server.script(["Hello there."])
    layer = layers(params=GenParams(temperature=0.25, max_tokens=64))
    log = CallLog()
    comp = await layer.complete(MESSAGES, step=None, log=log)
    assert comp.text == "Hello there."
    usage = server.completions[-1]["usage"]
    assert (comp.prompt_tokens, comp.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert comp.prompt_tokens > 0 and comp.completion_tokens > 0
    assert comp.tokens_approx is False and comp.cached is False
    [rec] = log.records
    assert rec.attempts == 1 and rec.cost_usd is None and rec.tokens_approx is False
    assert rec.prompt_tokens == usage["prompt_tokens"] and rec.model == MODEL
    assert layer.totals.calls == 1 and layer.totals.cost_usd is None  # unknown model: no price, not 0
    assert layer.totals.completion_tokens == usage["completion_tokens"]
    # What reached the endpoint: model name, generation parameters, the messages.
    [body] = server.requests
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.25 and body["max_tokens"] == 64
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "Say hi."
    assert server.request_headers[0]["authorization"] == "Bearer not-needed"


async def test_429_retry_after_is_honoured(server, layers, no_key, monkeypatch):
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def spy_sleep(delay, *args, **kwargs):
        slept.append(delay)
        return await real_sleep(delay, *args, **kwargs)

    monkeypatch.setattr(layer_module.asyncio, "sleep", spy_sleep)
    server.script([Fault("429", retry_after=0.05), "after the rate limit"])
    layer = layers()
    log = CallLog()
    comp = await layer.complete(MESSAGES, step=None, log=log)
    assert comp.text == "after the rate limit"
    assert log.records[0].attempts == 2
    assert server.actions == ["429", "reply"]
    # The server's Retry-After (0.05 s) won over the exponential backoff (0.005-0.01 s here) ...
    assert layer.retry.calls == [(1, 0.05, 0.05)]
    # ... and the layer slept exactly that long before the second attempt.
    assert 0.05 in slept


async def test_500_twice_then_success(server, layers, no_key):
    server.script([Fault("500"), Fault("500"), "third time lucky"])
    layer = layers()
    log = CallLog()
    comp = await layer.complete(MESSAGES, step=None, log=log)
    assert comp.text == "third time lucky"
    assert log.records[0].attempts == 3 and len(server.requests) == 3
    # Backoff without Retry-After: exponential with equal jitter, never less than half.
    assert [(a, ra) for a, ra, _ in layer.retry.calls] == [(1, None), (2, None)]
    assert 0.005 <= layer.retry.calls[0][2] <= 0.01 and 0.01 <= layer.retry.calls[1][2] <= 0.02


async def test_503_is_retried(server, layers, no_key):
    server.script([Fault("503"), "ok"])
    layer = layers()
    assert (await layer.complete(MESSAGES, step=None)).text == "ok"
    assert server.actions == ["503", "reply"]


async def test_500_forever_gives_one_line_error(server, layers, no_key):
    server.script([Fault("500")] * 10)
    layer = layers(max_retries=2)
    log = CallLog()
    with pytest.raises(ModelCallError) as info:
        await layer.complete(MESSAGES, step=None, log=log)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg == f"model call to {MODEL} failed after 3 attempt(s): HTTP 500 from the model endpoint"
    assert len(server.requests) == 3  # max_retries + 1, then it stops
    assert log.errors == [msg] and [(r.failed, r.attempts) for r in log.records] == [(True, 3)]
    t = log.totals()  # counted as a failed call with its 2 retries, no tokens, nothing answered
    # The model's price is unknown: so is the cost (a successful run of it reads "unknown" too).
    assert (t.calls, t.failed_calls, t.retries, t.prompt_tokens, t.cost_usd) == (0, 1, 2, 0, None)
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_timeout_retried_then_error(server, layers, no_key):
    server.script([Fault("timeout", delay=1.0)] * 2)
    layer = layers(max_retries=1, timeout_s=0.2)
    with pytest.raises(ModelCallError, match=r"failed after 2 attempt\(s\): timed out$"):
        await layer.complete(MESSAGES, step=None)
    assert server.actions == ["timeout", "timeout"]


async def test_timeout_then_success(server, layers, no_key):
    server.script([Fault("timeout", delay=1.0), "in time"])
    layer = layers(max_retries=1, timeout_s=0.2)
    log = CallLog()
    comp = await layer.complete(MESSAGES, step=None, log=log)
    assert comp.text == "in time" and log.records[0].attempts == 2


@pytest.mark.parametrize("kind", ["garbage", "truncated"])
async def test_unparseable_body_retried_then_clear_error(server, layers, no_key, kind):
    # application/json with a body that is not (complete) JSON: openai raises json.JSONDecodeError.
    server.script([Fault(kind)] * 3)
    layer = layers()
    with pytest.raises(ModelCallError) as info:
        await layer.complete(MESSAGES, step=None)
    msg = str(info.value)
    assert msg.startswith(f"model call to {MODEL} failed after 3 attempt(s): JSONDecodeError: ")
    assert "\n" not in msg and "<html>" not in msg
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", ["garbage", "truncated"])
async def test_unparseable_body_then_success(server, layers, no_key, kind):
    server.script([Fault(kind), "recovered"])
    layer = layers()
    log = CallLog()
    comp = await layer.complete(MESSAGES, step=None, log=log)
    assert comp.text == "recovered" and log.records[0].attempts == 2


@pytest.mark.parametrize(
    ("fault", "detail"),
    [
        # A proxy's HTML page: openai returns the body as a str instead of raising.
        (Fault("garbage", content_type="text/html"), "(not JSON)"),
        # Valid JSON that is not a completion.
        (Fault("garbage", body='{"choices": []}'), "(no choices)"),
        (Fault("garbage", body='{"error": {"message": "upstream failed"}}'), "(no choices)"),
    ],
)
async def test_non_completion_reply_is_a_retried_bad_response(server, layers, no_key, fault, detail):
    server.script([fault] * 3)
    layer = layers()
    with pytest.raises(ModelCallError) as info:
        await layer.complete(MESSAGES, step=None)
    msg = str(info.value)
    assert msg.startswith(f"model call to {MODEL} failed after 3 attempt(s): bad response: the reply is not a chat completion")
    assert detail in msg and "\n" not in msg
    assert len(server.requests) == 3


async def test_connection_reset_is_retried(server, layers, no_key):
    server.script([Fault("reset"), "after the reset"])
    layer = layers()
    log = CallLog()
    comp = await layer.complete(MESSAGES, step=None, log=log)
    assert comp.text == "after the reset" and log.records[0].attempts == 2


async def test_connection_reset_forever(server, layers, no_key):
    server.script([Fault("reset")] * 3)
    layer = layers()
    with pytest.raises(ModelCallError, match=r"failed after 3 attempt\(s\): connection to the model endpoint failed \(refused, reset or unreachable\)$"):
        await layer.complete(MESSAGES, step=None)
    assert len(server.requests) == 3


async def test_an_empty_reply_is_retried_and_never_cached(server, layers, no_key, tmp_path):
    server.script([Fault("empty"), "the real answer"])
    layer = layers(cache=CompletionCache(tmp_path / "cache"))
    comp = await layer.complete(MESSAGES, step=None)
    assert comp.text == "the real answer" and len(server.requests) == 2  # the empty 200 was retried
    server.script([Fault("empty")] * 5)
    with pytest.raises(ModelCallError, match="empty reply"):
        await layer.complete(MESSAGES + [UserMessage(content="again", source="user")], step=None)
    assert layer.cache.get(layer._key(MESSAGES + [UserMessage(content="again", source="user")], None)) is None


async def test_an_echoed_key_is_scrubbed_from_the_reply(server, layers, no_key):
    server.script(["your key is sk-canary-123 as you said"])
    layer = layers(secrets=("sk-canary-123",))
    comp = await layer.complete(MESSAGES, step=None)
    assert "sk-canary-123" not in comp.text and "***" in comp.text


# --- through the Evaluator and the debate ---------------------------------------------------------

async def test_compare_sends_model_params_and_agent_names(server, evaluators, no_key):
    ev = evaluators(temperature=0.4, seed=7)
    result = await ev.compare("What is 2+2?", "4", "5")
    assert result.status == "ok" and result.verdict.winner == "1"  # the default reply scores 7 vs 5
    assert [a.persona for a in result.agents] == ["General Public", "Critic"]
    assert len(server.requests) == 2  # one_by_one, 2 agents, 1 round, no re-asks
    for body in server.requests:
        assert body["model"] == "test-model" and body["temperature"] == 0.4 and body["seed"] == 7
    # The second speaker hears the first one's reply, attributed by the `name` field and, for
    # chat templates that drop `name`, by the persona name in the content.
    second = server.requests[1]["messages"]
    heard = [m for m in second if m.get("name") == "General_Public"]
    assert len(heard) == 1 and heard[0]["role"] == "user"
    assert heard[0]["content"] == f"[General Public] {DEFAULT_REPLY}"
    assert any(m.get("name") == "moderator" for m in second)
    assert not any(m.get("name") == "Critic" for m in second)  # its own turn is not echoed as a user
    assert result.usage.calls == 2 and result.usage.tokens_approx is False and result.usage.cost_usd is None
    sent = server.completions
    assert result.usage.prompt_tokens == sum(c["usage"]["prompt_tokens"] for c in sent)
    assert result.usage.completion_tokens == sum(c["usage"]["completion_tokens"] for c in sent)


async def test_malformed_verdict_is_reasked_and_good_reask_used(server, evaluators, no_key):
    server.script(["I prefer the second answer, but I will not give numbers.", GOOD])
    ev = evaluators(agents=1)
    result = await ev.compare("What is 2+2?", "5", "4")
    assert len(server.requests) == 2
    reask = server.requests[1]["messages"][-1]
    assert reask["role"] == "user" and reask.get("name") == "moderator"
    assert "could not be read as a verdict" in reask["content"]
    [agent] = result.agents
    assert agent.reasked and agent.parse_error is None
    assert agent.scores == {"answer_1": 3.0, "answer_2": 9.0} and agent.winner == "2"
    assert result.status == "ok" and result.verdict.winner == "2"
    assert [t.kind for t in result.transcript] == ["debate", "reask"]
    assert result.usage.calls == 2


async def test_unreadable_verdict_reasked_once_then_parse_error(server, evaluators, no_key):
    # Agent 1's final turn has no verdict, agent 2 answers, agent 1's re-ask has none either.
    server.script(["I would rather not say.", DEFAULT_REPLY, "Still undecided."])
    ev = evaluators()
    result = await ev.compare("What is 2+2?", "4", "5")
    assert len(server.requests) == 3 and server.pending == 0  # exactly one re-ask
    first, second = result.agents
    assert first.reasked and first.parse_error and "after re-ask" in first.parse_error
    assert first.scores == {} and first.winner is None  # never a guessed score
    assert second.ok and not second.reasked and second.winner == "1"
    assert result.status == "ok" and result.verdict.n_valid == 1 and result.verdict.n_agents == 2


async def test_all_verdicts_unreadable_fails_the_sample(server, evaluators, no_key):
    server.script(["No verdict here.", "Nor here."])
    ev = evaluators(agents=1)
    result = await ev.compare("What is 2+2?", "4", "5")
    assert len(server.requests) == 2
    assert result.status == "failed" and result.verdict is None
    assert result.agents[0].parse_error and result.agents[0].scores == {}
    assert result.error == "no readable verdict from any of the 1 debaters"


async def test_compare_survives_transient_faults(server, evaluators, no_key):
    server.script([Fault("429", retry_after=0.01), Fault("reset"), Fault("garbage"), DEFAULT_REPLY])
    ev = evaluators(max_retries=3)
    result = await ev.compare("What is 2+2?", "4", "5")
    assert result.status == "ok" and result.verdict.winner == "1"
    assert server.actions == ["429", "reset", "garbage", "reply", "reply"]
    assert result.usage.calls == 2  # metered per successful call; the attempts are on the records


async def test_compare_model_failure_is_a_failed_sample(server, evaluators, no_key):
    server.script([Fault("500")] * 3)
    ev = evaluators(agents=1, max_retries=2)
    result = await ev.compare("What is 2+2?", "4", "5")
    assert result.status == "failed" and result.verdict is None
    assert result.error == f"model call to {MODEL} failed after 3 attempt(s): HTTP 500 from the model endpoint"
    assert len(server.requests) == 3


# --- secrets ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "fault",
    [Fault("500"), Fault("429"), Fault("reset"), Fault("garbage", body=f"bad key {SECRET}"),
     Fault("garbage", content_type="text/html", body=f"<p>Invalid API key {SECRET}</p>")],
    ids=["500", "429", "reset", "garbage-json", "garbage-html"],
)
async def test_api_key_never_leaks(server, layers, evaluators, monkeypatch, fault):
    monkeypatch.setenv("CHATEVAL_API_KEY", SECRET)
    monkeypatch.delenv("CHATEVAL_PLUGINS", raising=False)
    server.script([fault] * 3)
    ev = evaluators(agents=1, max_retries=2)
    result = await ev.compare("What is 2+2?", "4", "5")
    # The key did go to the endpoint (so the check below means something) ...
    assert server.request_headers[0]["authorization"] == f"Bearer {SECRET}"
    # ... and nowhere into what we report.
    assert result.status == "failed" and result.error
    assert SECRET not in result.error
    assert SECRET not in result.model_dump_json()

    # The layer's own error, too.
    server.reset()
    server.script([fault] * 3)
    layer = layers(secrets=(SECRET,))
    with pytest.raises(ModelCallError) as info:
        await layer.complete(MESSAGES, step=None)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)


async def test_secret_is_scrubbed_from_error_messages(server, layers, no_key):
    # A describe() text that contains the key (here: the label, via a model named like it) is scrubbed.
    layer = layers(model=f"openai-compatible/{SECRET}", max_retries=0, secrets=(SECRET,))
    server.script([Fault("500")])
    with pytest.raises(ModelCallError) as info:
        await layer.complete(MESSAGES, step=None)
    assert SECRET not in str(info.value) and "***" in str(info.value)


# --- cache -----------------------------------------------------------------------------------------

async def test_cache_hit_makes_no_requests_and_params_are_in_the_key(server, evaluators, no_key, tmp_path):
    ev = evaluators(cache=True, cache_dir=str(tmp_path), temperature=0.0)
    first = await ev.compare("What is 2+2?", "4", "5")
    n = len(server.requests)
    assert n == 2 and first.usage.calls == 2 and first.usage.cached_calls == 0
    again = await ev.compare("What is 2+2?", "4", "5")
    assert len(server.requests) == n  # nothing reached the endpoint
    assert again.usage.cached_calls == 2 and again.usage.calls == 0
    assert again.verdict == first.verdict
    assert all(t.cached for t in again.transcript)

    # A fresh evaluator on the same cache directory (a rerun) also hits.
    ev = evaluators(cache=True, cache_dir=str(tmp_path), temperature=0.0)
    rerun = await ev.compare("What is 2+2?", "4", "5")
    assert len(server.requests) == n and rerun.usage.cached_calls == 2

    # Another temperature is another key: the calls are made again.
    ev = evaluators(cache=True, cache_dir=str(tmp_path), temperature=0.7)
    warmer = await ev.compare("What is 2+2?", "4", "5")
    assert len(server.requests) == 2 * n
    assert all(b["temperature"] == 0.7 for b in server.requests[n:])
    assert warmer.usage.calls == 2 and warmer.usage.cached_calls == 0


async def test_layer_cache_with_completion_cache(server, layers, no_key, tmp_path):
    layer = layers(cache=CompletionCache(tmp_path))
    a = await layer.complete(MESSAGES, step=None)
    b = await layer.complete(MESSAGES, step=None)
    assert len(server.requests) == 1
    assert not a.cached and b.cached and b.text == a.text
    assert (b.prompt_tokens, b.completion_tokens) == (a.prompt_tokens, a.completion_tokens)
    assert layer.totals.calls == 1 and layer.totals.cached_calls == 1


async def test_failed_calls_are_not_cached(server, layers, no_key, tmp_path):
    layer = layers(max_retries=0, cache=CompletionCache(tmp_path))
    server.script([Fault("500")])
    with pytest.raises(ModelCallError):
        await layer.complete(MESSAGES, step=None)
    comp = await layer.complete(MESSAGES, step=None)
    assert comp.text == DEFAULT_REPLY and not comp.cached and len(server.requests) == 2


# --- the fake server itself ------------------------------------------------------------------------

def _post(base_url: str) -> int:
    req = urllib.request.Request(
        base_url + "/chat/completions", data=json.dumps({"model": "m", "messages": []}).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=2) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def test_fault_mix_is_seeded_and_server_stops():
    runs = []
    for _ in range(2):
        with FakeOpenAIServer(faults={"429": 0.2, "500": 0.1, Fault("503"): 0.1}, seed=3) as s:
            assert s.base_url.startswith("http://127.0.0.1:")
            statuses = [_post(s.base_url) for _ in range(30)]
            runs.append((s.actions, statuses))
        assert not s._thread.is_alive()
    assert runs[0] == runs[1]
    actions, statuses = runs[0]
    assert {"429", "500", "503", "reply"} <= set(actions)
    assert statuses == [200 if a == "reply" else int(a) for a in actions]


def test_close_does_not_wait_for_a_sleeping_handler():
    s = FakeOpenAIServer()
    s.script([Fault("timeout", delay=20.0)])
    req = urllib.request.Request(s.base_url + "/chat/completions", data=b'{"messages": []}', method="POST")
    with pytest.raises(OSError):
        urllib.request.urlopen(req, timeout=0.1)
    s.close()  # wakes the handler that is still "thinking"
    assert not s._thread.is_alive()
    s.close()  # idempotent


def test_fault_validation():
    with pytest.raises(ValueError):
        Fault("418")
    with pytest.raises(ValueError):
        FakeOpenAIServer(faults={"500": 0.7, "429": 0.6})
    with FakeOpenAIServer() as s, pytest.raises(TypeError):
        s.script([42])  # type: ignore[list-item]


async def test_an_unreadable_step_reply_is_quoted_and_dropped_from_the_cache(server, layers, no_key, tmp_path):
    from chateval.bench.judge import SINGLE_JUDGE, JudgeInputs
    from chateval.models.steps import StepError

    server.script(["Sure! The answer looks right to me.", "I think it is correct, yes."])
    layer = layers(cache=CompletionCache(tmp_path / "cache"))
    inputs = JudgeInputs(question="Where?", gold="Paris", response="Paris", question_type="single-session-user",
                         abstention=False)
    with pytest.raises(StepError, match="the model said: 'I think it is correct, yes.'"):
        await SINGLE_JUDGE.run(layer, inputs)
    server.script(['{"correct": true, "reason": "same city"}'])
    out = await SINGLE_JUDGE.run(layer, inputs)  # a rerun asks again instead of reusing the bad reply
    assert out.correct is True and len(server.requests) == 3


# --- ChatEval protocol on the wire (issue 14) -----------------------------------------------------

def _round_reply(request: dict) -> str:
    """Summaries say which round they close; debaters always give a readable verdict."""
    system = request["messages"][0]["content"]
    if system.startswith("You summarise"):  # the summarizer's; debaters' open with the task and data
        rnd = sum(1 for m in request["messages"] if "Round" in str(m.get("content", "")))
        return f"SUMMARY-{rnd}"
    return DEFAULT_REPLY


@pytest.mark.parametrize("mode", ["append", "replace"])
async def test_summaries_on_the_wire(server, evaluators, no_key, mode):
    server.responder = _round_reply
    settings = {"strategy": "simultaneous_summarizer", "turns": 3}
    if mode == "replace":
        settings["summary_mode"] = "replace"
    ev = evaluators(**settings)
    result = await ev.compare("What is 2+2?", "4", "5")
    assert result.status == "ok"
    summaries = [t.text for t in result.transcript if t.kind == "summary"]
    assert len(summaries) == 2
    last_round = [r["messages"] for r in server.requests if not r["messages"][0]["content"].startswith("You summarise")][-2:]
    for msgs in last_round:
        sent = [m["content"] for m in msgs if m.get("name") == "summarizer"]
        raw = [m for m in msgs if m["role"] == "assistant"]
        if mode == "append":  # every summary concatenated after the raw history, attributed
            assert sent == [f"[Summarizer] {s}" for s in summaries]
            assert len(raw) == 2  # the debater's own replies of rounds 1 and 2 are still there
        else:  # only the latest summary, nothing of the raw discussion
            assert sent == [f"[Summarizer] {summaries[-1]}"]
            assert raw == []


@pytest.mark.parametrize("hold", [False, True])
async def test_moderator_note_on_the_wire(server, evaluators, no_key, hold):
    ev = evaluators(turns=2, hold_scores=hold)
    await ev.compare("What is 2+2?", "4", "5")
    first_round = [m["content"] for m in server.requests[0]["messages"] if m.get("name") == "moderator"]
    assert len(first_round) == 1 and first_round[0].startswith("Round 1 of 2.")
    assert ("Do not give scores yet" in first_round[0]) is hold
