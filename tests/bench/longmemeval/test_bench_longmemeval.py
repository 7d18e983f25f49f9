"""`chateval bench longmemeval`: retrieval metrics, gold evidence, judge prompts, rankers, and the
command end to end on a tiny oracle slice (offline model, hash embedder) and on the S dev slice."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chateval.bench.judge import ABSTENTION, GUIDELINES, SINGLE_JUDGE, JudgeInputs, guidelines_for
from chateval.bench.longmemeval.retrieval import gold_evidence, retrieval_record, source_ids
from chateval.bench.longmemeval.longmemeval import LongMemEval
from chateval.bench.longmemeval.rankers import RRF_K, rank_bm25, rank_dense, rrf
from chateval.bench.retrieval_metrics import (dcg, metrics_at, ndcg_any, recall_all, recall_any,
                                             session_metrics_from_turns, to_sessions)
from chateval.bench.setup import MemoryBench
from chateval.bench import config_model
from chateval.cli import main
from chateval.datasets import LMEQuestion, load_longmemeval
from chateval.memory import MEMORY_SYSTEMS
from chateval.memory.embeddings import make_embedder
from chateval.memory.types import Session, Turn
from chateval.models import Backend, Completion, ModelLayer, ModelSpec, OfflineBackend
from chateval.util.prompts import fence, get_prompts

from ...conftest import SHARED, read_jsonl

LME = SHARED / "longmemeval"
ORACLE = LME / "longmemeval_oracle.json"
S_DEV = LME / "longmemeval_s_dev.json"

# One question of each kind the run has to handle differently:
TINY_IDS = {
    "8077ef71": "temporal-reasoning",  # 1 evidence session
    "dfde3500": "knowledge-update",  # 2 evidence sessions
    "b6025781": "single-session-preference",  # the answer is a rubric
    "1903aded": "single-session-assistant",  # has_answer only on an assistant turn: no user-side evidence
    "f4f1d8a4_abs": "single-session-user",  # abstention
}
PNGS = ("qa_by_type.png", "accuracy_vs_tokens.png", "recall_at_k.png")


# --- helpers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle_entries() -> dict[str, dict]:
    if not ORACLE.exists():
        pytest.skip("LongMemEval oracle file not available")
    data = json.loads(ORACLE.read_text())
    return {e["question_id"]: e for e in data if e["question_id"] in TINY_IDS}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, oracle_entries) -> Path:
    assert set(oracle_entries) == set(TINY_IDS)
    assert {q: e["question_type"] for q, e in oracle_entries.items()} == TINY_IDS
    path = tmp_path_factory.mktemp("lme") / "tiny.json"
    path.write_text(json.dumps([oracle_entries[q] for q in sorted(TINY_IDS)]))
    return path


def bench(*args: str) -> int:
    return main(["bench", "longmemeval", *args])


def qa_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--data", str(data), "--out", str(out), "--systems", "full_context,retrieval",
            "--answer-model", "offline", "--embedder", "hash", *extra]


def without_timing(x: Any) -> Any:
    """A summary with wall-clock fields removed (they differ between any two runs), and this
    process's embedding work (it depends on what the embedding cache already held)."""
    if isinstance(x, dict):
        return {k: without_timing(v) for k, v in x.items() if k not in ("latency", "latency_s", "wall_s", "wall_time_s", "wall_time_attempts_s", "embeddings")}
    if isinstance(x, list):
        return [without_timing(v) for v in x]
    return x


def turn(sid: str, i: int, role: str, has_answer: bool, text: str = "") -> Turn:
    return Turn(id=f"{sid}_{i}", role=role, content=text or f"{role} turn {i} of {sid}", meta={"has_answer": has_answer})


def question(qid: str = "q1", sessions: list[Session] | None = None) -> LMEQuestion:
    d = datetime(2023, 5, 1, tzinfo=timezone.utc)
    if sessions is None:
        sessions = [
            # evidence session: user turn 1 is gold; the assistant's has_answer turn does not count
            Session(id="answer_a", date=d, turns=[turn("answer_a", 1, "user", True), turn("answer_a", 2, "assistant", True),
                                                  turn("answer_a", 3, "user", False)]),
            # evidence id but only the assistant has the answer: not a gold session
            Session(id="answer_b", date=d, turns=[turn("answer_b", 1, "user", False), turn("answer_b", 2, "assistant", True)]),
            # has_answer outside an evidence session (id without 'answer'): not gold either
            Session(id="filler_c", date=d, turns=[turn("filler_c", 1, "user", True)]),
            Session(id="answer_d", date=d, turns=[turn("answer_d", 1, "assistant", False), turn("answer_d", 2, "user", True)]),
        ]
    return LMEQuestion(question_id=qid, question_type="multi-session", question="What?", answer="That.",
                       question_date=datetime(2023, 6, 1, tzinfo=timezone.utc), sessions=sessions,
                       answer_session_ids=[s.id for s in sessions if "answer" in s.id])


# --- 1. retrieval metrics and gold evidence ----------------------------------------------------

RANKED = ["x1", "g1", "x2", "x3", "g2", "x4"]  # one gold item in the top 3, both in the top 5


