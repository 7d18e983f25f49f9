"""`chateval bench teafarm` (THEANINE's TeaFarm), offline: data detection, the offline
counterfactual generator, the dialogue the systems get, and end-to-end runs on the sample MSC
episode and a LoCoMo slice, with the generated questions reused by a second run."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chateval.bench import plots
from chateval.bench.teafarm import teabag as tb
from chateval.datasets.conversations import load_conversations
from chateval.datasets.teabag import TEABAG_FILE, TEABAG_FORMAT
from chateval.cli import main
from chateval.datasets import DatasetError
from chateval.memory.base import last_user_text
from chateval.util.prompts import get_prompts

from ...conftest import FIXTURES, SHARED, needs_shared, read_jsonl

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
        assert last_user_text(d) == q.question  # what respond() answers


def test_generation_prompts_render_every_field():
    prompts = get_prompts()
    summaries = [summary("s1", ("Speaker A", "I was captain of my football team."))]
    text = "\n".join(m.content for m in tb.GENERATE_QUESTIONS.messages(tb.QuestionInputs(
        speakers=["Speaker A", "Speaker B"], asker="Speaker A", listener="Speaker B", summaries=summaries, n=3), prompts))
    for needle in ("Write 3 questions that Speaker A could ask Speaker B", "Session 1 (2024-01-01)",
                   "I was captain of my football team.", '"questions"'):
        assert needle in text, needle
    assert "s1" not in text  # sessions by position, never by a data set's id (issue 34)
    text = "\n".join(m.content for m in tb.SIMULATE_SESSION.messages(tb.SessionInputs(
        speakers=["Speaker A", "Speaker B"], asker="Speaker B", listener="Speaker A", summaries=summaries,
        question="Remember my basketball team?", fact="football team", date=D), prompts))
    for needle in ("starting with Speaker B", "Remember my basketball team?", "football team", "2024-01-01",
                   "I was captain of my football team."):
        assert needle in text, needle
    assert "s1" not in text


def test_a_cited_session_number_is_mapped_to_its_id():
    summaries = [summary("conv-1-session_1", ("Speaker A", "I ride.")), summary("conv-1-session_2", ("Speaker A", "I swim."))]
    assert tb.source_session("2", summaries) == "conv-1-session_2"
    assert tb.source_session("conv-1-session_1", summaries) == "conv-1-session_1"  # an id is kept
    assert tb.source_session("7", summaries) == "7"  # out of range: kept, matches nothing
    assert tb.Counterfactual.model_validate({"question": "q", "answer": "a", "session_id": 2}).session_id == "2"


# --- end to end -----------------------------------------------------------------------------------
@pytest.mark.slow
@needs_shared("theanine")
def test_teafarm_end_to_end_and_reuse_of_the_questions(tmp_path, capsys, monkeypatch):
    drawn = {}
    real = plots.grouped_bars

    def spy(path, groups, series, **kw):  # what the success-rate figure is given, then drawn as usual
        drawn[path.name] = (groups, series, kw)
        return real(path, groups, series, **kw)

    monkeypatch.setattr(plots, "grouped_bars", spy)
    out1 = tmp_path / "run1"
    assert teafarm(out1) == 0
    bag = json.loads((out1 / TEABAG_FILE).read_text())
    assert bag["format"] == TEABAG_FORMAT and bag["data_format"] == "msc" and bag["generator_model"] == "offline"
    (conv,) = bag["conversations"]
    assert len(conv["summaries"]) == 5
    qs = conv["questions"]
    # TeaBag's default: two questions per episode, one per speaker (both points of view)
    assert len(qs) == 2 and sorted(q["asker"] for q in qs) == ["Speaker A", "Speaker B"] and bag["per_speaker"] == 1
    for q in qs:
        assert q["fact"] and q["fact"] in q["answer"] and q["fact"] not in q["question"]
        assert q["listener"] != q["asker"] and q["turns"]

    summary = json.loads((out1 / "summary.json").read_text())
    assert summary["n_questions"] == 2 and summary["n_units"] == 4 and summary["n_failed"] == 0
    assert summary["offline"] and "offline" in summary["note"] and summary["judge"] == "single"
    assert not summary["generation"]["reused"] and summary["generation"]["usage"]["calls"] == 5 + 2 + 2
    rows = read_jsonl(out1 / "samples.jsonl")
    assert len(rows) == 4
    for name in ("theanine", "retrieval"):
        e = summary["systems"][name]
        mine = [r for r in rows if r["system"] == name]
        assert e["n_ok"] == 2 and e["n"] == 2 and e["ties"] == 0  # every question is in the denominator
        assert e["not_fooled"] == sum(r["correct"] is True for r in mine) and e["success_rate"] == e["not_fooled"] / 2
        assert e["ci95"][0] <= e["success_rate"] <= e["ci95"][1]
        assert set(e["by_pov"]) == {"speaker_1", "speaker_2"} and set(e["by_judge"]) == {"single"}
    for r in rows:
        assert r["status"] == "ok" and r["response"].startswith("[offline]")
        assert set(r["judge"]) >= {"single", "correct", "usage"} and "debate" not in r["judge"]
        assert r["correct"] == r["judge"]["single"]["correct"] and r["fooled"] is (not r["correct"])
        assert r["latency"]["judge_s"] >= 0 and r["context_tokens"] > 0
    for name in ("theanine", "retrieval"):  # each system ingests the past sessions once, for all its questions
        assert sum("ingest_s" in r["latency"] for r in rows if r["system"] == name) == 1
    report = (out1 / "report.md").read_text()
    assert "## Success rate" in report and "| theanine |" in report and "Example questions" in report
    # the figure: % like the table, the Wilson intervals of the summary, n under the bars
    groups, series, kw = drawn["success_rate.png"]
    assert kw["pct"] is True and groups == ["not fooled\n(n=2)"] and (out1 / "success_rate.png").exists()
    assert kw["intervals"] == {n: [tuple(summary["systems"][n]["ci95"])] for n in series}
    config = json.loads((out1 / "config.json").read_text())
    assert config["judging"]["judge"] == "single" and config["judging"]["judge_panel"] is None

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
    assert s3["generation"]["usage"]["calls"] == 0 and s3["n_units"] == 4


@pytest.mark.slow
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
    assert teafarm(tmp_path / "b", "--judge-protocol", "official") == 2
    one_line_error(capsys.readouterr().err, "--judge-protocol", "teafarm")
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


# --- issue 16: the paper's success rate, the judge choice, current-state questions ---------------
def test_success_rate_is_over_all_questions_and_ties_are_not_passed():
    from chateval.bench.teafarm.report import success_table, summarize_teafarm

    rows = [{"correct": True, "tie": False}, {"correct": False, "tie": False},
            {"correct": None, "tie": True}, {"correct": True, "tie": False}]
    t = success_table(rows)
    assert (t["n"], t["not_fooled"], t["fooled"], t["ties"]) == (4, 2, 1, 1)
    assert t["success_rate"] == 0.5  # 2 / 4, not 2 / 3
    # Per judge, from the verdicts kept for each; agreement counts only unsplit panels.
    recs = [{"system": "s", "status": "ok", "correct": c, "tie": False,
             "judge": {"single": {"correct": c}, "debate": {"correct": d, "tie": d is None}, "agreement": a}}
            for c, d, a in [(True, True, True), (True, None, None), (False, True, False)]]
    e = summarize_teafarm(recs, systems=["s"], offline=True, judge="both")["systems"]["s"]
    assert e["success_rate"] == pytest.approx(2 / 3) and e["ties"] == 0
    assert e["by_judge"]["debate"]["success_rate"] == pytest.approx(2 / 3) and e["by_judge"]["debate"]["ties"] == 1
    assert e["by_judge"]["debate"]["n"] == 3
    assert e["judge_agreement"] == {"n": 2, "rate": 0.5}


def tiny_teafarm(out: Path, *extra: str) -> int:
    return teafarm(out, "--limit", "1", *extra, data=FIXTURES / "locomo_tiny.json", systems="retrieval")


def test_judge_debate_and_both(tmp_path):
    assert tiny_teafarm(tmp_path / "d", "--judge", "debate") == 0
    s = json.loads((tmp_path / "d" / "summary.json").read_text())
    rows = read_jsonl(tmp_path / "d" / "samples.jsonl")
    e = s["systems"]["retrieval"]
    assert s["judge"] == "debate" and set(e["by_judge"]) == {"debate"}
    assert e["n"] == len(rows) and e["ties"] == sum(r["tie"] for r in rows)
    assert e["not_fooled"] == sum(r["correct"] is True for r in rows)
    for r in rows:
        assert r["judge"]["debate"]["agents"] and "single" not in r["judge"]
    config = json.loads((tmp_path / "d" / "config.json").read_text())["judging"]
    assert config["judge"] == "debate" and config["judge_panel"]["task"] == "correctness"

    assert tiny_teafarm(tmp_path / "b", "--judge", "both") == 0
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    rows = read_jsonl(tmp_path / "b" / "samples.jsonl")
    e = s["systems"]["retrieval"]
    assert set(e["by_judge"]) == {"single", "debate"} and e["success_rate"] == e["by_judge"]["single"]["success_rate"]
    unsplit = [r for r in rows if r["judge"]["debate"]["correct"] is not None]
    assert e["judge_agreement"]["n"] == len(unsplit)
    assert e["judge_agreement"]["rate"] == pytest.approx(
        sum(r["judge"]["debate"]["correct"] == r["judge"]["single"]["correct"] for r in unsplit) / len(unsplit))
    assert "Both judges" in (tmp_path / "b" / "report.md").read_text()


@pytest.mark.slow
def test_single_judge_request_on_the_wire(tmp_path):
    """The single judge gets TeaFarm's rule, the question, the true answer and the response (not the
    summaries); its verdict is the score."""
    from chateval.bench.teafarm.teafarm import JUDGE_RULE
    from chateval.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(responder=lambda body: '{"correct": false, "reason": "accepted the premise"}') as server:
        assert tiny_teafarm(tmp_path / "w", "--judge-model", "openai-compatible/judge", "--base-url",
                            server.base_url, "--generator-model", "offline", "--structured", "off") == 0
        sent = [r["messages"][-1]["content"] for r in server.requests]
    rows = read_jsonl(tmp_path / "w" / "samples.jsonl")
    assert len(sent) == len(rows) >= 2  # one judge call per question, nothing else went to the server
    for r in rows:
        prompt = next(p for p in sent if r["question"] in p)
        assert JUDGE_RULE in prompt and r["true_answer"] in prompt and r["response"] in prompt
        assert "Session 1 (" not in prompt  # the past summaries go to the panel only
        assert r["correct"] is False and r["fooled"] is True
    e = json.loads((tmp_path / "w" / "summary.json").read_text())["systems"]["retrieval"]
    assert e["success_rate"] == 0.0 and e["n"] == len(rows)


def test_questions_target_the_current_state_of_each_event():
    summaries = [
        summary("s1", ("A", "My dog Rex is three years old and loves the beach."),
                ("A", "I was captain of my high school football team.")),
        summary("s2", ("A", "Sadly my dog Rex died last month, I miss him every day.")),
    ]
    summaries[1].date = datetime(2024, 3, 1, tzinfo=timezone.utc)
    current = [e.event for _, e in tb.current_events(summaries, "A")]
    assert current == ["I was captain of my high school football team.",
                       "Sadly my dog Rex died last month, I miss him every day."]
    out = tb.offline_counterfactuals(tb.QuestionInputs(speakers=["A", "B"], asker="A", listener="B",
                                                       summaries=summaries, n=3))
    assert out.questions and not any("three years old" in q.fact for q in out.questions)
    # Time order decides, not list order.
    assert [e.event for _, e in tb.current_events(summaries[::-1], "A")] == current
    text = "\n".join(m.content for m in tb.GENERATE_QUESTIONS.messages(tb.QuestionInputs(
        speakers=["A", "B"], asker="A", listener="B", summaries=summaries, n=1), get_prompts()))
    assert "a later session can update what an earlier one said" in text and "current state" in text


def test_questions_file_with_a_malformed_question_is_refused(tmp_path, capsys):
    data = FIXTURES / "locomo_tiny.json"
    assert tiny_teafarm(tmp_path / "ok") == 0
    bag = json.loads((tmp_path / "ok" / TEABAG_FILE).read_text())
    capsys.readouterr()
    del bag["conversations"][0]["questions"][0]["answer"]
    path = tmp_path / "bag.json"
    path.write_text(json.dumps(bag))
    assert teafarm(tmp_path / "r", "--limit", "1", "--questions", str(path), data=data, systems="retrieval") == 2
    one_line_error(capsys.readouterr().err, str(path), "conversations.0.questions.0.answer")
    assert not (tmp_path / "r").exists()
