"""Every memory system and every benchmark end to end on our own small fixtures (so the
pipelines are exercised on any machine, with or without the shared data sets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chateval.memory.systems  # noqa: F401  (registers the built-in systems)
from chateval.cli import main
from chateval.datasets import load_longmemeval
from chateval.memory import MEMORY_SYSTEMS
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec

from .conftest import FIXTURES, local_systems

LME = FIXTURES / "lme_tiny.json"
@pytest.mark.parametrize("name", local_systems())
async def test_every_system_ingests_recalls_answers_and_resets(name):
    q = next(q for q in load_longmemeval(LME) if q.question_id == "t_garden")
    system = MEMORY_SYSTEMS.get(name)(ModelLayer(ModelSpec.parse("offline")), embedder=make_embedder("hash", cache=False))
    try:
        await system.ingest_all(q.sessions)
        resp = await system.respond(q.question, q.question_date)
        assert resp.answer.strip() and resp.context_tokens >= 0
        turn_ids = {t.id for s in q.sessions for t in s.turns}
        for item in resp.recalled:  # provenance points into the ingested data
            assert item.session_id in {s.id for s in q.sessions} and set(item.turn_ids) <= turn_ids
        stats = system.stats()
        assert stats.sessions == len(q.sessions)
        system.reset()
        assert system.stats().sessions == 0 and system.item_count() == 0
    finally:
        system.close()


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_faireval_on_our_fixture(tmp_path):
    out = tmp_path / "fe"
    assert main(["bench", "faireval", "--data", str(FIXTURES / "faireval_tiny.jsonl"), "--out", str(out),
                 "--no-cache"]) == 0
    s = _summary(out)
    assert s["n_items"] == 6 and set(s["settings"]) == {"single", "multi"} and s["n_failed"] == 0
    assert {r["system"] for r in s["headline"]} == {"single", "multi"}
    acc = s["settings"]["multi"]["metrics"]["accuracy"]
    assert acc["n"] == 6 and 0 <= acc["value"] <= 1


def test_topical_chat_on_our_fixture(tmp_path):
    out = tmp_path / "tc"
    assert main(["bench", "topical-chat", "--data", str(FIXTURES / "topical_chat_tiny.json"), "--out", str(out),
                 "--setting", "multi", "--baselines", "rouge_l,bleu4", "--no-cache"]) == 0
    s = _summary(out)
    assert s["n_items"] == 9 and s["n_failed"] == 0
    assert set(s["baselines"]["metrics"]) >= {"rouge_l", "bleu4"}
