"""Issue 34: no gold reaches a system under test. Every benchmark hands its systems blinded
sessions (opaque positional ids; role, content and date only) and maps what they recall back to
the data set's ids for scoring; no prompt to any model carries a data set's session id.

The leak probe (tests/fixtures/leak_probe.py) records what it is given and cheats on any gold
hint: through every benchmark its cheating must gain nothing over its honest setting, and what
it recorded must hold no original id and no meta."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.datasets import load_locomo, load_longmemeval
from chateval.datasets.msc_release import load_msc_release
from chateval.memory.blind import Blind
from chateval.memory.extract import cited_turns
from chateval.memory.types import MemoryItem, Session, Turn
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.testing.schema_reply import schema_responder

from .conftest import FIXTURES, read_jsonl

PROBE = str(FIXTURES / "leak_probe.py")
LME, LOCOMO, MSC = FIXTURES / "lme_tiny.json", FIXTURES / "locomo_tiny.json", FIXTURES / "msc_release_tiny.jsonl"
D = datetime(2024, 1, 1, tzinfo=UTC)


def lme_ids() -> set[str]:
    """Every session and turn id of the LongMemEval fixture."""
    return {x for q in load_longmemeval(LME) for s in q.sessions for x in [s.id] + [t.id for t in s.turns]}


def locomo_ids() -> set[str]:
    return {x for c in load_locomo(LOCOMO) for s in c.sessions for x in [s.id] + [t.id for t in s.turns]}


def msc_ids() -> set[str]:
    out = set()
    for e in load_msc_release(MSC):
        for s in [*e.past, e.current]:
            out |= {s.id} | {t.id for t in s.turns}
    return out


def assert_blind(log: Path, originals: set[str]) -> list[dict]:
    """What the probe was given: opaque ids only (none of the data set's), no meta, no gold hint."""
    rows = read_jsonl(log)
    assert rows, "the probe was given nothing"
    for row in rows:
        sessions = row["data"] if row["kind"] == "ingest_all" else []
        turns = [t for s in sessions for t in s["turns"]] + (row["data"] if isinstance(row["data"], list) and
                                                             row["kind"] == "respond" else [])
        for s in sessions:
            assert s["id"] not in originals and s["meta"] == {}, s["id"]
            assert set(s) == {"id", "date", "turns", "meta"}
        for t in turns:
            assert t["id"] not in originals and t["meta"] == {}, t["id"]
            assert set(t) == {"id", "role", "content", "meta"}
        text = json.dumps(row["data"])
        leaked = [i for i in originals if f'"{i}"' in text]
        assert not leaked, leaked[:3]
    return rows


# --- the boundary itself ----------------------------------------------------------------------
def test_blind_gives_opaque_ids_and_no_meta_and_maps_back():
    later = Session(id="answer_x", date=datetime(2024, 2, 1), meta={"copy_of": "y"},
                    turns=[Turn(id="answer_x_1", role="user", content="hi", meta={"has_answer": True}),
                           Turn(id="answer_x_2", role="assistant", content="yo")])
    first = Session(id="s_a", date=datetime(2024, 1, 1), turns=[Turn(id="s_a_1", role="user", content="a")])
    blind = Blind([later, first])
    assert [s.id for s in blind.sessions] == ["s1", "s2"]  # date order
    assert [t.id for t in blind.sessions[1].turns] == ["s2t1", "s2t2"]
    assert all(s.meta == {} and all(t.meta == {} for t in s.turns) for s in blind.sessions)
    assert [(t.role, t.content) for t in blind.sessions[1].turns] == [("user", "hi"), ("assistant", "yo")]
    assert blind.sessions[1].date == later.date
    item = MemoryItem(id="s2", text="", time=later.date, session_id="s2", turn_ids=["s2t1", "made-up"])
    back = blind.item(item)
    assert (back.id, back.session_id, back.turn_ids) == ("answer_x", "answer_x", ["answer_x_1", "made-up"])
    assert blind.positions_of(["answer_x", "nope"]) == [2]
    assert [t.id for t in Blind.dialogue(later.turns)] == ["ct1", "ct2"]
    assert all(t.meta == {} for t in Blind.dialogue(later.turns))


def test_extraction_cites_turns_by_number():
    s = Session(id="s3", date=D, turns=[Turn(id="s3t1", role="user", content="a"),
                                        Turn(id="s3t2", role="user", content="b")])
    assert cited_turns(s, ["2", "1", "2"]) == (["s3t2", "s3t1"], False)
    assert cited_turns(s, ["[2]"]) == (["s3t2"], False)
    assert cited_turns(s, ["s3t1"]) == (["s3t1"], False)  # an id still counts
    assert cited_turns(s, ["9", "x"]) == (["s3t1", "s3t2"], True)  # nothing real: the whole session


# --- the leak probe through every benchmark --------------------------------------------------
def probe(tmp_path: Path, bench: str, data: Path, cheat: bool, *extra: str) -> tuple[Path, Path]:
    out, log = tmp_path / f"{bench}-{cheat}", tmp_path / f"{bench}-{cheat}.jsonl"
    assert main(["bench", bench, "--data", str(data), "--systems", "leak_probe", "--plugin", PROBE,
                 "--set", f"leak_probe.cheat={json.dumps(cheat)}", "--set", f"leak_probe.log={log}",
                 "--embedder", "hash", "--no-cache", "--out", str(out), *extra]) == 0
    return out, log


def retrieval(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())["methods"]["leak_probe"]["retrieval"]


def test_longmemeval_probe_gains_nothing_and_sees_no_gold(tmp_path):
    cheat, log = probe(tmp_path, "longmemeval", LME, True, "--retrieval-only", "--rankers", "")
    honest, _ = probe(tmp_path, "longmemeval", LME, False, "--retrieval-only", "--rankers", "")
    # No hint to go on: the cheat ranks as the honest probe (the history's date order), which
    # finds the evidence first in 1 of the 4 evaluable questions (given the gold, it ranks it first).
    assert retrieval(cheat)["session"]["recall_any@1"] == pytest.approx(0.25)
    assert retrieval(cheat) == retrieval(honest)
    assert_blind(log, lme_ids())
    # The records keep the data set's ids (written by the harness, not the system).
    recs = {r["question_id"]: r for r in read_jsonl(cheat / "samples.jsonl")}
    assert recs["t_job"]["retrieval"]["ranked_sessions"][:2] == ["s_garden", "answer_s_work"]
    assert recs["t_job"]["gold_sessions"] == ["answer_s_work"]


def test_longmemeval_answers_and_viewer_marks(tmp_path):
    out, log = probe(tmp_path, "longmemeval", LME, True, "--judge", "single")
    rows = assert_blind(log, lme_ids())
    assert any(r["kind"] == "respond" for r in rows)
    recs = {r["question_id"]: r for r in read_jsonl(out / "samples.jsonl")}
    assert recs["t_job"]["gold_positions"] == [2] and recs["t_garden"]["gold_positions"] == [1, 4]


def test_full_context_numbers_sessions_and_the_viewer_marks_the_gold_one(tmp_path):
    from chateval.records import read_run
    from chateval.view.samples import sample_views

    out = tmp_path / "fc"
    assert main(["bench", "longmemeval", "--data", str(LME), "--systems", "full_context", "--judge", "single",
                 "--question-ids", "t_job", "--embedder", "hash", "--no-cache", "--out", str(out)]) == 0
    rec = read_jsonl(out / "samples.jsonl")[0]
    assert "## Session 2 (2023-03-20 18:40)" in rec["context"] and "answer_s_work" not in rec["context"]
    view = next(v for r in read_run(out).records for v in sample_views(r))
    marked = {line for line, gold in view.context_gold if gold and line.startswith("## Session")}
    assert marked == {"## Session 2 (2023-03-20 18:40)"}


def test_locomo_probe_gains_nothing_and_sees_no_ids(tmp_path):
    cheat, log = probe(tmp_path, "locomo", LOCOMO, True, "--judge", "single")
    honest, _ = probe(tmp_path, "locomo", LOCOMO, False, "--judge", "single")
    assert_blind(log, locomo_ids())
    rows = {(r["conversation"], q["qa_index"]): q for r in read_jsonl(cheat / "samples.jsonl") for q in r["qa"]}
    other = {(r["conversation"], q["qa_index"]): q for r in read_jsonl(honest / "samples.jsonl") for q in r["qa"]}
    assert {k: q["evidence_recall"] for k, q in rows.items()} == {k: q["evidence_recall"] for k, q in other.items()}
    # Retrieved turns are scored (and recorded) under LoCoMo's own dialogue ids.
    assert all(set(q["retrieved"]) <= locomo_ids() for q in rows.values())
    assert any(q["evidence_recall"] for q in rows.values())  # the mapping back finds evidence


def test_msc_response_probe_sees_no_ids(tmp_path):
    out, log = probe(tmp_path, "msc-response", MSC, True, "--no-helpfulness", "--no-bertscore")
    rows = assert_blind(log, msc_ids())
    dialogues = [r["data"] for r in rows if r["kind"] == "respond"]
    assert dialogues and all(t["id"].startswith("c") for d in dialogues for t in d)


@pytest.mark.parametrize("bench,data,originals", [("head2head", LME, lme_ids), ("teafarm", LOCOMO, locomo_ids)])
def test_slot_benchmarks_blind_their_systems(bench, data, originals, tmp_path):
    out, log = tmp_path / bench, tmp_path / f"{bench}.jsonl"
    assert main(["bench", bench, "--data", str(data), "--systems", "leak_probe,full_context", "--plugin", PROBE,
                 "--set", f"leak_probe.log={log}", "--embedder", "hash", "--no-cache", "--out", str(out)]) == 0
    assert_blind(log, originals())


def test_chateval_memory_ask_blinds_and_marks_evidence(tmp_path, capsys):
    log = tmp_path / "ask.jsonl"
    assert main(["memory", "ask", "--system", "leak_probe", "--plugin", PROBE, "--data", str(LME),
                 "--question-id", "t_garden", "--set", f"log={log}", "--set", "k=4", "--embedder", "hash"]) == 0
    assert_blind(log, lme_ids())
    text = capsys.readouterr().out
    assert "session answer_s_garden *" in text and "session s_trip " in text  # original ids, evidence starred


# --- no prompt to any model carries a data set's session id --------------------------------------
def sent_text(server: FakeOpenAIServer) -> str:
    return "\n".join(json.dumps(r) for r in server.requests)


@pytest.mark.parametrize("bench,data,systems,ids", [
    ("longmemeval", LME, "full_context,session_summaries,longmemeval_rag,retrieval,theanine,rsum", lme_ids),
    ("locomo", LOCOMO, "full_context,session_summaries,retrieval,theanine", locomo_ids),
])
def test_no_request_to_a_model_holds_an_original_id(bench, data, systems, ids, tmp_path):
    with FakeOpenAIServer(responder=schema_responder("Yes.")) as server:
        main(["bench", bench, "--data", str(data), "--systems", systems, "--answer-model", "openai-compatible/x",
              "--base-url", server.base_url, "--embedder", "hash", "--no-cache", "--judge", "single",
              "--out", str(tmp_path / "o"), "--set", "longmemeval_rag.reading=json"][: None if bench == "longmemeval"
                                                                                 else -2])
        text = sent_text(server)
    leaked = sorted(i for i in ids() if i in text)
    assert not leaked, leaked[:5]
    assert "Session on" in text and "## Session 1 (" in text  # extraction and reader prompts were sent


def test_a_run_from_before_blinding_does_not_resume(tmp_path, capsys):
    from chateval.evaluation.config import config_hash

    out = tmp_path / "o"
    args = ["bench", "longmemeval", "--data", str(LME), "--systems", "retrieval", "--retrieval-only", "--rankers", "",
            "--embedder", "hash", "--no-cache", "--out", str(out), "--question-ids", "t_job"]
    assert main(args) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["judging"]["blinding"]
    del cfg["judging"]["blinding"]  # the run as an earlier version wrote it
    cfg["config_hash"] = config_hash(cfg["judging"])
    (out / "config.json").write_text(json.dumps(cfg))
    assert main(args + ["--resume"]) == 2
    assert "changed: blinding" in capsys.readouterr().err