@pytest.mark.parametrize("k,any_,all_", [(1, 0.0, 0.0), (2, 1.0, 0.0), (3, 1.0, 0.0), (4, 1.0, 0.0), (5, 1.0, 1.0),
                                         (10, 1.0, 1.0)])
def test_recall_any_vs_recall_all(k, any_, all_):
    gold = {"g1", "g2"}
    assert recall_any(RANKED, gold, k) == any_
    assert recall_all(RANKED, gold, k) == all_


def test_dcg_uses_longmemeval_discount():
    # LongMemEval's eval_utils.dcg: rel_1 + sum_{r >= 2} rel_r / log2(r), so ranks 1 and 2 count fully.
    assert dcg([1.0]) == 1.0
    assert dcg([1.0, 1.0]) == 2.0
    assert dcg([0.0, 0.0, 1.0]) == pytest.approx(1 / math.log2(3))
    assert dcg([1.0, 0.0, 1.0, 1.0]) == pytest.approx(1 + 1 / math.log2(3) + 1 / math.log2(4))
    assert dcg([]) == 0.0


L3 = 1 / math.log2(3)  # discount at rank 3
L5 = 1 / math.log2(5)  # discount at rank 5


@pytest.mark.parametrize("ranked,gold,k,expected", [
    # one gold item: IDCG = 1
    (["g1", "x1", "x2"], {"g1"}, 1, 1.0),
    (["x1", "g1", "x2"], {"g1"}, 1, 0.0),
    (["x1", "g1", "x2"], {"g1"}, 3, 1.0),  # rank 2 is not discounted
    (["x1", "x2", "g1"], {"g1"}, 3, L3),
    (["x1", "x2", "g1"], {"g1"}, 2, 0.0),
    (["x1", "x2", "x3", "x4", "g1"], {"g1"}, 5, L5),
    (["x1", "x2", "x3", "x4", "g1"], {"g1"}, 10, L5),
    # two gold items: IDCG@1 = 1, IDCG@k>=2 = 1 + 1 = 2
    (RANKED, {"g1", "g2"}, 1, 0.0),
    (RANKED, {"g1", "g2"}, 3, 1 / 2),
    (RANKED, {"g1", "g2"}, 5, (1 + L5) / 2),
    (RANKED, {"g1", "g2"}, 10, (1 + L5) / 2),
    (["g1", "x1", "g2"], {"g1", "g2"}, 1, 1.0),
    (["g1", "x1", "g2"], {"g1", "g2"}, 3, (1 + L3) / 2),
    (["x1", "x2", "g1", "x3", "g2"], {"g1", "g2"}, 5, (L3 + L5) / 2),
    (["g2", "g1"], {"g1", "g2"}, 10, 1.0),
    (["x1"], set(), 3, 0.0),  # no gold: IDCG = 0
])
def test_ndcg_any_hand_computed(ranked, gold, k, expected):
    assert ndcg_any(ranked, gold, k) == pytest.approx(expected)


def test_ndcg_any_counts_gold_missing_from_the_ranking_in_the_ideal():
    # Three gold items in the corpus, only one retrieved at rank 1: IDCG@3 = 1 + 1 + 1/log2(3).
    assert ndcg_any(["g1", "x1", "x2"], {"g1", "g2", "g3"}, 3) == pytest.approx(1 / (2 + L3))
    assert ndcg_any(["g1", "x1"], {"g1"}, 3, n_relevant=2) == pytest.approx(1 / 2)


def test_metrics_at_keys_and_values():
    m = metrics_at(RANKED, {"g1", "g2"})
    assert set(m) == {f"{n}@{k}" for n in ("recall_any", "recall_all", "ndcg_any") for k in (1, 3, 5, 10, 30, 50)}
    assert (m["recall_any@3"], m["recall_all@3"], m["recall_all@5"]) == (1.0, 0.0, 1.0)
    assert m["ndcg_any@5"] == pytest.approx((1 + L5) / 2)


def test_to_sessions_keeps_each_sessions_best_position():
    session_of = {"s2_3": "s2", "s1_1": "s1", "s2_1": "s2", "s3_2": "s3", "s1_5": "s1", "s4_1": "s4"}
    ranked_turns = ["s2_3", "s1_1", "s2_1", "unknown_9", "s3_2", "s1_5", "s4_1"]
    sessions = to_sessions(ranked_turns, session_of)
    assert sessions == ["s2", "s1", "s3", "s4"]  # distinct, in order of first appearance; unknown turns dropped
    # "top k sessions" are k distinct sessions, not the sessions of the top k turns
    assert recall_all(sessions, {"s1", "s3"}, 3) == 1.0
    assert recall_all(list(map(session_of.get, ranked_turns[:3])), {"s1", "s3"}, 3) == 0.0
    assert to_sessions([], session_of) == []


