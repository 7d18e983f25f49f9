"""`chateval bench head2head`: Wilson intervals, A/B mapping of the panel's verdicts, offline
end-to-end runs on LongMemEval and LoCoMo slices, failures recorded per unit, bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.bench.head2head.pairs import load_cases
from chateval.bench.records import verdict_record
from chateval.bench.head2head.report import outcome_table, summarize_head2head
from chateval.bench.stats import wilson
from chateval.cli import main
from chateval.debate.panel import JudgeResult
from chateval.debate.samples import AgentVerdict, Verdict
from chateval.memory import MEMORY_SYSTEMS

from ...conftest import read_jsonl, shared

OFFLINE = ["--answer-model", "offline", "--embedder", "hash"]


@pytest.fixture(scope="module")
def lme3(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "lme3.json"
    path.write_text(json.dumps(json.loads(shared('longmemeval', 'longmemeval_oracle.json').read_text())[:3]))
    return path


@pytest.fixture(scope="module")
def locomo_tiny(tmp_path_factory) -> Path:
    """conv-26 cut to its first two sessions and five QAs (one of them adversarial, no answer)."""
    conv = json.loads(shared('locomo', 'locomo_dev2.json').read_text())[0]
    c = conv["conversation"]
    keep = {k: v for k, v in c.items() if not k.startswith("session_") or int(k.split("_")[1]) <= 2}
    early = [q for q in conv["qa"] if q["evidence"] and all(e.startswith(("D1:", "D2:")) for e in q["evidence"])]
    qa = early[:4] + [q for q in conv["qa"] if q["category"] == 5][:1]
    path = tmp_path_factory.mktemp("data") / "locomo_tiny.json"
    path.write_text(json.dumps([{"sample_id": conv["sample_id"], "conversation": keep, "qa": qa}]))
    return path


def h2h(data: Path, out: Path, *extra: str, systems: str = "full_context,retrieval") -> int:
    return main(["bench", "head2head", "--systems", systems, "--data", str(data), *OFFLINE, "--out", str(out), *extra])


def one_line_error(err: str, *needles: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:") and "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])


# --- statistics -----------------------------------------------------------------------------
def test_wilson_against_hand_computed_values():
    lo, hi = wilson(7, 10)
    assert lo == pytest.approx(0.3968, abs=1e-4) and hi == pytest.approx(0.8922, abs=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(0.7225, abs=1e-4) and hi == 1.0
    lo, hi = wilson(1, 2)
    assert lo == pytest.approx(0.0945, abs=1e-4) and hi == pytest.approx(0.9055, abs=1e-4)
    assert wilson(0, 0) is None


def test_outcome_table_counts_rates_and_intervals():
    t = outcome_table(["A"] * 7 + ["tie"] * 2 + ["B"])
    assert t["n"] == 10
    assert (t["wins"]["count"], t["ties"]["count"], t["losses"]["count"]) == (7, 2, 1)
    assert t["wins"]["rate"] == pytest.approx(0.7)
    assert t["wins"]["ci95"] == pytest.approx([0.3968, 0.8922], abs=1e-4)
    assert outcome_table([])["wins"] == {"count": 0, "rate": None, "ci95": None}


def _verdict(winner: str, s1: float, s2: float, votes: dict[str, int]) -> Verdict:
    return Verdict(task="pairwise", method="vote", winner=winner, scores={"answer_1": s1, "answer_2": s2},
                   votes=votes, n_agents=2, n_valid=2)


def test_panel_verdicts_map_to_a_and_b():
    """answer_1 is A: the combined '2' is a loss for A; orders are already in original numbering."""
    result = JudgeResult(
        id="x", task="pairwise", verdict=_verdict("2", 4.0, 7.5, {"1": 0, "2": 2, "tie": 0}),
        agents=[AgentVerdict(agent="a", persona="Critic", winner="2", scores={"answer_1": 4, "answer_2": 8}),
                AgentVerdict(agent="b", persona="General Public", winner="tie",
                             scores={"answer_1": 5, "answer_2": 5})],
        orders={"original": _verdict("1", 6, 5, {"1": 2, "2": 0, "tie": 0}),
                "swapped": _verdict("2", 3, 9, {"1": 0, "2": 2, "tie": 0})},
        order_disagreement=True,
    )
    rec = verdict_record(result)
    assert rec["verdict"] == "B"
    assert rec["panel"]["scores"] == {"A": 4.0, "B": 7.5} and rec["panel"]["votes"] == {"A": 0, "B": 2, "tie": 0}
    assert [a["winner"] for a in rec["agents"]] == ["B", "tie"]
    assert (rec["orders"]["original"]["shown_first"], rec["orders"]["original"]["winner"]) == ("A", "A")
    assert (rec["orders"]["swapped"]["shown_first"], rec["orders"]["swapped"]["winner"]) == ("B", "B")
    assert rec["order_disagreement"] is True
    # Both orders preferred the answer shown first: a pure position preference.
    summary = summarize_head2head([rec | {"status": "ok", "question_type": "t"}], systems=["x", "y"], offline=True)
    assert summary["first_shown_wins"]["count"] == 2 and summary["first_shown_wins"]["n"] == 2
    assert summary["order_disagreement"]["count"] == 1 and summary["losses"]["count"] == 1


# --- end to end -----------------------------------------------------------------------------
def _check_run(out: Path, n_cases: int) -> tuple[dict, list[dict]]:
    summary = json.loads((out / "summary.json").read_text())
    records = read_jsonl(out / "samples.jsonl")
    assert summary["n_units"] == len(records) == n_cases
    assert summary["wins"]["count"] + summary["ties"]["count"] + summary["losses"]["count"] == summary["n"]
    assert summary["n"] + summary["n_failed"] == n_cases
    for key in ("wins", "ties", "losses"):
        lo, hi = summary[key]["ci95"]
        assert 0 <= lo <= summary[key]["rate"] <= hi <= 1
    assert summary["order_disagreement"]["n"] <= summary["n"]
    assert (out / "report.md").exists() and (out / "win_tie_loss.png").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "win_tie_loss.png" in report and "order disagreement" in report and "Wilson" in report
    for r in records:
        if r["status"] != "ok":
            continue
        assert r["verdict"] in ("A", "B", "tie")
        assert set(r["answers"]) == {"A", "B"} and set(r["context_tokens"]) == {"A", "B"}
        assert r["orders"]["original"]["shown_first"] == "A" and r["orders"]["swapped"]["shown_first"] == "B"
        assert r["orders"]["original"]["winner"] in ("A", "B", "tie")
        assert r["orders"]["swapped"]["winner"] in ("A", "B", "tie")
        assert r["order_disagreement"] == (r["orders"]["original"]["winner"] != r["orders"]["swapped"]["winner"])
        assert {t["order"] for t in r["transcript"]} == {"original", "swapped"}
        assert set(r["usage"]) == {"A", "B", "judge"} and r["usage"]["judge"]["calls"] > 0
        assert r["agents"] and all(a["winner"] in ("A", "B", "tie") for a in r["agents"])
    return summary, records


@pytest.mark.slow
def test_longmemeval_end_to_end(lme3, tmp_path):
    out = tmp_path / "run"
    assert h2h(lme3, out) == 0
    summary, records = _check_run(out, 3)
    assert summary["dataset"] == "longmemeval" and summary["systems"] == {"A": "full_context", "B": "retrieval"}
    assert summary["context"] == "gold" and all(r["reference_shown"] for r in records)
    assert summary["n"] == 3 and summary["n_failed"] == 0
    assert {r["case_id"] for r in records} == {e["question_id"] for e in json.loads(lme3.read_text())}
    assert set(summary["by_type"]) == {r["question_type"] for r in records}
    # Each question is its own case: both systems ingest for every case.
    assert all("ingest_s" in r["latency"]["A"] and "ingest_s" in r["latency"]["B"] for r in records)
    # --resume on a finished run: nothing to do, same outcome.
    assert h2h(lme3, out, "--resume") == 0
    again = json.loads((out / "summary.json").read_text())
    assert (again["wins"], again["ties"], again["losses"]) == (summary["wins"], summary["ties"], summary["losses"])


def test_context_none_hides_the_gold_answer(lme3, tmp_path):
    out = tmp_path / "run"
    assert h2h(lme3, out, "--context", "none", "--limit", "1") == 0
    (record,) = read_jsonl(out / "samples.jsonl")
    assert record["reference_shown"] is False
    assert "reference" not in " ".join(t["text"] for t in record["transcript"]).lower()


def test_locomo_end_to_end_ingests_once_per_system(locomo_tiny, tmp_path):
    out = tmp_path / "run"
    assert h2h(locomo_tiny, out, "--workers", "3") == 0
    summary, records = _check_run(out, 5)
    assert summary["dataset"] == "locomo" and summary["n"] == 5
    assert all(r["case_id"].startswith("conv-26::qa") for r in records)
    for side in ("A", "B"):
        assert sum("ingest_s" in r["latency"][side] for r in records) == 1
    adversarial = [r for r in records if r["meta"]["category"] == 5]
    assert adversarial and all(r["gold"] is None and not r["reference_shown"] for r in adversarial)
    assert any(t.startswith("5-") for t in summary["by_type"])


def test_types_filter_and_limit(locomo_tiny, tmp_path):
    out = tmp_path / "run"
    assert h2h(locomo_tiny, out, "--types", "2,adversarial", "--limit", "2") == 0
    records = read_jsonl(out / "samples.jsonl")
    assert len(records) == 2 and {r["question_type"] for r in records} == {"2-temporal"}


def test_data_format_is_detected(lme3, locomo_tiny, tmp_path):
    assert load_cases(lme3)[0] == "longmemeval"
    kind, cases = load_cases(locomo_tiny)
    assert kind == "locomo" and len(cases) == 5 and len({id(c.sessions) for c in cases}) == 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"foo": 1}]))
    assert main(["bench", "head2head", "--systems", "full_context,retrieval", "--data", str(bad), *OFFLINE,
                 "--out", str(tmp_path / "o")]) == 2


# --- failures -------------------------------------------------------------------------------
def test_a_system_error_fails_only_its_unit(lme3, tmp_path, monkeypatch, capsys):
    cls = MEMORY_SYSTEMS.get("retrieval")
    original = cls.respond
    target = json.loads(lme3.read_text())[1]["question"]

    async def flaky(self, query, now):
        if query == target:
            raise RuntimeError("boom from the test")
        return await original(self, query, now)

    monkeypatch.setattr(cls, "respond", flaky)
    out = tmp_path / "run"
    assert h2h(lme3, out) == 1  # some units failed
    summary, records = _check_run(out, 3)
    assert summary["n_failed"] == 1 and summary["n"] == 2
    (failed,) = [r for r in records if r["status"] != "ok"]
    assert failed["question"] == target
    assert "system B (retrieval)" in failed["error"] and "boom from the test" in failed["error"]
    assert "A" in failed["answers"] and "B" not in failed["answers"]  # A's answer is kept
    assert "boom from the test" in (out / "report.md").read_text()
    # --resume redoes only the failed unit (now working).
    monkeypatch.setattr(cls, "respond", original)
    assert h2h(lme3, out, "--resume") == 0
    assert json.loads((out / "summary.json").read_text())["n"] == 3


@pytest.mark.slow
def test_a_judge_failure_fails_only_its_unit(lme3, tmp_path, monkeypatch):
    from chateval.debate.panel import Panel

    original = Panel.judge
    target = json.loads(lme3.read_text())[0]["question_id"]

    async def flaky(self, sample):
        result = await original(self, sample)
        if sample.id == target:
            result.status, result.error, result.verdict = "failed", "no readable verdict (test)", None
        return result

    monkeypatch.setattr(Panel, "judge", flaky)
    out = tmp_path / "run"
    assert h2h(lme3, out) == 1
    summary, records = _check_run(out, 3)
    (failed,) = [r for r in records if r["status"] != "ok"]
    assert failed["case_id"] == target and failed["error"].startswith("judge: no readable verdict")
    assert set(failed["answers"]) == {"A", "B"}


@pytest.mark.parametrize("systems,extra,needles", [
    ("full_context,nope", [], ["unknown memory system 'nope'", "full_context"]),
    ("full_context", [], ["two or more different systems"]),
    ("retrieval,retrieval", [], ["two or more different systems"]),
    ("full_context,retrieval", ["--judge", "debate"], ["--judge does not apply"]),
    ("full_context,retrieval", ["--types", "nope"], ["--types: no question of type 'nope'"]),
    ("full_context,retrieval", ["--judge-preset", "nope"], ["nope"]),
])
def test_bad_options_are_one_line_errors(lme3, tmp_path, capsys, systems, extra, needles):
    out = tmp_path / "run"
    assert h2h(lme3, out, *extra, systems=systems) == 2
    one_line_error(capsys.readouterr().err, *needles)
    assert not (out / "samples.jsonl").exists()


# --- more than two systems ------------------------------------------------------------------------
def test_three_systems_every_pair_one_answer_each(tmp_path, monkeypatch):
    from chateval.bench.slot import SystemSlot

    from ...conftest import FIXTURES

    calls: list[str] = []
    original = SystemSlot.respond

    async def counting(self, query, now):
        calls.append(self.name)
        return await original(self, query, now)

    monkeypatch.setattr(SystemSlot, "respond", counting)
    out = tmp_path / "h3"
    assert h2h(FIXTURES / "lme_tiny.json", out, systems="full_context,retrieval,session_summaries") == 0
    s = json.loads((out / "summary.json").read_text())
    assert sorted(calls) == sorted(["full_context", "retrieval", "session_summaries"] * 5)  # once per case
    assert set(s["pairs"]) == {"full_context vs retrieval", "full_context vs session_summaries",
                               "retrieval vs session_summaries"}
    m = s["matrix"]
    assert m["retrieval"]["full_context"]["wins"] == m["full_context"]["retrieval"]["losses"]
    assert all(m[a][b]["n"] == 5 for a in m for b in m[a])
    assert [r["rank"] for r in s["ranking"]] == [1, 2, 3] and len(s["headline"]) == 3
    rec = read_jsonl(out / "samples.jsonl")[0]
    assert len(rec["pairs"]) == 3 and all(p["status"] == "ok" for p in rec["pairs"].values())
    assert "Bradley–Terry" in (out / "report.md").read_text()
