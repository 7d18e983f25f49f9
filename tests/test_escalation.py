"""--escalate (the single judge in both orders first; the panel only where they differ) and
--stop-early (rounds skipped once every debater's provisional verdict agrees): offline, and
against the fake OpenAI server, counting the requests it received per item; the run identity
(--resume refuses a changed setting); the judge benchmark's paired multi vs multi-escalate and
calibrate's grid key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chateval.cli import main
from chateval.evaluation.evaluator import Evaluator
from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import read_jsonl

# Items q0..q5: each has a GOOD and a BAD answer. On AGREE items the single judge prefers GOOD
# in both orders; on the others it prefers whichever answer it is shown first (position bias),
# so its two orders disagree and the item escalates.
AGREE = {"q0", "q1", "q3", "q5"}
ITEMS = [f"q{i}" for i in range(6)]


def _write_items(path: Path) -> Path:
    rows = [{"id": q, "question": f"Question {q}: what is item {q}?", "answer_1": f"GOOD-{q} answer",
             "answer_2": f"BAD-{q} answer", "label": "1"} for q in ITEMS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


def _item(body: dict[str, Any]) -> str:
    # A summarizer's request holds no answers, only the replies, which name their item.
    return re.search(r"(?:GOOD-|assessment of )(q\d+)", _text(body)).group(1)


def _prefers_good_first(body: dict[str, Any]) -> tuple[int, int]:
    """Scores (Assistant 1, Assistant 2) preferring the GOOD answer, wherever it is shown."""
    text = _text(body)  # the answers are shown once, before any debater's message
    good_first = text.index("GOOD-") < text.index("BAD-")
    return (8, 3) if good_first else (3, 8)


def _scores(body: dict[str, Any], s1: int, s2: int) -> str:
    return f"My assessment of {_item(body)}.\nScore of Assistant 1: {s1}\nScore of Assistant 2: {s2}"


def judge_responder(body: dict[str, Any]) -> str:
    """Panel debaters (several agents) always prefer GOOD; the single judge (a panel of one)
    prefers GOOD on AGREE items and the first answer shown on the others."""
    single = "Critic" not in _text(body)  # the default 2-agent panel is General Public + Critic
    if single and _item(body) not in AGREE:
        return _scores(body, 8, 3)
    return _scores(body, *_prefers_good_first(body))


def _fake(server: FakeOpenAIServer) -> list[str]:
    return ["--model", "openai-compatible/judge", "--base-url", server.base_url, "--max-retries", "0",
            "--structured", "off", "--no-cache"]


def _per_item(server: FakeOpenAIServer) -> dict[str, int]:
    out = {q: 0 for q in ITEMS}
    for body in server.requests:
        out[_item(body)] += 1
    return out


@pytest.mark.slow
def test_escalate_against_the_fake_server_counts_the_calls_saved(tmp_path, capsys):
    data = _write_items(tmp_path / "items.jsonl")
    with FakeOpenAIServer(responder=judge_responder) as server:
        assert main(["evaluate", str(data), "--out", str(tmp_path / "panel"), *_fake(server)]) == 0
        panel_only = _per_item(server)
        server.reset()
        assert main(["evaluate", str(data), "--out", str(tmp_path / "esc"), "--escalate", *_fake(server)]) == 0
        escalated = _per_item(server)
    printed = " ".join(capsys.readouterr().err.split())  # the summary table (wrapped to the terminal)
    assert "escalated (--escalate)" in printed and "2 of 6 to the panel; 4 calls saved" in printed
    # The panel alone: 2 agents x 2 rounds on every item.
    assert panel_only == {q: 4 for q in ITEMS}
    # Escalated: the single judge in both orders (2 calls), plus the panel's 4 where it disagreed.
    assert escalated == {q: 2 if q in AGREE else 2 + 4 for q in ITEMS}
    recs = {r["id"]: r for r in read_jsonl(tmp_path / "esc" / "samples.jsonl")}
    for q in ITEMS:
        e = recs[q]["escalation"]
        assert e["escalated"] == (q not in AGREE)
        assert recs[q]["calls"] == escalated[q] and e["screen_calls"] == 2
        assert e["panel_calls"] == (0 if q in AGREE else 4)
        assert [t["stage"] for t in recs[q]["transcript"]][:2] == ["screen", "screen"]
        assert recs[q]["verdict"]["winner"] == "1"  # GOOD is answer 1: the single judge or the panel found it
    s = json.loads((tmp_path / "esc" / "summary.json").read_text())["escalation"]
    assert s["n_escalated"] == len(ITEMS) - len(AGREE) and s["calls_used"] == sum(escalated.values())
    assert s["panel_calls_per_item"] == 4 and s["panel_calls_basis"].startswith("measured")
    assert s["calls_saved"] == sum(panel_only.values()) - sum(escalated.values()) == 4
    report = (tmp_path / "esc" / "report.md").read_text()
    assert "2 of 6 items went to the panel" in report and "4 calls saved" in report
    # The panel-only run records nothing about escalation.
    assert "escalation" not in json.loads((tmp_path / "panel" / "summary.json").read_text())


def _speaker(body: dict[str, Any]) -> str:
    """The agent a request is for, from its persona framing ("You are Critic, ...")."""
    m = re.search(r"You are (General_Public|Critic)\b", _text(body))
    return m.group(1) if m else ""


def stop_responder(body: dict[str, Any]) -> str:
    """Both debaters prefer GOOD on AGREE items; on the others the Critic prefers BAD."""
    if "GOOD-" not in _text(body):
        return f"Summary of the round: the panel's assessment of {_item(body)} so far."
    s1, s2 = _prefers_good_first(body)
    if _item(body) not in AGREE and _speaker(body) == "Critic":
        s1, s2 = s2, s1
    return _scores(body, s1, s2)


@pytest.mark.parametrize("strategy", ["one_by_one", "simultaneous", "simultaneous_summarizer"])
def test_stop_early_skips_round_two_once_all_agree(tmp_path, capsys, strategy):
    data = _write_items(tmp_path / "items.jsonl")
    with FakeOpenAIServer(responder=stop_responder) as server:
        assert main(["evaluate", str(data), "--out", str(tmp_path / "run"), "--strategy", strategy,
                     "--stop-early", *_fake(server)]) == 0
        requests = server.requests
    capsys.readouterr()
    summarizer = strategy == "simultaneous_summarizer"
    per_item: dict[str, list[dict[str, Any]]] = {q: [] for q in ITEMS}
    for body in requests:
        per_item[_item(body)].append(body)
    for q, bodies in per_item.items():
        texts = [_text(b) for b in bodies]
        round2 = [t for t in texts if "Round 2 of 2" in t]
        if q in AGREE:
            assert len(bodies) == 2 and not round2  # round 1 only: no summary, no round 2
            assert all("provisional verdict" in t for t in texts)
        else:
            assert len(bodies) == 4 + (1 if summarizer else 0) and round2
    recs = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "samples.jsonl")}
    for q in ITEMS:
        st = recs[q]["stop_early"]
        assert st["rounds"] == {"original": 1 if q in AGREE else 2}
        assert st["calls_skipped"] == (2 + (1 if summarizer else 0) if q in AGREE else 0)
        assert recs[q]["calls"] == len(per_item[q])
    s = json.loads((tmp_path / "run" / "summary.json").read_text())["stop_early"]
    assert s["n_debates_stopped"] == len(AGREE) and s["rounds_skipped"] == len(AGREE)
    assert s["calls_skipped"] == len(AGREE) * (3 if summarizer else 2)
    assert "early stopping: 4 of 6 debates" in (tmp_path / "run" / "report.md").read_text()


def test_stop_early_unreadable_provisional_verdict_never_stops(tmp_path, capsys):
    data = _write_items(tmp_path / "items.jsonl")
    replies = lambda body: ("I need more discussion." if "Round 1 of 2" in str(body["messages"][-1].get("content"))
                            else _scores(body, 8, 3))
    with FakeOpenAIServer(responder=replies) as server:
        assert main(["evaluate", str(data), "--out", str(tmp_path / "run"), "--stop-early", "--limit", "2",
                     *_fake(server)]) == 0
        assert len(server.requests) == 2 * 4
    capsys.readouterr()


def test_stop_early_score_task_needs_identical_scores(tmp_path, capsys):
    rows = [{"id": "a", "question": "Q a?", "answer": "item-a"}, {"id": "b", "question": "Q b?", "answer": "item-b"}]
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def replies(body: dict[str, Any]) -> str:
        # item a: both say 7; item b: 7 and 8 (close, but not the same verdict).
        score = 8 if "item-b" in _text(body) and _speaker(body) == "Critic" else 7
        return f"Fine.\nScore: {score}"

    with FakeOpenAIServer(responder=replies) as server:
        assert main(["evaluate", str(data), "--out", str(tmp_path / "run"), "--task", "score", "--stop-early",
                     *_fake(server)]) == 0
    capsys.readouterr()
    recs = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "samples.jsonl")}
    assert recs["a"]["stop_early"]["rounds"] == {"original": 1} and recs["a"]["calls"] == 2
    assert recs["b"]["stop_early"]["rounds"] == {"original": 2} and recs["b"]["calls"] == 4


def test_escalate_refuses_other_tasks(tmp_path, capsys):
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "Q?", "answer": "x"}) + "\n")
    assert main(["evaluate", str(data), "--out", str(tmp_path / "run"), "--task", "score", "--escalate"]) == 2
    err = capsys.readouterr().err
    assert "--escalate applies only to the pairwise task" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag", ["--escalate", "--stop-early"])
def test_resume_refuses_a_changed_escalate_or_stop_early(tmp_path, capsys, flag):
    data = _write_items(tmp_path / "items.jsonl")
    out = str(tmp_path / "run")
    assert main(["evaluate", str(data), "--out", out, "--limit", "3"]) == 0
    before = (tmp_path / "run" / "samples.jsonl").read_text()
    capsys.readouterr()
    assert main(["evaluate", str(data), "--out", out, "--resume", flag]) == 2
    err = capsys.readouterr().err
    assert "different settings" in err and flag.lstrip("-").replace("-", "_") in err
    assert (tmp_path / "run" / "samples.jsonl").read_text() == before  # nothing lost
    # ... and the other way round: a run made with the flag does not resume without it.
    out2 = str(tmp_path / "run2")
    assert main(["evaluate", str(data), "--out", out2, "--limit", "3", flag]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(data), "--out", out2, "--resume"]) == 2
    assert flag.lstrip("-").replace("-", "_") in capsys.readouterr().err


# --- offline --------------------------------------------------------------------------------
def test_offline_default_is_unchanged_and_the_flags_change_only_what_they_say():
    args: dict[str, Any] = {"model": "offline", "cache": False, "agents": 3, "turns": 3}
    q, a1, a2 = "What is the capital of France?", "Paris is the capital of France.", "It is Lyon, I think"
    plain = Evaluator(**args).compare_sync(q, a1, a2)
    assert plain.escalation is None and plain.stop_early is None and plain.calls == 9
    stop = Evaluator(**args, stop_early=True).compare_sync(q, a1, a2)
    # The offline debaters agree after round 1: rounds 2 and 3 (6 calls) are skipped.
    assert stop.stop_early.rounds == {"original": 1} and stop.calls == 3 and stop.stop_early.calls_skipped == 6
    assert stop.verdict.winner == plain.verdict.winner
    esc = Evaluator(**args, escalate=True).compare_sync(q, a1, a2)
    # The offline heuristic is order-blind: its two orders always agree, so nothing escalates.
    assert esc.escalation.escalated is False and esc.calls == 2
    assert esc.escalation.panel_calls_planned == 9


@pytest.mark.parametrize("strategy", ["simultaneous", "simultaneous_summarizer"])
def test_offline_stop_early_in_the_simultaneous_strategies(strategy):
    ev = Evaluator(model="offline", cache=False, agents=3, turns=3, strategy=strategy, stop_early=True)
    r = ev.compare_sync("What is the capital of France?", "Paris is the capital of France.", "It is Lyon, I think")
    assert {t.round for t in r.transcript} == {1} and not [t for t in r.transcript if t.kind == "summary"]
    per_round = 3 + (1 if strategy == "simultaneous_summarizer" else 0)
    assert r.calls == 3 and r.stop_early.calls_skipped == 2 * per_round


@pytest.mark.slow
def test_faireval_bench_pairs_multi_escalate_with_multi(tmp_path, capsys):
    from .conftest import shared
    data = shared("faireval")
    out = tmp_path / "fe"
    assert main(["bench", "faireval", "--data", str(data), "--out", str(out), "--limit", "6", "--escalate",
                 "--no-cache"]) == 0
    capsys.readouterr()
    s = json.loads((out / "summary.json").read_text())
    assert set(s["settings"]) == {"single", "multi", "multi-escalate"}
    assert "escalation" not in s["settings"]["multi"] and s["settings"]["multi-escalate"]["escalation"]["n_items"] == 6
    # The escalated panel against the panel alone, paired over the same items (accuracy and kappa).
    pairs = {(c["a"], c["b"], c["metric"]) for c in s["comparisons"]}
    assert {("multi-escalate", "multi", "accuracy"), ("multi-escalate", "multi", "kappa")} <= pairs
    # FairEval judges both orders: the single judge's 2 calls per item, none escalated offline.
    e = s["settings"]["multi-escalate"]["escalation"]
    assert e["calls_used"] == 12 and e["panel_only_calls"] == 6 * 8


def test_calibrate_grid_key_compares_escalated_with_the_panel(tmp_path, capsys):
    from chateval.calibration import read_calibration

    from .conftest import FIXTURES
    out = tmp_path / "cal"
    assert main(["calibrate", str(FIXTURES / "calibrate_pairwise.jsonl"), "--out", str(out),
                 "--setting", "panel=chateval_default", "--setting", "esc=chateval_default,escalate=true",
                 "--baseline", "panel", "--no-cache"]) == 0
    capsys.readouterr()
    cal = read_calibration(out)
    assert cal.setting("esc").vs_baseline  # paired differences against the panel-only setting
    sub = json.loads((out / "esc" / "summary.json").read_text())
    assert sub["escalation"]["n_items"] == cal.n_items


@pytest.mark.slow
def test_topical_chat_stop_early_counts_every_aspect_debate(tmp_path, capsys):
    from .conftest import FIXTURES
    runs = {}
    for name, flags in (("plain", []), ("stop", ["--stop-early"])):
        assert main(["bench", "topical-chat", "--data", str(FIXTURES / "topical_chat_tiny.json"), "--out",
                     str(tmp_path / name), "--limit", "3", "--setting", "multi", "--baselines", "rouge_l",
                     "--no-cache", *flags]) == 0
        runs[name] = json.loads((tmp_path / name / "summary.json").read_text())["settings"]["multi"]
    capsys.readouterr()
    st = runs["stop"]["stop_early"]
    assert st["n_debates"] == 3 * 4  # 3 responses x 4 aspects, each its own debate
    # The calls the plain run made, less the ones skipped, are exactly the calls made.
    assert runs["plain"]["usage"]["calls"] - st["calls_skipped"] == runs["stop"]["usage"]["calls"]
    recs = read_jsonl(tmp_path / "stop" / "multi" / "samples.jsonl")
    assert sum(r["calls"] for r in recs) == runs["stop"]["usage"]["calls"]


def test_stop_early_asks_structured_provisional_verdicts(tmp_path, capsys):
    """With --structured on, the provisional verdict of a non-final round is asked for with the
    verdict's JSON schema, and a JSON reply is read by the same parser as a final one."""
    data = _write_items(tmp_path / "items.jsonl")

    def replies(body: dict[str, Any]) -> str:
        s1, s2 = _prefers_good_first(body)
        return json.dumps({"reasoning": f"assessment of {_item(body)}", "score_assistant_1": s1,
                           "score_assistant_2": s2})

    with FakeOpenAIServer(responder=replies) as server:
        args = [a for a in _fake(server) if a not in ("--structured", "off")]
        assert main(["evaluate", str(data), "--out", str(tmp_path / "run"), "--stop-early", "--structured", "on",
                     "--limit", "2", *args]) == 0
        bodies = server.requests
    capsys.readouterr()
    assert len(bodies) == 2 * 2 and all(b.get("response_format") for b in bodies)  # round 1 only, with a schema
    recs = read_jsonl(tmp_path / "run" / "samples.jsonl")
    assert all(r["verdict"]["winner"] == "1" and r["stop_early"]["rounds"] == {"original": 1} for r in recs)