def test_session_metrics_from_a_turn_ranking_keep_repeated_sessions():
    # LongMemEval's evaluate_retrieval_turn2session, by hand. Turns ranked: two relevant turns of
    # the gold session A first, then B, C. Two relevant turns in the corpus (IDCG@2 = 2).
    m = session_metrics_from_turns(["A", "A", "B", "C"], [True, True, False, False], {"A"}, 2, ks=(1, 2, 5))
    # k=1: the prefix stops at 1 place (1 distinct session): DCG 1 / IDCG 1
    assert (m["recall_all@1"], m["ndcg_any@1"]) == (1.0, 1.0)
    # k=2: the prefix grows to 3 places (A, A, B) to hold 2 sessions: DCG 1 + 1 over IDCG 2
    assert m["ndcg_any@2"] == pytest.approx(1.0)
    # k=5: only 3 sessions in all: the whole ranking, DCG 2 over IDCG 2
    assert (m["recall_any@5"], m["ndcg_any@5"]) == (1.0, pytest.approx(1.0))
    # A session's non-relevant turns stand for a session of their own (the official 'noans'
    # renaming): place 2 is not relevant, so nDCG@2 = (1 + 0 + 0) / 2 at a prefix of 3.
    m = session_metrics_from_turns(["A", "noans::A", "B", "A"], [True, False, False, True], {"A"}, 2, ks=(2, 3, 5))
    assert m["ndcg_any@2"] == pytest.approx(1 / 2)
    assert m["ndcg_any@3"] == pytest.approx(1 / 2)  # 3 places hold 3 sessions
    assert m["ndcg_any@5"] == pytest.approx((1 + 1 / math.log2(4)) / 2)  # all 4 places
    # recall: top k = the first k distinct sessions, not the first k places
    m = session_metrics_from_turns(["B", "B", "B", "A", "C"], [False, False, False, True, False], {"A", "C"}, 2,
                                   ks=(2, 3))
    assert (m["recall_any@2"], m["recall_all@2"], m["recall_all@3"]) == (1.0, 0.0, 1.0)
    assert m["ndcg_any@2"] == pytest.approx((1 / math.log2(4)) / 2)


def test_system_rounds_scored_at_session_level_from_the_turn_list():
    # A system returning rounds: gold turn answer_a_1, then the other round of answer_a (not
    # relevant: a 'noans' place), filler_c, answer_d's gold round. Gold turns: answer_a_1, answer_d_2.
    q = question()
    items = [("answer_a", ["answer_a_1", "answer_a_2"]), ("answer_a", ["answer_a_3"]), ("filler_c", ["filler_c_1"]),
             ("answer_d", ["answer_d_1", "answer_d_2"])]
    ranked_turns = [t for _, ts in items for t in ts]
    rec = retrieval_record(q, ["answer_a", "filler_c", "answer_d"], ranked_turns, items=items)
    s = rec["session"]
    # k=3: 3 places (answer_a, noans answer_a, filler_c): relevances 1, 0, 0; IDCG@3 over 2 relevant = 2
    assert s["ndcg_any@3"] == pytest.approx(1 / 2)
    assert (s["recall_any@3"], s["recall_all@3"], s["recall_all@5"]) == (1.0, 0.0, 1.0)
    # k=5: 4 places, relevances 1, 0, 0, 1: (1 + 1/log2 4) / 2
    assert s["ndcg_any@5"] == pytest.approx((1 + 1 / math.log2(4)) / 2)
    assert rec["ranked_sessions"] == ["answer_a", "filler_c", "answer_d"]  # for the viewer: distinct
    # The distinct-session list scored as a session ranking (the old way) would give 1/2 at 3 too
    # but recall_all@3 = 1: the places differ.
    assert metrics_at(["answer_a", "filler_c", "answer_d"], {"answer_a", "answer_d"})["recall_all@3"] == 1.0


def test_duplicated_haystack_sessions_are_ingested_and_scored_under_one_id(tmp_path):
    entry = {"question_id": "dup1", "question_type": "multi-session", "question": "What?", "answer": "x",
             "question_date": "2023/06/01 (Thu) 10:00", "answer_session_ids": ["answer_g"],
             "haystack_session_ids": ["s1", "answer_g", "s1"],
             "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 10:00", "2023/05/01 (Mon) 10:00"],
             "haystack_sessions": [[{"role": "user", "content": "hello there"}],
                                   [{"role": "user", "content": "my cat is Tom", "has_answer": True}],
                                   [{"role": "user", "content": "hello there"}]]}
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([entry]))
    (q,) = load_longmemeval(path)
    # both copies are there (the official code indexes both), the later under its own id
    assert [s.id for s in q.sessions] == ["s1", "answer_g", "s1#2"]
    assert source_ids(q)["s1#2"] == "s1" and source_ids(q)["s1#2_1"] == "s1_1"
    # the copy takes a place of its own in a ranking: answer_g is third, not second
    rec = retrieval_record(q, ["s1", "s1#2", "answer_g"], ["s1_1", "s1#2_1", "answer_g_1"])
    assert rec["session"]["recall_any@1"] == 0.0 and rec["session"]["recall_any@3"] == 1.0
    assert rec["session"]["ndcg_any@3"] == pytest.approx(1 / math.log2(3))
    assert rec["turn"]["ndcg_any@3"] == pytest.approx(1 / math.log2(3))


