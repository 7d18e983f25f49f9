"""ChatEval's published settings as defaults (issue 28, items 7-9): the single-agent setting
(no persona, no panel framing, one call per order), the three-role panels, FairEval's scoring
of unreadable verdicts as ties, and max_tokens 512 in the meta-benchmarks. Asserted on the
requests the fake OpenAI server received and on the computed metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from chateval import Evaluator
from chateval.bench.judge_meta.faireval import FairEval
from chateval.calibration.grid import DEFAULT_GRID, resolve
from chateval.cli import main
from chateval.evaluation.config import EvalConfig
from chateval.debate import NO_PERSONA, PersonaLibrary
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import read_jsonl

LABELS = ["1", "2", "tie"]
# question text -> what the fake judge replies (scores in plain text; the garbage one is unreadable)
QUESTIONS = {
    "Name a prime number.": ("gpt35", "Score of Assistant 1: 8\nScore of Assistant 2: 4"),
    "Is the sky green?": ("tie", "I would rather not say which is better."),  # unreadable, twice (with re-ask)
    "Spell 'cat'.": ("vicuna", "Score of Assistant 1: 9\nScore of Assistant 2: 2"),  # the judge is wrong here
}
PANEL_WORDS = ("referee", "panel", "judge alone", "Round 1", "moderator", "Your persona", "persona")


def write_faireval(tmp_path: Path) -> Path:
    path = tmp_path / "faireval.jsonl"
    rows = [{"question_id": i + 1, "category": "generic", "question": q, "answer_gpt35": f"gpt answer {i}",
             "answer_vicuna13b": f"vicuna answer {i}", "human_label": label}
            for i, (q, (label, _)) in enumerate(QUESTIONS.items())]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def responder(body: dict) -> str:
    system = body["messages"][0]["content"]
    for q, (_, reply) in QUESTIONS.items():
        if q in system:
            return reply
    raise AssertionError("unknown question")


def bench_faireval(tmp_path: Path, server: FakeOpenAIServer, *args: str, out: str = "fe") -> int:
    return main(["bench", "faireval", "--data", str(write_faireval(tmp_path)), "--out", str(tmp_path / out),
                 "--model", "openai-compatible/judge", "--base-url", server.base_url, "--no-cache",
                 "--structured", "off", *args])


def persona_texts() -> list[str]:
    return [p.role[:60] for p in PersonaLibrary().all()] + [p.name for p in PersonaLibrary().all()]


# --- item 7: the single-agent setting ------------------------------------------------------
@pytest.mark.parametrize("swap, calls", [([], 2), (["--no-swap"], 1)])
def test_faireval_single_sends_no_persona_no_panel_framing_one_call_per_order(tmp_path, swap, calls):
    with FakeOpenAIServer(responder=lambda body: QUESTIONS["Name a prime number."][1]) as server:
        assert bench_faireval(tmp_path, server, "--setting", "single", "--limit", "1", *swap) == 0
        requests = server.requests
    assert len(requests) == calls  # one turn, one agent: one call (two with position calibration)
    for req in requests:
        assert [m["role"] for m in req["messages"]] == ["system", "user"]
        sent = json.dumps(req["messages"])
        for text in persona_texts():
            assert text not in sent, text
        for word in PANEL_WORDS:
            assert word.lower() not in sent.lower(), word
        assert "Prime" in sent or "prime" in sent  # the item itself was sent
    summary = json.loads((tmp_path / "fe" / "single" / "summary.json").read_text())
    assert summary["panel"]["agents"] == 1 and summary["panel"]["personas"] == ["judge"]


def test_multi_setting_keeps_the_personas_and_panel_framing(tmp_path):
    with FakeOpenAIServer(responder=lambda body: QUESTIONS["Name a prime number."][1]) as server:
        assert bench_faireval(tmp_path, server, "--setting", "multi", "--limit", "1", "--no-swap") == 0
        first = json.dumps(server.requests[0]["messages"])
    assert "referee on a panel of 2" in first and PersonaLibrary().get("general_public").role[:60] in first


def test_calibrate_single_baseline_and_single_preset_are_the_persona_less_judge():
    base = EvalConfig(task="pairwise", personas=["critic", "scientist"])
    cfg = resolve(DEFAULT_GRID[0], base, "single")
    assert (cfg.framing, cfg.agents, cfg.turns) == ("none", 1, 1)
    assert Evaluator(cfg).personas == [NO_PERSONA]  # the base panel's personas are not used
    assert Evaluator.from_preset("single").personas == [NO_PERSONA]


def test_framing_none_refuses_a_panel(tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "q", "answer_1": "x", "answer_2": "y"}) + "\n")
    assert main(["evaluate", str(data), "--out", str(tmp_path / "o"), "--framing", "none", "--agents", "2",
                 "--turns", "1"]) == 2
    err = capsys.readouterr().err
    assert "--framing none" in err and "Traceback" not in err and not (tmp_path / "o").exists()


# --- item 8: ChatEval's three roles ----------------------------------------------------------
@pytest.mark.parametrize("preset", ["one_by_one_3x2", "simultaneous_3x2", "simultaneous_summarizer_3x2"])
def test_three_agent_presets_use_chatevals_three_roles(preset):
    assert [p.slug for p in Evaluator.from_preset(preset).personas] == ["general_public", "critic", "news_author"]


def test_growing_a_panel_adds_chatevals_roles_in_order():
    assert [p.slug for p in Evaluator(agents=3).personas] == ["general_public", "critic", "news_author"]
    assert [p.slug for p in Evaluator.from_preset("chateval_default", agents=3).personas] == \
        ["general_public", "critic", "news_author"]


# --- item 9: unreadable verdicts are ties; max_tokens 512 --------------------------------------
def test_faireval_counts_an_unreadable_verdict_as_a_tie(tmp_path):
    with FakeOpenAIServer(responder=responder) as server:
        assert bench_faireval(tmp_path, server, "--setting", "single", "--no-swap") == 1  # one unit failed
        requests = server.requests
    assert {r["max_tokens"] for r in requests} == {512}  # the official limit, by default
    assert len(requests) == 4  # three items, and one re-ask of the unreadable reply
    m = json.loads((tmp_path / "fe" / "summary.json").read_text())["settings"]["single"]["metrics"]
    gold, pred = ["1", "tie", "2"], ["1", "tie", "1"]  # q1, q2 (unreadable -> tie), q3 (wrong)
    assert m["unreadable"] == 1 and m["unreadable_as"] == "tie"
    assert m["accuracy"]["value"] == pytest.approx(2 / 3) and m["accuracy"]["n"] == 3
    assert m["kappa"]["value"] == pytest.approx(cohen_kappa_score(gold, pred, labels=LABELS))
    assert m["kappa"]["n"] == 3
    records = {r["key"]: r for r in read_jsonl(tmp_path / "fe" / "single" / "samples.jsonl")}
    assert records["q2"]["status"] == "failed" and records["q2"]["pred"] is None  # the record stays as it was
    assert "counted as ties" in (tmp_path / "fe" / "single" / "report.md").read_text()


def test_faireval_unreadable_exclude_leaves_the_question_out(tmp_path):
    with FakeOpenAIServer(responder=responder) as server:
        assert bench_faireval(tmp_path, server, "--setting", "single", "--no-swap", "--unreadable", "exclude",
                              "--max-tokens", "300") == 1
        assert {r["max_tokens"] for r in server.requests} == {300}  # an option, as before
    m = json.loads((tmp_path / "fe" / "summary.json").read_text())["settings"]["single"]["metrics"]
    assert m["unreadable"] == 1 and m["unreadable_as"] == "exclude"
    assert m["accuracy"]["value"] == pytest.approx(1 / 2) and m["accuracy"]["n"] == 2
    assert m["kappa"]["value"] == pytest.approx(cohen_kappa_score(["1", "2"], ["1", "1"], labels=LABELS))


def test_failed_calls_are_not_unreadable_verdicts():
    recs = [{"key": "q1", "status": "ok", "human": "1", "pred": "1"},
            {"key": "q2", "status": "failed", "human": "2", "pred": None, "agents": [],
             "error": "HTTP 500"},  # no reply at all: left out in both modes
            {"key": "q3", "status": "failed", "human": "tie", "pred": None,
             "agents": [{"agent": "Judge", "parse_error": "no scores"}]}]
    m = FairEval().metrics(recs)
    assert m["unreadable"] == 1 and m["accuracy"]["n"] == 2 and m["accuracy"]["value"] == 1.0
