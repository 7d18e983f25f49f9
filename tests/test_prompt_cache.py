"""Provider prompt caches (issue 26): every debater's request of a sample opens with the same
bytes (the task and its data), the provider's cache hints go out (OpenAI ``prompt_cache_key``,
Anthropic ``cache_control``), and the cached tokens the server reports reach the meter,
summary.json and the cost. Asserted on what the fake server received and reported."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from chateval import Evaluator
from chateval.cli import main
from chateval.debate import Sample
from chateval.models.prices import PRICES, apply_price_specs, cost_usd
from chateval.util.prompts import fence
from chateval.testing import protocols
from chateval.testing.fake_openai import DEFAULT_REPLY, FakeOpenAIServer

from .conftest import REPO

STRATEGIES = ["one_by_one", "simultaneous", "simultaneous_summarizer"]
REPLIES = {"pairwise": DEFAULT_REPLY, "score": "Fine.\nScore: 7", "correctness": "Matches.\nVerdict: correct"}
CONTEXT = "Earlier session: the user said they adopted a cat named Miso in March. " * 8


def samples(task: str) -> list[Sample]:
    out = []
    for i in range(2):
        q = f"Question {i}: what is the name of my cat?"
        if task == "pairwise":
            out.append(Sample(id=f"s{i}", question=q, answer_1=f"Miso {i}.", answer_2="Tom.", context=CONTEXT))
        elif task == "score":
            out.append(Sample(id=f"s{i}", question=q, answer=f"Your cat is Miso {i}.", context=CONTEXT))
        else:
            out.append(Sample(id=f"s{i}", question=q, answer=f"Miso {i}", reference="Miso", context=CONTEXT))
    return out


def fences(s: Sample) -> list[str]:
    out = [fence(s.question, "QUESTION"), fence(s.context, "CONTEXT")]
    if s.answer_1:
        out += [fence(s.answer_1, "ASSISTANT 1"), fence(s.answer_2, "ASSISTANT 2")]
    else:
        out.append(fence(s.answer, "RESPONSE"))
    if s.reference:
        out.append(fence(s.reference, "REFERENCE"))
    return out


def run(server: FakeOpenAIServer, monkeypatch, task: str, strategy: str, layout: str = "shared-prefix",
        model: str = "openai/test-model", base_url: str | None = None) -> Evaluator:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    ev = Evaluator(model=model, base_url=base_url or server.base_url, task=task, strategy=strategy, turns=2,
                   personas=["general_public", "critic", "scientist"], structured="off", cache=False,
                   prompt_layout=layout)

    async def go() -> None:
        for s in samples(task):  # one after the other: each sample's requests stay together
            assert (await ev.judge(s)).status == "ok"
        await ev.layer.close()

    asyncio.run(go())
    return ev


def debater_requests(server: FakeOpenAIServer) -> list[dict]:
    return [b for b in server.requests if "You summarise a panel" not in protocols.prompt_text(b)]


def by_sample(requests: list[dict], task: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for b in requests:
        text = protocols.prompt_text(b)
        sid = next(s.id for s in samples(task) if fence(s.question, "QUESTION") in text)
        out.setdefault(sid, []).append(b)
    return out


@pytest.mark.parametrize("task", ["pairwise", "score", "correctness"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_debater_request_of_a_sample_opens_with_the_same_task_and_data(task, strategy, monkeypatch):
    with FakeOpenAIServer(responder=lambda body: REPLIES[task], cache_min_tokens=0, cache_granularity=1) as server:
        run(server, monkeypatch, task, strategy)
        requests = debater_requests(server)
    groups = by_sample(requests, task)
    assert len(groups) == 2 and all(len(g) == 6 for g in groups.values())  # 3 debaters x 2 rounds
    keys = set()
    for sid, group in groups.items():
        sample = next(s for s in samples(task) if s.id == sid)
        prompts = [protocols.prompt_text(b) for b in group]
        shared = prompts[0][: min(protocols.common_prefix(prompts[0], p) for p in prompts[1:])]
        # The identical opening holds every fenced block of the sample, and no debater's name.
        assert all(f in shared for f in fences(sample)), shared[:300]
        assert not any(n in shared for n in ("General_Public", "Critic", "Scientist"))
        # Across rounds a debater's request extends its previous one: its whole history is a prefix.
        per_agent: dict[str, list[list[dict]]] = {}
        for b in group:
            name = b["messages"][0]["content"].rsplit("You are ", 1)[1][:12]
            per_agent.setdefault(name, []).append(b["messages"])
        assert len(per_agent) == 3
        for history in per_agent.values():
            first, second = history
            assert second[: len(first)] == first
        # One stable prompt_cache_key per sample, for all its debaters' calls.
        assert len({b["prompt_cache_key"] for b in group}) == 1
        keys.add(group[0]["prompt_cache_key"])
    assert len(keys) == 2


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_persona_first_layout_shares_no_data_up_front(strategy, monkeypatch):
    with FakeOpenAIServer(responder=lambda body: DEFAULT_REPLY) as server:
        run(server, monkeypatch, "pairwise", strategy, layout="persona-first")
        requests = debater_requests(server)
    for group in by_sample(requests, "pairwise").values():
        prompts = [protocols.prompt_text(b) for b in group]
        shared = prompts[0][: min(protocols.common_prefix(prompts[0], p) for p in prompts[1:])]
        assert "QUESTION" not in shared  # the persona opens each prompt, before any data
        assert all("prompt_cache_key" not in b for b in group)


@pytest.mark.slow
def test_cached_tokens_reach_summary_json_and_the_cost(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setitem(PRICES, "cache-model", PRICES.get("cache-model"))  # restored after the test
    with FakeOpenAIServer(cache_min_tokens=0, cache_granularity=16) as server:
        rc = main(["evaluate", str(REPO / "examples" / "faireval_pairwise.jsonl"), "--model", "openai/cache-model",
                   "--base-url", server.base_url, "--limit", "2", "--no-cache", "--structured", "off",
                   "--price", "cache-model=1,2,0.25", "--out", str(tmp_path / "o")])
        served = server.completions
    assert rc == 0
    usage = json.loads((tmp_path / "o" / "summary.json").read_text())["usage"]
    read = sum(c["usage"]["prompt_tokens_details"]["cached_tokens"] for c in served)
    prompt = sum(c["usage"]["prompt_tokens"] for c in served)
    done = sum(c["usage"]["completion_tokens"] for c in served)
    assert read > 0 and usage["cache_read_tokens"] == read and usage["prompt_tokens"] == prompt
    assert usage["cost_usd"] == pytest.approx(((prompt - read) * 1 + read * 0.25 + done * 2) / 1e6)
    assert "prompt cache" in (tmp_path / "o" / "report.md").read_text()


def test_prices_take_an_optional_cached_input_price(monkeypatch):
    monkeypatch.setitem(PRICES, "p-model", PRICES.get("p-model"))
    apply_price_specs(["p-model=1,2"])
    assert cost_usd("p-model", 1000, 0, cache_read=400) == pytest.approx(1000 / 1e6)  # cached as input
    apply_price_specs(["p-model=1,2,0.1,1.25"])
    assert cost_usd("p-model", 1000, 10, cache_read=400, cache_write=100) == pytest.approx(
        (500 * 1 + 400 * 0.1 + 100 * 1.25 + 10 * 2) / 1e6)
    from chateval.util.errors import ConfigError

    with pytest.raises(ConfigError, match="CACHED_IN"):
        apply_price_specs(["p-model=1,2,3,4,5"])


def test_anthropic_gets_a_cache_breakpoint_after_a_long_shared_prefix(monkeypatch):
    pytest.importorskip("anthropic")
    long_context = "The user mentioned many things about their cat Miso and their garden. " * 80  # ~1400 tokens
    monkeypatch.setattr("tests.test_prompt_cache.CONTEXT", long_context)
    with FakeOpenAIServer(responder=lambda body: DEFAULT_REPLY) as server:
        ev = run(server, monkeypatch, "pairwise", "one_by_one", model="anthropic/claude-test",
                 base_url=server.base_url.removesuffix("/v1"))
        requests, served = server.requests, server.completions
    assert len(requests) == 12
    for b in requests:
        system = b["system"]
        assert isinstance(system, list) and system[0]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in system[1] and system[1]["text"].startswith("You are ")
        assert fence(long_context, "CONTEXT") in system[0]["text"] and "You are " not in system[0]["text"]
    writes = [c["usage"]["cache_creation_input_tokens"] for c in served]
    reads = [c["usage"]["cache_read_input_tokens"] for c in served]
    assert sum(1 for w in writes if w) == 2 and sum(1 for r in reads if r) == 10  # one write per sample
    t = ev.layer.totals
    assert t.cache_read_tokens == sum(reads) and t.cache_write_tokens == sum(writes)
    # Anthropic's input_tokens leaves the cached part out; the meter counts every input token.
    assert t.prompt_tokens == sum(c["usage"]["input_tokens"] for c in served) + sum(reads) + sum(writes)


def test_anthropic_sends_a_plain_system_prompt_when_the_prefix_is_too_short(monkeypatch):
    pytest.importorskip("anthropic")
    with FakeOpenAIServer(responder=lambda body: DEFAULT_REPLY) as server:
        run(server, monkeypatch, "pairwise", "one_by_one", model="anthropic/claude-test",
            base_url=server.base_url.removesuffix("/v1"))
        requests = server.requests
    assert all(isinstance(b["system"], str) for b in requests)
    assert os.environ.get("ANTHROPIC_API_KEY") == "sk-ant-test"


def test_openai_compatible_servers_get_no_cache_key_but_their_cached_tokens_count(monkeypatch):
    # vLLM reports OpenAI's prompt_tokens_details; an unknown request field could be refused there.
    with FakeOpenAIServer(responder=lambda body: DEFAULT_REPLY, cache_min_tokens=0, cache_granularity=1) as server:
        ev = run(server, monkeypatch, "pairwise", "one_by_one", model="openai-compatible/vllm-model")
        requests, served = server.requests, server.completions
    assert requests and all("prompt_cache_key" not in b for b in requests)
    read = sum(c["usage"]["prompt_tokens_details"]["cached_tokens"] for c in served)
    assert read > 0 and ev.layer.totals.cache_read_tokens == read


def test_the_progress_line_and_summary_table_show_prompt_cached_tokens():
    from io import StringIO

    from rich.console import Console

    from chateval.models import UsageTotals
    from chateval.runs.progress import RunProgress, summary_table

    totals = UsageTotals(calls=3, prompt_tokens=4000, completion_tokens=90, cache_read_tokens=3000)
    assert "3,000 prompt-cached" in RunProgress(totals, console=Console(file=StringIO()))._stats()
    out = StringIO()
    summary_table({"usage": totals.model_dump()}, Console(file=out, width=200))
    assert "3,000 read from the provider's prompt cache (75% of prompt tokens)" in out.getvalue()