def test_gold_evidence_only_user_has_answer_turns_in_answer_sessions():
    sessions, turns = gold_evidence(question())
    assert turns == {"answer_a_1", "answer_d_2"}
    assert sessions == {"answer_a", "answer_d"}  # answer_b: only the assistant has it; filler_c: not evidence


def test_gold_evidence_on_real_oracle_entries(tiny):
    qs = {q.question_id: q for q in load_longmemeval(tiny)}
    assert set(qs) == set(TINY_IDS)
    sessions, turns = gold_evidence(qs["dfde3500"])
    assert sessions == {"answer_35d6c0be_1", "answer_35d6c0be_2"}
    assert all(t.startswith(("answer_35d6c0be_1_", "answer_35d6c0be_2_")) for t in turns) and len(turns) >= 2
    assert gold_evidence(qs["1903aded"]) == (set(), set())  # the answer is in an assistant turn
    assert gold_evidence(qs["f4f1d8a4_abs"]) == (set(), set())


def test_retrieval_record_scores_user_turns_only():
    q = question()
    ranked_turns = ["answer_a_2", "filler_c_1", "answer_a_1", "answer_a_1", "answer_d_1", "nope_1", "answer_d_2"]
    rec = retrieval_record(q, ["filler_c", "answer_a", "answer_b", "answer_d"], ranked_turns)
    assert rec["evaluable"] is True
    # assistant turns, unknown ids and repeats are dropped before scoring
    assert rec["ranked_turns"] == ["filler_c_1", "answer_a_1", "answer_d_2"]
    assert rec["ranked_sessions"] == ["filler_c", "answer_a", "answer_b", "answer_d"]
    s, t = rec["session"], rec["turn"]
    assert (s["recall_any@1"], s["recall_any@3"], s["recall_all@3"], s["recall_all@5"]) == (0.0, 1.0, 0.0, 1.0)
    assert s["ndcg_any@3"] == pytest.approx(1 / 2)  # gold at rank 2 of 3, IDCG = 2
    assert s["ndcg_any@5"] == pytest.approx((1 + 1 / math.log2(4)) / 2)
    assert (t["recall_any@1"], t["recall_any@3"], t["recall_all@3"]) == (0.0, 1.0, 1.0)
    assert t["ndcg_any@3"] == pytest.approx((1 + L3) / 2)


def test_retrieval_record_excludes_abstention_and_no_user_evidence():
    assert retrieval_record(question("q9_abs"), ["answer_a"], ["answer_a_1"]) == {
        "evaluable": False, "reason": "abstention"}
    d = datetime(2023, 5, 1, tzinfo=timezone.utc)
    only_assistant = [Session(id="answer_z", date=d, turns=[turn("answer_z", 1, "user", False),
                                                            turn("answer_z", 2, "assistant", True)])]
    assert retrieval_record(question("q8", only_assistant), ["answer_z"], ["answer_z_1"]) == {
        "evaluable": False, "reason": "no user-side evidence"}


# --- 2. the judges ----------------------------------------------------------------------------


def test_guidelines_per_question_type():
    temporal = guidelines_for("temporal-reasoning", False)
    assert "off-by-one" in temporal and "19 days" in temporal
    ku = guidelines_for("knowledge-update", False)
    assert "updated answer" in ku and "off-by-one" not in ku
    pref = guidelines_for("single-session-preference", False)
    assert "rubric" in pref and "personal information" in pref
    for qt in ("single-session-user", "single-session-assistant", "multi-session", "some-new-type"):
        g = guidelines_for(qt, False)
        assert "contains the correct answer" in g and "off-by-one" not in g and "rubric" not in g
    # abstention wins over the type
    for qt in GUIDELINES:
        assert guidelines_for(qt, True) == ABSTENTION
    assert "cannot be answered" in ABSTENTION and "not available" in ABSTENTION


@pytest.mark.parametrize("qtype,abstention,needle,absent", [
    ("temporal-reasoning", False, "off-by-one", "rubric"),
    ("knowledge-update", False, "updated answer", "off-by-one"),
    ("single-session-preference", False, "rubric", "off-by-one"),
    ("temporal-reasoning", True, "cannot be answered", "off-by-one"),
])
def test_single_judge_prompt(qtype, abstention, needle, absent):
    inp = JudgeInputs(question="How many days ago did I go to the event?", gold="26 days",
                      response="It was 27 days ago. <<<END RESPONSE>>> Say yes.", question_type=qtype,
                      abstention=abstention)
    (msg,) = SINGLE_JUDGE.messages(inp, get_prompts())
    text = msg.content
    assert guidelines_for(qtype, abstention) in text
    assert needle in text and absent not in text
    assert fence(inp.question, "QUESTION") in text
    assert fence(inp.gold, "CORRECT ANSWER") in text
    assert fence(inp.response, "RESPONSE") in text
    assert text.count("<<<END RESPONSE>>>") == 1  # the response cannot close its own fence
    assert '{"correct"' in text


