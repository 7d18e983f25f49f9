"""`chateval bench teafarm` (THEANINE's TeaFarm), offline: data detection, the offline
counterfactual generator, the dialogue the systems get, and end-to-end runs on the sample MSC
episode and a LoCoMo slice, with the generated questions reused by a second run."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chateval.bench import teabag as tb
from chateval.datasets.conversations import load_conversations
from chateval.datasets.teabag import TEABAG_FILE, TEABAG_FORMAT
from chateval.cli import main
from chateval.datasets import DatasetError
from chateval.memory.base import _last_user_text
from chateval.prompts import get_prompts

from .conftest import FIXTURES, SHARED, needs_shared, read_jsonl

SAMPLE = SHARED / "theanine" / "sample_dialogue.json"
LOCOMO = SHARED / "locomo" / "locomo_dev2.json"
OFFLINE = ["--answer-model", "offline", "--embedder", "hash"]
D = datetime(2024, 1, 1, tzinfo=timezone.utc)


def teafarm(out: Path, *extra: str, data: Path = SAMPLE, systems: str = "theanine,retrieval") -> int:
    return main(["bench", "teafarm", "--data", str(data), "--systems", systems, *OFFLINE, "--out", str(out), *extra])


def one_line_error(err: str, *needles: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], (n, lines[0])


# --- data ---------------------------------------------------------------------------------------
@needs_shared("theanine")
@needs_shared("locomo")
def test_both_input_formats_are_detected(tmp_path):
    kind, convs = load_conversations(SAMPLE)
    assert kind == "msc" and [c.id for c in convs] == ["msc-episode-30"] and len(convs[0].sessions) == 5
    assert convs[0].speakers == ["Speaker A", "Speaker B"]
    kind, convs = load_conversations(LOCOMO)
    assert kind == "locomo" and [c.id for c in convs] == ["conv-26", "conv-30"]
    other = tmp_path / "x.json"
    other.write_text(json.dumps([{"question_id": "q", "haystack_sessions": []}]))
    with pytest.raises(DatasetError, match="neither a LoCoMo file"):
        load_conversations(other)


# --- the offline generator ----------------------------------------------------------------------
def test_counterfactual_edit_changes_one_detail():
    assert tb.counterfactual_edit("I was captain of my high school football team.", []) == (
        "I was captain of my high school basketball team.", "football", "basketball")
    assert tb.counterfactual_edit("We adopted 2 cats in May.", [])[1:] == ("2", "3")
    assert tb.counterfactual_edit("Christmas is my favourite.", [])[0] == "Thanksgiving is my favourite."
    changed, old, new = tb.counterfactual_edit("I restored an antique wardrobe", ["my neighbour sells furniture"])
    assert (old, new) == ("wardrobe", "furniture") and changed == "I restored an antique furniture"
    assert tb.counterfactual_edit("ok", []) is None


def summary(sid: str, *events: tuple[str, str]) -> tb.SessionSummary:
    return tb.SessionSummary(session_id=sid, date=D, events=[tb.SpeakerEvent(speaker=s, event=e) for s, e in events])


def test_offline_questions_presuppose_a_changed_past_and_answers_correct_it():
    summaries = [
        summary("s1", ("A", "I was captain of my high school football team."), ("B", "I won my race at the last meet.")),
        summary("s2", ("A", "Do you like horror movies or comedy?"), ("A", "My sister gave me a red guitar for my birthday.")),
    ]
    out = tb.offline_counterfactuals(tb.QuestionInputs(speakers=["A", "B"], asker="A", listener="B",
                                                       summaries=summaries, n=2))
    assert len(out.questions) == 2
    q1, q2 = out.questions
    assert "basketball team" in q1.question and "football" not in q1.question
    assert "football" in q1.answer and q1.fact == "I was captain of my high school football team." and q1.session_id == "s1"
    assert q2.session_id == "s2" and "brother" in q2.question and "sister" in q2.answer  # questions are never facts
    again = tb.offline_counterfactuals(tb.QuestionInputs(speakers=["A", "B"], asker="A", listener="B",
                                                         summaries=summaries, n=2))
    assert again == out  # deterministic


def test_the_dialogue_ends_with_the_question_whoever_asks():
    for asker, listener in (("Speaker A", "Speaker B"), ("Speaker B", "Speaker A")):
        q = tb.TeaQuestion(id="q1", asker=asker, listener=listener, question="Remember my basketball team?",
                           answer="It was football.", date=D,
                           turns=[tb.SimTurn(speaker=asker, text="Hi!"), tb.SimTurn(speaker=listener, text="Hello!")])
        d = q.dialogue()
        assert [t.role for t in d] == [f"{asker} (user)", f"{listener} (you)", f"{asker} (user)"]
        assert d[-1].content == q.question
        assert _last_user_text(d) == q.question  # what respond() answers


def test_generation_prompts_render_every_field():
    prompts = get_prompts()
    summaries = [summary("s1", ("Speaker A", "I was captain of my football team."))]
    text = "\n".join(m.content for m in tb.GENERATE_QUESTIONS.messages(tb.QuestionInputs(
        speakers=["Speaker A", "Speaker B"], asker="Speaker A", listener="Speaker B", summaries=summaries, n=3), prompts))
    for needle in ("Write 3 questions that Speaker A could ask Speaker B", "Session s1 (2024-01-01)",
                   "I was captain of my football team.", '"questions"'):
        assert needle in text, needle
    text = "\n".join(m.content for m in tb.SIMULATE_SESSION.messages(tb.SessionInputs(
        speakers=["Speaker A", "Speaker B"], asker="Speaker B", listener="Speaker A", summaries=summaries,
        question="Remember my basketball team?", fact="football team", date=D), prompts))
    for needle in ("starting with Speaker B", "Remember my basketball team?", "football team", "2024-01-01",
                   "I was captain of my football team."):
        assert needle in text, needle


# --- end to end -----------------------------------------------------------------------------------
@needs_shared("theanine")
def test_teafarm_end_to_end_and_reuse_of_the_questions(tmp_path, capsys):
    out1 = tmp_path / "run1"
    assert teafarm(out1) == 0
    bag = json.loads((out1 / TEABAG_FILE).read_text())
    assert bag["format"] == TEABAG_FORMAT and bag["data_format"] == "msc" and bag["generator_model"] == "offline"
    (conv,) = bag["conversations"]
    assert len(conv["summaries"]) == 5
    qs = conv["questions"]
    assert len(qs) == 4 and sorted(q["asker"] for q in qs) == ["Speaker A"] * 2 + ["Speaker B"] * 2  # both points of view
    for q in qs:
        assert q["fact"] and q["fact"] in q["answer"] and q["fact"] not in q["question"]
        assert q["listener"] != q["asker"] and q["turns"]

    summary = json.loads((out1 / "summary.json").read_text())
    assert summary["n_questions"] == 4 and summary["n_units"] == 8 and summary["n_failed"] == 0
    assert summary["offline"] and "offline" in summary["note"]
    assert not summary["generation"]["reused"] and summary["generation"]["usage"]["calls"] == 5 + 2 + 4
    for name in ("theanine", "retrieval"):
        e = summary["systems"][name]
        assert e["n_ok"] == 4 and e["n"] + e["ties"] == 4
        if e["n"]:
            assert 0 <= e["success_rate"] <= 1 and e["ci95"][0] <= e["success_rate"] <= e["ci95"][1]
        assert set(e["by_pov"]) == {"speaker_1", "speaker_2"}
    rows = read_jsonl(out1 / "samples.jsonl")
    assert len(rows) == 8
    for r in rows:
        assert r["status"] == "ok" and r["response"].startswith("[offline]")
        assert r["judge"]["agents"] and r["fooled"] is (None if r["correct"] is None else not r["correct"])
        assert r["latency"]["judge_s"] >= 0 and r["context_tokens"] > 0
    for name in ("theanine", "retrieval"):  # each system ingests the past sessions once, for all 4 questions
        assert sum("ingest_s" in r["latency"] for r in rows if r["system"] == name) == 1
    report = (out1 / "report.md").read_text()
    assert "## Success rate" in report and "| theanine |" in report and "Example questions" in report
    config = json.loads((out1 / "config.json").read_text())
    assert config["judging"]["judge"] == "debate-correctness" and config["judging"]["judge_panel"]

    # A later run meets the same questions: nothing is generated again.
    out2 = tmp_path / "run2"
    assert teafarm(out2, "--questions", str(out1 / TEABAG_FILE), systems="full_context") == 0
    s2 = json.loads((out2 / "summary.json").read_text())
    gen = s2["generation"]
    assert gen["reused"] and gen["generated_conversations"] == []
    assert gen["usage"]["calls"] == 0 and gen["usage"]["cached_calls"] == 0
    assert json.loads((out2 / TEABAG_FILE).read_text()) == bag
    assert {r["question"] for r in read_jsonl(out2 / "samples.jsonl")} == {q["question"] for q in qs}
    assert "reused from" in (out2 / "report.md").read_text()

    # --resume of the first run reuses its own TeaBag and has nothing left to do.
    assert teafarm(out1, "--resume") == 0
    s3 = json.loads((out1 / "summary.json").read_text())
    assert s3["generation"]["usage"]["calls"] == 0 and s3["n_units"] == 8


@needs_shared("locomo")
def test_teafarm_on_locomo(tmp_path):
    out = tmp_path / "locomo"
    assert teafarm(out, "--limit", "1", "--per-speaker", "1", data=LOCOMO, systems="theanine") == 0
    bag = json.loads((out / TEABAG_FILE).read_text())
    (conv,) = bag["conversations"]
    assert conv["id"] == "conv-26" and conv["speakers"] == ["Caroline", "Melanie"]
    assert len(conv["summaries"]) == 19 and len(conv["questions"]) == 2
    assert not any("[shares a photo" in e["event"] for s in conv["summaries"] for e in s["events"])
    rows = read_jsonl(out / "samples.jsonl")
    assert sorted(r["pov"] for r in rows) == ["speaker_1", "speaker_2"]
    assert {r["asker"] for r in rows} == {"Caroline", "Melanie"}


@needs_shared("theanine")
def test_bad_options_are_one_line_errors(tmp_path, capsys):
    assert teafarm(tmp_path / "a", "--per-speaker", "0") == 2
    one_line_error(capsys.readouterr().err, "--per-speaker")
    assert teafarm(tmp_path / "b", "--judge", "single") == 2
    one_line_error(capsys.readouterr().err, "--judge", "teafarm")
    bad = tmp_path / "bag.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    assert teafarm(tmp_path / "c", "--questions", str(bad)) == 2
    one_line_error(capsys.readouterr().err, "TeaBag")
    assert teafarm(tmp_path / "d", systems="nope") == 2
    one_line_error(capsys.readouterr().err, "nope")


def test_questions_file_of_the_wrong_shape_is_refused_not_regenerated(tmp_path, capsys):
    data = FIXTURES / "locomo_tiny.json"
    assert teafarm(tmp_path / "ok", "--limit", "1", data=data, systems="retrieval") == 0
    bag = json.loads((tmp_path / "ok" / TEABAG_FILE).read_text())
    capsys.readouterr()
    other = {**bag, "conversations": [{**c, "id": "from-other-data"} for c in bag["conversations"]]}
    for i, (content, needle) in enumerate([({"a": 1}, "not a TeaBag questions file"),
                                           ([bag], "not a TeaBag questions file"),
                                           ({**bag, "conversations": []}, "no questions for conversation(s)"),
                                           (other, "no questions for conversation(s)")]):
        path = tmp_path / f"bag{i}.json"
        path.write_text(json.dumps(content))
        out = tmp_path / f"run{i}"
        assert teafarm(out, "--limit", "1", "--questions", str(path), data=data, systems="retrieval") == 2
        one_line_error(capsys.readouterr().err, str(path), needle)
        assert not out.exists()  # refused before anything was generated or written
