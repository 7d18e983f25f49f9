"""One command compares the memory libraries people use with a built-in and a user's own agent:
``--systems mem0,zep,full_context,my_memory`` on LongMemEval and LoCoMo, against the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'chateval[mem0]')")
pytest.importorskip("graphiti_core", reason="graphiti-core is not installed (pip install 'chateval[zep]')")

from chateval.cli import main  # noqa: E402
from chateval.testing.fake_openai import FakeOpenAIServer  # noqa: E402
from chateval.testing.schema_reply import schema_responder  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parent.parent / "examples"
SYSTEMS = ["mem0", "zep", "full_context", "my_memory"]  # my_memory: the user's own agent, a plugin file
LME = json.loads((FIXTURES / "lme_tiny.json").read_text())[:2]
GOLD = {q["question"]: q["answer"] for q in LME}


def answer_from_context(body: dict) -> str:
    """mem0's extraction gets one fact (never a gold answer); an answer step gets the gold answer
    when its prompt's memory holds it, else an abstention: so a system is right exactly when its
    recalled context carries the answer, and the systems differ."""
    prompt = body["messages"][-1]["content"]
    if "## New Messages" in prompt:
        return json.dumps({"memory": [{"text": "User adopted a dog named Rex in May"}]})
    memory, _, question = prompt.partition("<<<BEGIN QUESTION>>>")
    gold = next((g for q, g in GOLD.items() if q in question), None)
    return gold if gold is not None and gold in memory else "I don't know."


# zep's (graphiti's) steps ask for a JSON schema and get a small instance of it; the rest as above.
RESPONDER = schema_responder(answer_from_context)


def bench(benchmark: str, data: Path, out: Path, base_url: str, limit: str) -> int:
    return main(
        ["bench", benchmark, "--data", str(data), "--systems", ",".join(SYSTEMS)]
        + ["--plugin", str(EXAMPLES / "my_memory.py"), "--answer-model", "openai-compatible/m"]
        + ["--base-url", base_url, "--judge-model", "offline", "--embedder", "hash", "--limit", limit]
        + ["--no-cache", "--out", str(out)]
    )


def every_pair(summary: dict) -> dict[tuple[str, str], dict]:
    return {(c["a"], c["b"]): c for c in summary["comparisons"]}


@pytest.mark.slow
def test_one_longmemeval_command_compares_mem0_zep_full_context_and_my_agent(tmp_path):
    out = tmp_path / "lme"
    with FakeOpenAIServer(responder=RESPONDER) as server:
        rc = bench("longmemeval", FIXTURES / "lme_tiny.json", out, server.base_url, "2")
        schema_requests = sum(1 for r in server.requests if r.get("response_format"))
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert rc == 0 and summary["n_failed"] == 0 and schema_requests > 0  # zep's graph steps reached the endpoint
    # every system answered every question, each record its own
    assert sorted((r["method"], r["question_id"]) for r in records) == sorted(
        (s, q["question_id"]) for s in SYSTEMS for q in LME
    )
    assert all(r["stats"]["llm_calls"] > 0 for r in records if r["method"] in ("mem0", "zep"))
    correct = {(r["method"], r["question_id"]): r["correct"] for r in records}
    # full_context's prompt holds every session (so the gold answer); mem0's only memory is the dog
    assert all(correct[("full_context", q["question_id"])] for q in LME)
    assert not any(correct[("mem0", q["question_id"])] for q in LME)
    # the summary compares them: with four systems, every pair, paired on the same two questions
    pairs = every_pair(summary)
    assert set(pairs) == {(a, b) for i, a in enumerate(SYSTEMS) for b in SYSTEMS[i + 1 :]}
    assert all(c["n"] == 2 and c["metric"] == "accuracy (single judge)" for c in pairs.values())
    head = pairs[("mem0", "full_context")]
    assert (head["value_a"], head["value_b"], head["diff"]) == (0.0, 1.0, -1.0)
    for (a, b), c in pairs.items():  # each difference is the two systems' accuracies from the records
        acc = {s: sum(correct[(s, q["question_id"])] for q in LME) / len(LME) for s in (a, b)}
        assert (c["value_a"], c["value_b"]) == (acc[a], acc[b])
    assert "## Paired comparisons" in (out / "report.md").read_text()


@pytest.mark.slow
def test_one_locomo_command_compares_them_per_conversation(tmp_path):
    out = tmp_path / "locomo"
    with FakeOpenAIServer(responder=RESPONDER) as server:
        rc = bench("locomo", FIXTURES / "locomo_tiny.json", out, server.base_url, "1")
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert rc == 0 and summary["n_failed"] == 0
    assert list(summary["systems"]) == SYSTEMS
    assert sorted(r["method"] for r in records) == sorted(SYSTEMS) and all(r["qa"] for r in records)
    # every pair, for each metric (LoCoMo's F1 and the judge's accuracy), on the conversation's questions
    by_metric: dict[str, set[tuple[str, str]]] = {}
    for c in summary["comparisons"]:
        by_metric.setdefault(c["metric"], set()).add((c["a"], c["b"]))
        assert c["n"] == len(records[0]["qa"]) and c["n_clusters"] == 1  # one conversation: one cluster
    everyone = {(a, b) for i, a in enumerate(SYSTEMS) for b in SYSTEMS[i + 1 :]}
    assert {"F1", "accuracy (single judge)"} <= set(by_metric) and all(v == everyone for v in by_metric.values())