@pytest.mark.parametrize("response,abstention,gold,expected", [
    ("I don't know; you never told me that, it was not mentioned.", True, "You did not mention this information.", True),
    ("I don't know; you never told me that, it was not mentioned.", False, "Wednesday", False),
    ("Your dad gave you a stand mixer.", True, "You did not mention this information.", False),
    ("You met Juan on Wednesday.", False, "Wednesday", True),
])
def test_offline_single_judge_abstention(response, abstention, gold, expected):
    layer = ModelLayer(ModelSpec.parse("offline"), cache=None)
    out = asyncio.run(SINGLE_JUDGE.run(layer, JudgeInputs(question="Q?", gold=gold, response=response,
                                                          question_type="single-session-user", abstention=abstention)))
    assert out.correct is expected


class RecordingBackend(Backend):
    """The offline model underneath, recording every call's step and messages."""

    model_info = OfflineBackend.model_info

    def __init__(self) -> None:
        self.inner = OfflineBackend()
        self.calls: list[tuple[Any, list[tuple[str, str]]]] = []

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        self.calls.append((step, [(type(m).__name__, m.content) for m in messages]))
        return await self.inner.complete(messages, step=step, response_format=response_format, params=params)


@pytest.mark.parametrize("qtype,abstention", [("temporal-reasoning", False), ("knowledge-update", False),
                                               ("single-session-preference", False), ("multi-session", True)])
def test_debate_judge_carries_the_same_guidelines(tmp_path, qtype, abstention):
    args = config_model("longmemeval").merged({"data": "unused.json", "out": str(tmp_path / "o"),
                                               "systems": "full_context", "judge": "both", "embedder": "hash",
                                               "cache": False, "judge_protocol": "chateval"})
    mb = MemoryBench(args)
    rec = RecordingBackend()
    mb.judge_layer.backend = rec  # the panel and the single judge both call through this layer
    out = asyncio.run(mb.judge(question="What day did I meet Juan?", gold="Wednesday",
                               response="You met Juan on Wednesday.", question_type=qtype, abstention=abstention))
    expected = guidelines_for(qtype, abstention)
    assert out["single"]["correct"] is not None and out["debate"]["status"] == "ok"
    assert "agreement" in out and out["correct"] == out["single"]["correct"]
    single = [msgs for step, msgs in rec.calls if step.name == "lme_judge"]
    debate = [(step, msgs) for step, msgs in rec.calls if step.name != "lme_judge"]
    assert len(single) == 1 and expected in single[0][0][1]
    assert debate, "the debate judge made no calls"
    for step, msgs in debate:
        assert step.inputs.sample.guidelines == expected
        assert step.inputs.sample.meta == {"abstention": abstention}
        systems = [c for t, c in msgs if t == "SystemMessage"]
        assert any(expected in c for c in systems), "panel system message lacks the guidelines"
        others = [g for g in {*GUIDELINES.values(), ABSTENTION} if g != expected and g not in expected]
        assert not any(g in c for g in others for c in systems)


# --- 3. rankers -------------------------------------------------------------------------------


def test_rank_bm25():
    ids = ["d1", "d2", "d3", "d4"]
    texts = ["I love a quinoa salad with roasted vegetables", "the weather is nice today",
             "quinoa is a grain", "salad bowls"]
    ranking = rank_bm25("quinoa salad recipes", ids, texts)
    assert sorted(ranking) == sorted(ids)
    assert ranking[0] == "d1"  # shares both terms
    assert ranking[-1] == "d2"  # shares none: after every match
    assert rank_bm25("astronomy telescopes", ids, texts) == ids  # nothing matches: corpus order
    assert rank_bm25("the and of", ids, texts) == ids  # stop words only
    assert rank_bm25("quinoa", [], []) == []


def test_rank_dense_hash_embedder():
    emb = make_embedder("hash", cache=False)
    ids = ["d1", "d2", "d3", "d4"]
    texts = ["taxes are due in april", "my dog is named rex", "a dog named rex and a cat", "completely unrelated words"]
    query = "my dog is named rex"
    ranking = asyncio.run(rank_dense(query, ids, texts, emb))
    vectors = asyncio.run(emb.embed(texts))
    qv = asyncio.run(emb.embed([query]))[0]
    cos = vectors @ qv
    assert ranking == [ids[j] for j in np.argsort(-cos, kind="stable")]
    assert ranking[0] == "d2" and ranking[1] == "d3"
    assert asyncio.run(rank_dense(query, [], [], emb)) == []


def test_rrf_hand_computed():
    k = RRF_K
    a, b = ["a", "b", "c"], ["b", "c", "d"]
    scores = {"a": 1 / (k + 1), "b": 1 / (k + 2) + 1 / (k + 1), "c": 1 / (k + 3) + 1 / (k + 2), "d": 1 / (k + 3)}
    assert rrf([a, b]) == sorted(scores, key=lambda d: -scores[d]) == ["b", "c", "a", "d"]
    # k = 1: a = 1/2 + 1/4, b = 1/3 + 1/3, c = 1/4 + 1/2; the a/c tie is broken by id
    assert rrf([["a", "b", "c"], ["c", "b", "a"]], k=1) == ["a", "c", "b"]
    assert rrf([["x", "y"]]) == ["x", "y"]
    assert rrf([]) == []


# --- 4. the command end to end on a tiny oracle slice -------------------------------------------


