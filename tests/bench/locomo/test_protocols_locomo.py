"""LoCoMo's protocol choices (issue 14): its short-phrase answer style as the default, and an
explicit, counted choice for the evidence recall of QA that list no evidence ids."""

from __future__ import annotations

import json

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES

LOCOMO = FIXTURES / "locomo_tiny.json"


def run(out, server, *extra: str) -> dict:
    assert main(["bench", "locomo", "--data", str(LOCOMO), "--systems", "retrieval", "--answer-model",
                 "openai-compatible/x", "--base-url", server.base_url, "--embedder", "hash", "--out", str(out),
                 "--structured", "off", *extra]) in (0, 1)
    return json.loads((out / "summary.json").read_text())


def answer_prompts(server) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests
            if any(head in r["messages"][-1]["content"]  # our framing, or the official one (the default)
                   for head in ("Memory of past conversations", "Below is your memory of earlier conversations"))]


@pytest.mark.slow
def test_answer_style_reaches_the_answer_prompt(tmp_path):
    with FakeOpenAIServer(responder=lambda body: '{"facts": []}') as server:
        s = run(tmp_path / "a", server)
        locomo_style = answer_prompts(server)
        server.reset()
        run(tmp_path / "b", server, "--answer-style", "generic")
        generic = answer_prompts(server)
    assert locomo_style and all("short phrase" in p and "exact words" in p for p in locomo_style)
    assert generic and all("Answer the question concisely." in p and "short phrase" not in p for p in generic)
    assert s["answer_style"] == "locomo"
    assert "answer style: locomo" in (tmp_path / "a" / "report.md").read_text()


@pytest.mark.slow
def test_no_evidence_choice_is_explicit_and_counted(tmp_path):
    data = json.loads(LOCOMO.read_text())
    qa = data[0]["qa"] if isinstance(data, list) else data["qa"]
    qa[0]["evidence"] = []  # one QA without evidence ids
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    summaries = {}
    for choice in ("one", "exclude"):
        out = tmp_path / choice
        assert main(["bench", "locomo", "--data", str(path), "--systems", "retrieval", "--embedder", "hash",
                     "--out", str(out), "--evidence-empty", choice]) == 0
        summaries[choice] = json.loads((out / "summary.json").read_text())
        rows = [q for line in (out / "samples.jsonl").read_text().splitlines() for q in json.loads(line)["qa"]]
        empty = [q for q in rows if q["no_evidence"]]
        assert len(empty) == 1 and empty[0]["evidence_recall"] == (1.0 if choice == "one" else None)
        report = (out / "report.md").read_text()
        assert "QA listing no evidence ids" in report and "retrieval 1" in report
    one, exc = (summaries[c]["systems"]["retrieval"] for c in ("one", "exclude"))
    assert one["n_no_evidence"] == exc["n_no_evidence"] == 1
    assert one["overall"]["n_evidence_recall"] == exc["overall"]["n_evidence_recall"] + 1
    assert summaries["one"]["evidence_empty"] == "one" and summaries["exclude"]["evidence_empty"] == "exclude"


def test_each_answer_records_the_context_the_model_was_given(tmp_path):
    from chateval.view import load_run

    out = tmp_path / "a"
    assert main(["bench", "locomo", "--data", str(LOCOMO), "--systems", "full_context", "--answer-model", "offline",
                 "--embedder", "hash", "--out", str(out)]) == 0
    first_turn = json.loads(LOCOMO.read_text())[0]["conversation"]["session_1"][0]["text"]
    rows = [qa for line in (out / "samples.jsonl").read_text().splitlines() for qa in json.loads(line)["qa"]]
    assert rows and all(first_turn in qa["context"] for qa in rows)  # full_context: the whole conversation
    views = load_run(out).samples  # and the viewer shows it, per question
    assert len(views) == len(rows) and all(first_turn in "\n".join(x for x, _ in s.context_gold) for s in views)
