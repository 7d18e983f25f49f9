"""Issue 34, items 5-7: THEANINE's evaluation and system as the paper and the official code run
them — the head-to-head compares retrieved memories (responses as an option), the two
temperature presets (the paper's 0.75, the official scripts' 0.7 / 0.5), and the retrieval query
written oldest turn first (newest first as an option). Asserted on what the fake OpenAI server
received (chat and embedding requests) or on the run's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.bench.msc.pairs import MEMORY_RULE, NOTHING
from chateval.cli import main
from chateval.datasets import load_msc_release
from chateval.memory.systems.retrieval import Retrieval
from chateval.memory.sampling import SAMPLING_PRESETS, load_sampling
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES

TINY = FIXTURES / "msc_release_tiny.jsonl"
FACT = "Speaker 1 is learning the violin"
GOOD, BAD = "Good luck with the violin contest!", "Nice weather today."


def text_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body.get("messages") or [] if isinstance(m.get("content"), str))


def samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]


class Amnesic(Retrieval):
    """A baseline that recalls nothing (its response step gets an empty memory)."""

    name = "amnesic"

    async def _recall(self, query, now, k):
        return []


def prefers_memory(body: dict) -> str:
    """Systems answer from their memory; the panel prefers the side that shows the recalled fact."""
    text = text_of(body)
    if "Assistant 1's response" in text:
        first_good = 0 <= text.find(FACT) < text.find(NOTHING)
        return (f"One recalls the violin.\nScore of Assistant 1: {8 if first_good else 3}\n"
                f"Score of Assistant 2: {3 if first_good else 8}")
    if '"facts"' in text:
        return json.dumps({"facts": [{"text": FACT, "turn_ids": []}]})
    return GOOD if "learning the violin" in text else BAD


# --- item 5: the head-to-head compares retrieved memories --------------------------------------
@pytest.mark.slow
def test_head_to_head_shows_the_panel_the_retrieved_memories_not_the_responses(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=prefers_memory) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems", f"retrieval,{__name__}:Amnesic",
                     "--embedder", "hash", "--answer-model", "openai-compatible/x", "--base-url", server.base_url,
                     "--structured", "off", "--turns-per-episode", "2", "--no-bertscore", "--out", str(out)]) == 0
        judged = [text_of(r) for r in server.requests if "Assistant 1's response" in text_of(r)]
    rows = samples(out)
    responses = {r["response"] for r in rows if r.get("system")}
    assert responses == {GOOD, BAD}  # both systems answered; the panel saw neither answer
    assert judged and all(FACT in t and NOTHING in t and MEMORY_RULE in t for t in judged)
    assert not any(GOOD in t or BAD in t for t in judged)
    pairs = [r for r in rows if r.get("kind") == "helpfulness_pair"]
    assert len(pairs) == 4 and all(FACT in r["memories"]["A"] and r["memories"]["B"] == NOTHING for r in pairs)
    assert all("responses" not in r for r in pairs)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["helpfulness_compare"] == "memories"
    assert summary["helpfulness_pairs"]["amnesic"]["wins"] == 4
    assert "retrieved memories" in (out / "report.md").read_text()


@pytest.mark.slow
def test_comparing_responses_is_an_option(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=prefers_memory) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems", f"retrieval,{__name__}:Amnesic",
                     "--embedder", "hash", "--answer-model", "openai-compatible/x", "--base-url", server.base_url,
                     "--structured", "off", "--turns-per-episode", "1", "--limit", "1", "--no-bertscore",
                     "--helpfulness-compare", "responses", "--out", str(out)]) == 0
        judged = [text_of(r) for r in server.requests if "Assistant 1's response" in text_of(r)]
    assert judged and all(GOOD in t and BAD in t and MEMORY_RULE not in t for t in judged)
    (pair,) = [r for r in samples(out) if r.get("kind") == "helpfulness_pair"]
    assert pair["responses"] == {"A": GOOD, "B": BAD}
    assert json.loads((out / "config.json").read_text())["judging"]["helpfulness_compare"] == "responses"


# --- item 6: the paper's and the official scripts' temperatures --------------------------------
def theanine_reply(body: dict) -> str:
    text = text_of(body)
    if '"facts"' in text:
        return json.dumps({"facts": [{"text": FACT, "turn_ids": []}]})
    if '"explanation"' in text:
        return json.dumps({"explanation": "both are about the violin", "relation": "SameTopic"})
    if '"events"' in text:
        return json.dumps({"events": [{"id": "E1", "text": FACT}], "note": ""})
    return "Good luck!"


def step_of(text: str) -> str:
    if '"facts"' in text:
        return "summarise"
    if '"explanation"' in text:
        return "link"
    if '"events"' in text:
        return "refine"
    return "respond"


def temperatures(tmp_path: Path, name: str, *extra: str) -> dict[str, set[float]]:
    """The temperature each THEANINE step sent, as the fake server received it."""
    with FakeOpenAIServer(responder=theanine_reply) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "theanine", "--embedder", "hash",
                     "--answer-model", "openai-compatible/x", "--base-url", server.base_url, "--structured", "off",
                     "--limit", "1", "--turns-per-episode", "1", "--no-bertscore", "--no-helpfulness", "--no-cache",
                     "--out", str(tmp_path / name), *extra]) == 0
        seen: dict[str, set[float]] = {}
        for r in server.requests:
            if "messages" in r:
                seen.setdefault(step_of(text_of(r)), set()).add(r.get("temperature"))
    assert set(seen) == {"summarise", "link", "refine", "respond"}  # every step ran
    return seen


def test_theanine_paper_preset_sends_0_75_at_every_step(tmp_path):
    seen = temperatures(tmp_path, "paper", "--sampling", "theanine-paper")
    assert seen == {"summarise": {0.75}, "link": {0.75}, "refine": {0.75}, "respond": {0.75}}
    config = json.loads((tmp_path / "paper" / "config.json").read_text())["judging"]
    assert config["sampling"]["steps"]["theanine_response"] == 0.75


def test_theanine_code_preset_sends_the_official_scripts_temperatures(tmp_path):
    seen = temperatures(tmp_path, "code", "--sampling", "theanine-code")
    assert seen == {"summarise": {0.7}, "link": {0.5}, "refine": {0.7}, "respond": {0.7}}
    assert load_sampling("theanine") == SAMPLING_PRESETS["theanine-code"]  # the former name


def test_the_default_stays_deterministic(tmp_path):
    assert set().union(*temperatures(tmp_path, "default").values()) == {0.0}


# --- item 7: the retrieval query, oldest turn first --------------------------------------------
def query_inputs(tmp_path: Path, name: str, *extra: str) -> list[str]:
    """The texts THEANINE embedded that are dialogue queries (several turns), as the fake
    embedding server received them."""
    with FakeOpenAIServer(responder=theanine_reply) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "theanine",
                     "--embedder", "openai-compatible/emb", "--embedder-base-url", server.base_url,
                     "--answer-model", "offline", "--limit", "1", "--no-bertscore", "--no-helpfulness",
                     "--no-cache", "--out", str(tmp_path / name), *extra]) == 0
        texts = [t for r in server.requests if "input" in r
                 for t in ([r["input"]] if isinstance(r["input"], str) else r["input"])]
    return [t for t in texts if t.count("Speaker ") >= 2 and "\n" in t]


@pytest.mark.slow
def test_the_embedded_query_is_the_dialogue_oldest_turn_first_and_newest_first_is_an_option(tmp_path):
    turns = load_msc_release(TINY)[0].current.turns
    lines = [f"{t.role}: {t.content}" for t in turns]
    queries = query_inputs(tmp_path, "default")
    # One query per predicted turn (every turn from the second on): the turns before it, as said.
    assert set(queries) == {"\n".join(lines[:k]) for k in range(2, len(turns))}
    assert all(q.startswith(lines[0]) for q in queries)
    newest = query_inputs(tmp_path, "newest", "--set", "theanine.query_order=newest_first")
    assert set(newest) == {"\n".join(reversed(lines[:k])) for k in range(2, len(turns))}
    assert all(q.endswith(lines[0]) for q in newest)