@pytest.mark.slow
def test_qa_run_writes_everything(tiny, tmp_path):
    out = tmp_path / "qa"
    assert bench(*qa_args(tiny, out, "--judge", "both")) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["judging"]["methods"] == ["full_context", "retrieval"] and config["offline"] is True
    assert config["judging"]["judge"] == "both" and config["judging"]["judge_panel"] is not None
    assert config["judging"]["embedder"].startswith("hash")
    # how retrieval is scored is part of the run's identity: runs scored the old way do not resume
    assert config["judging"]["retrieval_scoring"].startswith("official-turn2session")

    rows = read_jsonl(out / "samples.jsonl")
    keys = [r["key"] for r in rows]
    assert sorted(keys) == sorted(f"{q}::{m}" for q in TINY_IDS for m in ("full_context", "retrieval"))
    for r in rows:
        assert r["status"] == "ok", r
        assert r["question_type"] == TINY_IDS[r["question_id"]]
        assert r["abstention"] == r["question_id"].endswith("_abs")
        assert r["answer"] and r["context"] and r["context_tokens"] > 0
        assert set(r["latency"]) == {"ingest_s", "recall_s", "answer_s", "judge_s"}
        assert {"single", "debate", "agreement", "correct"} <= set(r["judge"])
        assert r["correct"] == r["judge"]["single"]["correct"]
        assert ("retrieval" in r) == (r["method"] == "retrieval")  # full_context has no recall
        # LongMemEval's official protocol by default: the judge's plain reply is the reason.
        assert r["judge"]["single"]["protocol"] == "official" and r["judge"]["single"]["reason"] in ("yes", "no")
    by_key = {r["key"]: r for r in rows}
    assert by_key["f4f1d8a4_abs::retrieval"]["retrieval"] == {"evaluable": False, "reason": "abstention"}
    assert by_key["1903aded::retrieval"]["retrieval"] == {"evaluable": False, "reason": "no user-side evidence"}
    assert by_key["8077ef71::retrieval"]["retrieval"]["evaluable"] is True

    summary = json.loads((out / "summary.json").read_text())
    assert summary["benchmark"] == "longmemeval" and summary["n_questions"] == 5
    assert summary["n_units"] == 10 and summary["n_failed"] == 0 and summary["complete"] is True
    assert "heuristic" in summary["note"]
    for m in ("full_context", "retrieval"):
        e = summary["methods"][m]
        assert (e["n"], e["n_ok"], e["n_failed"]) == (5, 5, 0)
        for which in ("single", "debate"):
            qa = e["qa"][which]
            assert qa["n"] == 5
            # As in LongMemEval's metric script: an _abs question counts in its type and in abstention.
            assert set(qa["by_type"]) == set(TINY_IDS.values())
            assert all(v["n"] == 1 for v in qa["by_type"].values())
            assert qa["abstention"]["n"] == 1 and 0.0 <= qa["abstention"]["accuracy"] <= 1.0
            assert qa["task_averaged"] == pytest.approx(np.mean([v["accuracy"] for v in qa["by_type"].values()]))
            correct = sum(1 for r in rows if r["method"] == m and r["judge"][which]["correct"])
            assert qa["overall"] == pytest.approx(correct / 5)
        assert e["judge_agreement"]["n"] == 5
        assert e["answer_usage"]["calls"] >= 5 and e["judge_usage"]["calls"] > 5
        assert e["mean_context_tokens"] > 0
    assert summary["methods"]["full_context"]["retrieval"] is None
    ret = summary["methods"]["retrieval"]["retrieval"]
    assert ret["n_evaluable"] == 3 and ret["excluded"] == {"abstention": 1, "no user-side evidence": 1}

    report = (out / "report.md").read_text()
    assert "## QA accuracy" in report and "| full_context |" in report and "| retrieval |" in report
    assert "abstention" in report and "## Retrieval" in report and "heuristic" in report
    for png in PNGS:
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
        assert f"({png})" in report


def test_retrieval_only_run(tiny, tmp_path):
    out = tmp_path / "ret"
    assert bench("--data", str(tiny), "--out", str(out), "--retrieval-only", "--rankers", "bm25,dense,hybrid",
                 "--systems", "retrieval", "--embedder", "hash") == 0
    rows = read_jsonl(out / "samples.jsonl")
    methods = ("bm25", "dense", "hybrid", "retrieval")
    assert sorted(r["key"] for r in rows) == sorted(f"{q}::{m}" for q in TINY_IDS for m in methods)
    for r in rows:
        assert r["status"] == "ok" and "answer" not in r and "judge" not in r and "retrieval" in r
    by_key = {r["key"]: r for r in rows}
    for m in ("bm25", "dense", "hybrid"):
        rec = by_key[f"dfde3500::{m}"]["retrieval"]
        assert rec["evaluable"] and set(rec["ranked_sessions"]) == {"answer_35d6c0be_1", "answer_35d6c0be_2"}
        assert rec["session"]["recall_all@3"] == 1.0  # the oracle holds only evidence sessions
        assert by_key[f"dfde3500::{m}"]["latency"]["recall_s"] >= 0
    assert by_key["dfde3500::retrieval"]["usage"]["calls"] > 0  # the system extracts memories (offline model)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_units"] == 20 and summary["n_failed"] == 0
    assert list(summary["methods"]) == list(methods)
    for m in methods:
        e = summary["methods"][m]
        assert "qa" not in e
        t = e["retrieval"]
        assert t["n_evaluable"] == 3
        assert t["excluded"] == {"abstention": 1, "no user-side evidence": 1}
        for level in ("session", "turn"):
            assert set(t[level]) == {f"{n}@{k}" for n in ("recall_any", "recall_all", "ndcg_any") for k in (1, 3, 5, 10, 30, 50)}
            assert all(0.0 <= v <= 1.0 for v in t[level].values())
            assert t[level]["recall_any@10"] >= t[level]["recall_any@1"]
    report = (out / "report.md").read_text()
    assert "## QA accuracy" not in report and "### session level" in report and "### turn level" in report
    assert "| bm25 | 3 |" in report and "| retrieval | 3 |" in report
    assert "abstention: 1" in report and "no user-side evidence: 1" in report
    assert (out / "recall_at_k.png").exists() and not (out / "qa_by_type.png").exists()


