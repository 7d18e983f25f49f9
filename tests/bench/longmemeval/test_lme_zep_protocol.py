"""Issue 34, item 10: Zep's own LongMemEval evaluation as a named option (`--protocol zep`),
checked on what the fake OpenAI server received: Zep's reader (a system prompt, a brief answer or
an abstention, the question prefixed with its date), Zep's grader (a JSON yes/no, no abstention
rule) and Zep's search recipe on a `zep` system (facts by cross-encoder, entities by RRF, the
query cut to 255 characters)."""

from __future__ import annotations

import json

import pytest

from chateval.bench.longmemeval.settings import LongMemEvalConfig
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.testing.protocols import requested_schema

from ...conftest import FIXTURES
from ...test_protocols_defaults import _lme

DATED = "(date: 2023/05/10 (Wed) 12:00) "


def _is_grader(body: dict) -> bool:
    return (
        "is_correct" in json.dumps(body.get("response_format") or {})
        or '"is_correct"' in body["messages"][-1]["content"]
    )


def _reply(body: dict) -> str:
    return '{"is_correct": "yes"}' if _is_grader(body) else "I can't tell from the context."


def test_protocol_zep_reader_and_grader_on_the_wire(tmp_path):
    with FakeOpenAIServer(responder=_reply) as server:
        assert _lme(FIXTURES / "lme_tiny.json", tmp_path / "o", server, "--protocol", "zep") == 0
        bodies = list(server.requests)
    readers = [b for b in bodies if not _is_grader(b)]
    graders = [b for b in bodies if _is_grader(b)]
    assert len(readers) == len(graders) == 5
    for body in readers:
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["system", "user"] and "expert assistant" in body["messages"][0]["content"]
        text = body["messages"][1]["content"]
        assert "briefly" in text and "abstain" in text
        assert DATED in text and "Current date" not in text and "step by step" not in text
    for body in graders:
        schema = requested_schema(body)
        assert schema is not None and "is_correct" in schema["properties"]
        assert body["messages"][0]["role"] == "system"
        text = body["messages"][-1]["content"]
        assert DATED in text
        assert "unanswerable" not in text  # Zep's grader has no abstention rule (t_car_abs gets the default)
    temporal = [b for b in graders if "off-by-one" in b["messages"][-1]["content"]]
    assert len(temporal) == 1  # t_trip's type has its own instructions
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["reader_prompt"] == "zep" and summary["judge_protocol"] == "zep"
    assert "gpt-4o-mini" in summary["judge_model_note"] and "Zep's grader" in summary["judge_model_note"]
    rows = [json.loads(x) for x in (tmp_path / "o" / "samples.jsonl").read_text().splitlines()]
    assert all(r["judge"]["single"]["protocol"] == "zep" and r["correct"] for r in rows)


def test_protocol_zep_sets_zep_search_and_refuses_a_conflict():
    c = LongMemEvalConfig(
        data="d.json",
        out="o",
        systems=["zep", "retrieval"],
        protocol="zep",
        settings={"zep": {"facts": 5, "max_query_chars": 100}},
    )
    assert (c.reader_prompt, c.judge_protocol) == ("zep", "zep")
    assert c.settings["zep"] == {
        "reranker": "cross_encoder",
        "node_reranker": "rrf",
        "max_query_chars": 100,
        "facts": 5,
    }  # a --set of the same key wins
    with pytest.raises(ValueError, match="--protocol zep sets --judge-protocol zep"):
        LongMemEvalConfig(data="d.json", out="o", systems=["zep"], protocol="zep", judge_protocol="official")
    plain = LongMemEvalConfig(data="d.json", out="o", systems=["zep"])
    assert plain.reader_prompt == "official" and plain.settings == {}


async def test_zep_search_recipe_facts_by_cross_encoder_entities_by_rrf():
    pytest.importorskip("graphiti_core", reason="needs the zep extra")
    from graphiti_core.search.search_config import EdgeReranker, NodeReranker

    from ...test_zep import JUL, PARIS, make

    z = make(reranker="cross_encoder", node_reranker="rrf", max_query_chars=24)
    await z.ingest_all([PARIS])
    g = await z.graph()
    seen = []
    search = g.search_

    async def spy(query, config, **kw):
        seen.append((query, config))
        return await search(query, config=config, **kw)

    g.search_ = spy
    items = await z.recall("Where does the user live these days?", JUL)
    await z.aclose()
    query, config = seen[0]
    assert query == "Where does the user live"  # cut to max_query_chars
    assert config.edge_config.reranker == EdgeReranker.cross_encoder
    assert config.node_config.reranker == NodeReranker.rrf
    assert items and all(set(i.scores) == {"cross_encoder (stand-in: embedding cosine)"} for i in items)


def test_a_zep_row_under_another_protocol_is_qualified(tmp_path):
    pytest.importorskip("graphiti_core", reason="needs the zep extra")
    from chateval.cli import main

    def run(out, *extra):
        assert (
            main(
                [
                    "bench",
                    "longmemeval",
                    "--data",
                    str(FIXTURES / "lme_tiny.json"),
                    "--systems",
                    "zep",
                    "--answer-model",
                    "offline",
                    "--embedder",
                    "hash",
                    "--limit",
                    "1",
                    "--out",
                    str(out),
                    *extra,
                ]
            )
            == 0
        )
        return (out / "report.md").read_text()

    assert "`zep` is not under Zep's own protocol here" in run(tmp_path / "lme")
    assert "`zep` is not under Zep's own protocol here" not in run(tmp_path / "zep", "--protocol", "zep")
