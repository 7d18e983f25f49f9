"""`chateval bench msc-response` (issue 16, item 8): the MSC release loader, the turns predicted,
the metrics, the helpfulness panel at the wire, failures counted, --resume; and a run on the
shared MSC file when it is there."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from chateval.bench import run as bench_run
from chateval.bench.msc.msc_response import turns_to_predict
from chateval.bench.text_metrics import bleu4, rouge_l
from chateval.cli import main
from chateval.datasets import DatasetError, load_msc_release
from chateval.util.errors import ConfigError
from chateval.memory import MemorySystem
from chateval.memory.systems.retrieval import Retrieval
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES, read_jsonl, shared

TINY = FIXTURES / "msc_release_tiny.jsonl"
ANCHOR = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)


def samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]


# --- the loader -------------------------------------------------------------------------------
def test_loader_dates_sessions_from_the_gaps_and_alternates_speakers():
    a, b = load_msc_release(TINY)
    assert a.id == "tiny_0" and b.id == "tiny_1"
    assert a.current.date == ANCHOR
    # Session 2 is 3 hours before session 3; session 1 is 6 days before session 2.
    assert [s.date for s in a.past] == [ANCHOR - timedelta(hours=3) - timedelta(days=6), ANCHOR - timedelta(hours=3)]
    assert [s.date for s in b.past] == [ANCHOR - timedelta(hours=1) - timedelta(days=2), ANCHOR - timedelta(hours=1)]
    assert [t.role for t in a.past[0].turns] == ["Speaker 1", "Speaker 2"] * 2
    # The turn whose id is a worker number gets the speaker its position implies.
    assert [t.role for t in a.current.turns] == ["Speaker 1", "Speaker 2"] * 3
    assert a.current.turns[3].id == "tiny_0-s3-t4" and a.past[1].id == "tiny_0-s2"


@pytest.mark.parametrize("edit,message", [
    (lambda r: r["previous_dialogs"][0].update(time_unit="fortnights"), "tiny.jsonl:1: previous_dialogs[0]: field 'time_unit'"),
    (lambda r: r["previous_dialogs"][1].update(time_num="soon"), "tiny.jsonl:1: previous_dialogs[1]: field 'time_num'"),
    (lambda r: r["dialog"][1].update(id="Speaker 1"), "tiny.jsonl:1: turn 1: id 'Speaker 1' breaks"),
    (lambda r: r.pop("dialog"), "tiny.jsonl:1: field 'dialog' missing"),
])
def test_loader_errors_name_file_line_and_field(tmp_path, edit, message):
    rows = read_jsonl(TINY)
    edit(rows[0])
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DatasetError, match=re.escape(message)):
        load_msc_release(path)


def test_a_bad_file_is_exit_2_naming_the_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text(TINY.read_text().split("\n")[0] + "\n{not json\n")
    assert main(["bench", "msc-response", "--data", str(path), "--systems", "retrieval", "--embedder", "hash",
                 "--no-helpfulness", "--out", str(tmp_path / "run")]) == 2
    assert "bad.jsonl:2: invalid JSON" in capsys.readouterr().err
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_turns_predicted_are_speaker_2_turns_or_a_seeded_sample_in_order():
    ep = load_msc_release(TINY)[0]
    assert turns_to_predict(ep, None, 0, "speaker2") == [1, 3, 5]
    two = turns_to_predict(ep, 2, 0, "speaker2")
    assert len(two) == 2 and two == sorted(two) and set(two) <= {1, 3, 5} and two == turns_to_predict(ep, 2, 0, "speaker2")
    assert {tuple(turns_to_predict(ep, 1, s, "speaker2")) for s in range(10)} == {(1,), (3,), (5,)}  # the seed matters
    assert turns_to_predict(ep, 5, 0, "speaker2") == [1, 3, 5]
    assert set(turns_to_predict(ep, 2, 0)) <= {1, 2, 3, 4, 5}  # default: both speakers


# --- the benchmark, offline -------------------------------------------------------------------
@pytest.mark.slow
def test_offline_run_scores_each_turn_records_traces_and_graphs(tmp_path):
    out = tmp_path / "run"
    # Speaker 2's turns and the 1-10 rating: options since issue 28 (the defaults are tested in
    # test_msc_paper_defaults.py).
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "theanine,theanine_no_refine,retrieval",
                 "--embedder", "hash", "--turns-per-episode", "2", "--speakers", "speaker2",
                 "--helpfulness-protocol", "score", "--out", str(out)]) == 0
    rows = samples(out)
    assert len(rows) == 2 * 2 * 3 and all(r["status"] == "ok" for r in rows)
    eps = {e.id: e for e in load_msc_release(TINY)}
    for r in rows:
        ep = eps[r["episode"]]
        gold = ep.current.turns[r["turn"] - 1]
        assert gold.role == "Speaker 2" and r["gold"] == gold.content
        assert r["last_turn"] == ep.current.turns[r["turn"] - 2].content
        m = r["metrics"]
        assert m["bleu4"] == pytest.approx(bleu4(r["response"], r["gold"]))
        assert m["rouge_l"] == pytest.approx(rouge_l(r["response"], r["gold"]))
        assert 0.0 < m["bertscore_minilm"] <= 1.0
        assert 1 <= r["helpfulness"]["score"] <= 10 and r["helpfulness"]["agents"]
        if r["system"].startswith("theanine"):
            assert r["prompt"] == "theanine_response"
            assert "retrieved" in r["trace"] and "timelines" in r["trace"]
            for t in r["trace"]["timelines"]:
                assert t["raw"] and ("refined" in t) == (r["system"] == "theanine")
        else:
            assert r["prompt"] == "memory_answer" and "trace" not in r
    graphs = sorted(p.name for p in (out / "memories").iterdir())
    assert graphs == ["tiny_0__theanine.json", "tiny_0__theanine_no_refine.json", "tiny_1__theanine.json",
                      "tiny_1__theanine_no_refine.json"]
    g = json.loads((out / "memories" / "tiny_0__theanine.json").read_text())
    assert g["graph"]["format"] == 1 and g["nodes"] and {"source", "target", "relation"} <= set(g["edges"][0])
    summary = json.loads((out / "summary.json").read_text())
    th = summary["systems"]["theanine"]
    mine = [r for r in rows if r["system"] == "theanine"]
    assert th["metrics"]["rouge_l"]["mean"] == pytest.approx(sum(r["metrics"]["rouge_l"] for r in mine) / 4)
    assert th["prompts"] == {"theanine_response": 4} and summary["offline"] is True
    report = (out / "report.md").read_text()
    assert "offline model involved" in report and "MAUVE is left out" in report and "| theanine | 4 |" in report


class FailsOnThirdTurn(Retrieval):
    """Retrieval that fails when asked to continue after the 'I came third' turn."""

    async def respond(self, query, now):
        if not isinstance(query, str) and "third" in query[-1].content:
            raise RuntimeError("scripted failure")
        return await super().respond(query, now)


def test_failures_are_counted_not_averaged_and_resume_redoes_only_them(tmp_path):
    out = tmp_path / "run"
    cfg = {"data": str(TINY), "systems": [FailsOnThirdTurn], "embedder": "hash", "out": str(out),
           "bertscore": False, "helpfulness": False}
    s = bench_run("msc-response", cfg)
    e = s["systems"]["FailsOnThirdTurn"]
    # Every turn from the second on (both speakers): 5 per episode; the one after "third" fails.
    assert e["n_units"] == 10 and e["n_failed"] == 2 and e["n_ok"] == 8 and s["n_failed"] == 2
    assert e["metrics"]["rouge_l"]["n"] == 8 and "bertscore_minilm" not in e["metrics"]
    assert all("scripted failure" in f["error"] for f in e["failed"])
    assert "## Failures" in (out / "report.md").read_text()
    before = {r["key"]: r for r in samples(out)}
    again = bench_run("msc-response", cfg | {"resume": True})
    after = {r["key"]: r for r in samples(out)}
    assert after.keys() == before.keys()
    # The finished units were kept as they were; only the two failed ones ran again (and failed again).
    redone = [k for k in after if after[k]["wall_s"] != before[k]["wall_s"]]
    assert sorted(redone) == sorted(k for k, r in before.items() if r["status"] == "failed") and len(redone) == 2
    assert again["systems"]["FailsOnThirdTurn"]["n_failed"] == 2
    with pytest.raises(ConfigError, match="changed: turns_per_episode"):
        bench_run("msc-response", cfg | {"resume": True, "turns_per_episode": 1})


def test_judge_option_does_not_apply(tmp_path, capsys):
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--judge", "single",
                 "--out", str(tmp_path / "r")]) == 2
    assert "--judge does not apply" in capsys.readouterr().err


# --- the helpfulness panel at the wire --------------------------------------------------------
def reply(body: dict) -> str:
    text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    if "memory helpfulness" in text:
        return "The memory about the violin teacher made the reply specific.\nmemory helpfulness: 8"
    if '"facts"' in text:
        return json.dumps({"facts": [{"text": "Speaker 1 is learning the violin", "turn_ids": []}]})
    return "Congratulations on the contest!"


@pytest.mark.slow
def test_helpfulness_panel_sees_the_memory_context_and_the_response(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=reply) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--embedder", "hash",
                     "--answer-model", "openai-compatible/x", "--base-url", server.base_url, "--structured", "off",
                     "--turns-per-episode", "1", "--limit", "1", "--no-bertscore", "--helpfulness-protocol", "score",
                     "--out", str(out)]) == 0
        judged = [r for r in server.requests
                  if any("memory helpfulness" in (m.get("content") or "") for m in r["messages"])]
    (row,) = samples(out)
    assert row["response"] == "Congratulations on the contest!" and row["helpfulness"]["score"] == 8
    assert len(judged) == 4  # the default panel: 2 debaters x 2 turns
    prompt = "\n".join(m["content"] for m in judged[0]["messages"])
    assert "Speaker 1 is learning the violin" in prompt  # the memory the system recalled
    assert "Congratulations on the contest!" in prompt and row["last_turn"] in prompt
    assert "Rate only 'memory helpfulness'" in prompt


# --- the shared MSC file ----------------------------------------------------------------------
def test_shared_msc_file_loads_with_its_documented_shape():
    eps = load_msc_release(shared("msc", "msc_session3_valid.jsonl"))
    assert len(eps) == 500 and all(len(e.past) == 2 for e in eps)
    assert all(e.past[0].date < e.past[1].date <= e.current.date for e in eps)
    assert sum(len(turns_to_predict(e, None, 0)) for e in eps) > 2500


def test_systems_must_be_given(tmp_path):
    with pytest.raises(ConfigError, match="--systems"):
        bench_run("msc-response", {"data": str(TINY), "out": str(tmp_path / "r")})


def test_memory_system_base_has_no_trace_or_export():
    assert MemorySystem.trace(object.__new__(Retrieval)) == {} and MemorySystem.export(object.__new__(Retrieval)) is None