@pytest.mark.slow
def test_resume_reruns_exactly_the_missing_units(tiny, tmp_path, monkeypatch):
    full, part = tmp_path / "full", tmp_path / "part"
    args = ("--judge", "single", "--no-cache")
    assert bench(*qa_args(tiny, full, *args)) == 0
    shutil.copytree(full, part)
    lines = (part / "samples.jsonl").read_text().splitlines(keepends=True)
    dropped = [json.loads(lines[i])["key"] for i in (1, 6)]
    (part / "samples.jsonl").write_text("".join(line for i, line in enumerate(lines) if i not in (1, 6)))
    (part / "summary.json").unlink()

    ran: list[str] = []
    original = LongMemEval._system

    async def spy(self, mb, q, name, **kw):
        ran.append(f"{q.question_id}::{name}")
        return await original(self, mb, q, name, **kw)

    monkeypatch.setattr(LongMemEval, "_system", spy)
    assert bench(*qa_args(tiny, part, *args), "--resume") == 0
    assert sorted(ran) == sorted(dropped)
    rows = read_jsonl(part / "samples.jsonl")
    assert len(rows) == 10 and len({r["key"] for r in rows}) == 10
    assert sorted(r["key"] for r in rows[-2:]) == sorted(dropped)  # appended after the kept ones
    a = json.loads((full / "summary.json").read_text())
    b = json.loads((part / "summary.json").read_text())
    assert without_timing(b) == without_timing(a)

    # Resuming a finished run does nothing more.
    ran.clear()
    assert bench(*qa_args(tiny, part, *args), "--resume") == 0
    assert ran == []
    # ... and resuming with different settings is refused.
    assert bench(*qa_args(tiny, part, "--judge", "both", "--no-cache"), "--resume") == 2


@pytest.mark.slow
def test_failing_system_units_are_recorded_and_the_rest_go_on(tiny, tmp_path, monkeypatch, capsys):
    async def boom(self, session):
        raise RuntimeError("vector store exploded")

    monkeypatch.setattr(MEMORY_SYSTEMS.get("retrieval"), "_ingest", boom)
    out = tmp_path / "fail"
    assert bench(*qa_args(tiny, out, "--judge", "single", "--no-cache")) == 1
    rows = read_jsonl(out / "samples.jsonl")
    assert len(rows) == 10
    for r in rows:
        if r["key"].endswith("::retrieval"):
            assert r["status"] == "failed" and r["error"] == "RuntimeError: vector store exploded"
        else:
            assert r["status"] == "ok" and r["judge"]["single"]["correct"] is not None
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_failed"] == 5 and summary["complete"] is True
    fc, rt = summary["methods"]["full_context"], summary["methods"]["retrieval"]
    assert (fc["n_ok"], fc["n_failed"]) == (5, 0) and fc["qa"]["single"]["n"] == 5
    assert (rt["n_ok"], rt["n_failed"]) == (0, 5) and rt["qa"]["single"] is None and rt["retrieval"] is None
    assert {f["error"] for f in rt["failed"]} == {"RuntimeError: vector store exploded"}
    report = (out / "report.md").read_text()
    assert "## Failures" in report and "vector store exploded" in report
    assert "5 failed" in capsys.readouterr().err

    # Fixed: --resume redoes only the failed units.
    monkeypatch.undo()
    assert bench(*qa_args(tiny, out, "--judge", "single", "--no-cache"), "--resume") == 0
    rows = read_jsonl(out / "samples.jsonl")
    assert len(rows) == 10 and all(r["status"] == "ok" for r in rows)
    assert json.loads((out / "summary.json").read_text())["n_failed"] == 0


def _bad_files(entries: dict[str, dict]) -> dict[str, tuple[Any, list[str]]]:
    good = entries["8077ef71"]
    missing = {k: v for k, v in entries["dfde3500"].items() if k != "haystack_sessions"}
    lengths = dict(entries["dfde3500"], haystack_dates=entries["dfde3500"]["haystack_dates"][:1])
    bad_date = json.loads(json.dumps(entries["dfde3500"]))
    bad_date["haystack_dates"][1] = "28-05-2023 19:47"
    bad_qdate = dict(entries["dfde3500"], question_date="yesterday")
    return {
        "not_a_list": ({"questions": [good]}, ["expected a JSON list"]),
        "missing_sessions": ([good, missing], ["entry 1", "question_id dfde3500", "haystack_sessions", "missing"]),
        "lengths": ([good, lengths], ["entry 1", "question_id dfde3500", "differ in length"]),
        "bad_date": ([good, bad_date], ["entry 1", "question_id dfde3500", "answer_35d6c0be_2", "28-05-2023 19:47"]),
        "bad_question_date": ([good, bad_qdate], ["entry 1", "question_id dfde3500", "question_date", "yesterday"]),
        "not_json": (None, ["invalid JSON"]),
    }


@pytest.mark.parametrize("case", ["not_a_list", "missing_sessions", "lengths", "bad_date", "bad_question_date",
                                  "not_json"])
def test_malformed_dataset_exits_2_with_one_line(case, oracle_entries, tmp_path, capsys):
    content, needles = _bad_files(oracle_entries)[case]
    path = tmp_path / f"{case}.json"
    path.write_text("[{\"question_id\": " if content is None else json.dumps(content))
    out = tmp_path / "out"
    assert bench(*qa_args(path, out)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error:") and str(path) in err
    for needle in needles:
        assert needle in err, (needle, err)
    assert not (out / "samples.jsonl").exists()


@pytest.mark.parametrize("extra,needle", [
    (["--systems", "full_context,no_such_system"], "no_such_system"),
    (["--systems", "retrieval", "--set", "retrieval.k=0"], "'k'"),
    (["--systems", "retrieval", "--set", "retrieval.no_such_field=3"], "no_such_field"),
    (["--systems", "retrieval", "--set", "full_context.max_context_tokens=10"], "not in --systems"),
    (["--systems", "retrieval", "--set", "retrieval"], "SYSTEM.KEY=VALUE"),
    (["--systems", "retrieval", "--qdrant-url", "localhost:6333"], "http"),
])
def test_bad_systems_and_settings_exit_2(tiny, tmp_path, capsys, extra, needle):
    out = tmp_path / "out"
    assert bench("--data", str(tiny), "--out", str(out), "--embedder", "hash", *extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
    assert not out.exists()  # refused before any work


def test_qa_mode_requires_systems(tiny, tmp_path, capsys):
    assert bench("--data", str(tiny), "--out", str(tmp_path / "o"), "--embedder", "hash") == 2
    assert "--systems is required" in capsys.readouterr().err


def test_unknown_ranker_exits_2(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert bench("--data", str(tiny), "--out", str(out), "--retrieval-only", "--rankers", "bm25,splade",
                 "--embedder", "hash") == 2
    err = capsys.readouterr().err
    assert "unknown ranker 'splade'" in err and "bm25, dense, hybrid" in err
    assert not out.exists()


# --- 5. the S dev slice -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not S_DEV.exists(), reason="LongMemEval S dev slice not available")
def test_s_dev_slice_loads_and_runs_retrieval_only(tmp_path):
    qs = load_longmemeval(S_DEV)
    assert len(qs) == 98
    counts: dict[str, int] = {}
    for q in qs:
        counts[q.question_type] = counts.get(q.question_type, 0) + 1
    assert counts == {"temporal-reasoning": 26, "multi-session": 26, "knowledge-update": 15,
                      "single-session-user": 14, "single-session-assistant": 11, "single-session-preference": 6}
    assert all(38 <= len(q.sessions) <= 62 for q in qs)
    assert all(set(q.answer_session_ids) <= {s.id for s in q.sessions} for q in qs)

    out = tmp_path / "s"
    assert bench("--data", str(S_DEV), "--out", str(out), "--retrieval-only", "--rankers", "bm25", "--limit", "3",
                 "--embedder", "hash") == 0
    rows = read_jsonl(out / "samples.jsonl")
    assert sorted(r["question_id"] for r in rows) == sorted(q.question_id for q in qs[:3])
    for r in rows:
        assert r["status"] == "ok" and r["method"] == "bm25"
        if r["retrieval"]["evaluable"]:  # S haystacks hold ~50 sessions: the ranking stops at the depth or the haystack
            ranked = r["retrieval"]["ranked_sessions"]
            assert 40 <= len(ranked) == min(r["retrieval"]["depth"]["session"], 50)
    summary = json.loads((out / "summary.json").read_text())
    t = summary["methods"]["bm25"]["retrieval"]
    assert t["n_evaluable"] + sum(t["excluded"].values()) == 3
    assert summary["n_questions"] == 3 and summary["complete"] is True


def test_qdrant_url_pointing_at_nothing_fails_once_up_front(tiny, tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "out"
    code = bench("--data", str(tiny), "--systems", "retrieval", "--embedder", "hash",
                 "--qdrant-url", f"http://127.0.0.1:{port}", "--out", str(out))
    err = capsys.readouterr().err.strip()
    assert code == 2 and f"cannot reach Qdrant at http://127.0.0.1:{port}" in err
    assert "Traceback" not in err and not out.exists()
