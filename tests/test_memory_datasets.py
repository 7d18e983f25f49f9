"""Dataset loaders on the shipped data, and on malformed copies of it (one-line DatasetError)."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

import pytest

from chateval.datasets import DatasetError, load_locomo, load_longmemeval, load_msc
from chateval.datasets.locomo import CATEGORIES, parse_evidence, parse_locomo_date
from chateval.datasets.longmemeval import parse_lme_date
from chateval.datasets.msc import DEFAULT_START, parse_interval

from .conftest import SHARED

LME_ORACLE = SHARED / "longmemeval" / "longmemeval_oracle.json"
LME_S_DEV = SHARED / "longmemeval" / "longmemeval_s_dev.json"
LOCOMO_DEV = SHARED / "locomo" / "locomo_dev2.json"
MSC_SAMPLE = SHARED / "theanine" / "sample_dialogue.json"

pytestmark = pytest.mark.skipif(not LME_ORACLE.exists(), reason=f"shared data not found at {SHARED}")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture(scope="module")
def oracle_raw() -> list[dict]:
    return json.loads(LME_ORACLE.read_text())


@pytest.fixture(scope="module")
def oracle(oracle_raw):
    return {q.question_id: q for q in load_longmemeval(LME_ORACLE)}


@pytest.fixture(scope="module")
def locomo_raw() -> list[dict]:
    return json.loads(LOCOMO_DEV.read_text())


# --- LongMemEval -------------------------------------------------------------------------
def test_longmemeval_oracle_loads_all_questions(oracle, oracle_raw):
    assert len(oracle) == 500
    assert sum(q.is_abstention for q in oracle.values()) == 30
    ints = [e for e in oracle_raw if isinstance(e["answer"], int)]
    assert len(ints) == 32
    for e in ints:
        assert oracle[e["question_id"]].answer == str(e["answer"])  # counts cast to str
    assert all(isinstance(q.answer, str) for q in oracle.values())
    assert sum(len(q.sessions) for q in oracle.values()) == sum(len(e["haystack_session_ids"]) for e in oracle_raw)


def test_longmemeval_question_fields(oracle, oracle_raw):
    q = oracle["001be529"]
    assert q.question_type == "single-session-user"
    assert q.answer == "over a year"
    assert q.question_date == utc(2023, 5, 28, 19, 47)
    raw = next(e for e in oracle_raw if e["question_id"] == "00ca467f")
    q = oracle["00ca467f"]
    assert q.answer == "2" and q.answer_session_ids == [str(s) for s in raw["answer_session_ids"]]
    # Sessions keep the file's order, ids and parsed dates.
    assert [s.id for s in q.sessions] == raw["haystack_session_ids"]
    assert [s.date for s in q.sessions] == [utc(2023, 3, 27, 5, 51), utc(2023, 3, 27, 11, 50), utc(2023, 3, 27, 13, 27)]
    for s, turns in zip(q.sessions, raw["haystack_sessions"]):
        assert len(s.turns) == len(turns)
        # Turn ids follow the official retrieval code: <session_id>_<turn index + 1>.
        assert [t.id for t in s.turns] == [f"{s.id}_{i + 1}" for i in range(len(turns))]
        assert [t.role for t in s.turns] == [t["role"] for t in turns]
        assert [t.content for t in s.turns] == [t["content"] for t in turns]
        assert [t.meta["has_answer"] for t in s.turns] == [bool(t.get("has_answer", False)) for t in turns]
    assert q.sessions[0].turns[0].meta["has_answer"] is True and q.sessions[0].turns[1].meta["has_answer"] is False


def test_longmemeval_unsorted_sessions_keep_file_order(oracle):
    q = oracle["6613b389"]  # the oracle lists these sessions out of date order
    dates = [s.date for s in q.sessions]
    assert dates != sorted(dates)
    assert all(d.tzinfo is timezone.utc for d in dates)


def test_longmemeval_limit(oracle):
    assert [q.question_id for q in load_longmemeval(LME_ORACLE, limit=3)] == sorted(oracle)[:3]


@pytest.mark.skipif(not LME_S_DEV.exists(), reason="longmemeval_s_dev.json not shipped")
def test_longmemeval_s_dev_slice():
    qs = load_longmemeval(LME_S_DEV)
    assert len(qs) == 98 and len({q.question_id for q in qs}) == 98
    assert all(30 <= len(q.sessions) <= 70 for q in qs)
    for q in qs:
        ids = {s.id for s in q.sessions}
        assert set(q.answer_session_ids) <= ids, q.question_id
    assert {q.question_type for q in qs} == {"temporal-reasoning", "multi-session", "knowledge-update",
                                             "single-session-user", "single-session-assistant",
                                             "single-session-preference"}


def test_parse_lme_date():
    assert parse_lme_date("2023/05/28 (Sun) 19:47") == utc(2023, 5, 28, 19, 47)
    assert parse_lme_date("2023/05/28 19:47") == utc(2023, 5, 28, 19, 47)
    with pytest.raises(ValueError):
        parse_lme_date("28 May 2023")


@pytest.fixture
def lme_entry(oracle_raw) -> dict:
    return copy.deepcopy(next(e for e in oracle_raw if e["question_id"] == "00ca467f"))


def test_longmemeval_not_a_list(tmp_path, lme_entry):
    path = write(tmp_path, "lme.json", lme_entry)
    with pytest.raises(DatasetError, match="expected a JSON list of questions"):
        load_longmemeval(path)


@pytest.mark.parametrize("field", ["question", "question_date", "haystack_dates", "haystack_sessions", "answer"])
def test_longmemeval_missing_field(tmp_path, lme_entry, field):
    good = copy.deepcopy(lme_entry) | {"question_id": "good"}
    del lme_entry[field]
    path = write(tmp_path, "lme.json", [good, lme_entry])
    with pytest.raises(DatasetError) as info:
        load_longmemeval(path)
    msg = str(info.value)
    assert "entry 1 (question_id 00ca467f)" in msg and f"'{field}' missing" in msg and "\n" not in msg


def test_longmemeval_mismatched_haystack_lengths(tmp_path, lme_entry):
    lme_entry["haystack_dates"] = lme_entry["haystack_dates"][:-1]
    path = write(tmp_path, "lme.json", [lme_entry])
    with pytest.raises(DatasetError, match=r"entry 0 \(question_id 00ca467f\): haystack_session_ids, haystack_dates "
                                           r"and haystack_sessions differ in length"):
        load_longmemeval(path)


@pytest.mark.parametrize("field", ["haystack_dates", "question_date"])
def test_longmemeval_bad_date(tmp_path, lme_entry, field):
    if field == "haystack_dates":
        lme_entry["haystack_dates"][1] = "2023-03-27T11:50"
    else:
        lme_entry["question_date"] = "yesterday"
    path = write(tmp_path, "lme.json", [lme_entry])
    with pytest.raises(DatasetError) as info:
        load_longmemeval(path)
    msg = str(info.value)
    assert "entry 0 (question_id 00ca467f)" in msg and field in msg and "\n" not in msg
    assert "2023-03-27T11:50" in msg if field == "haystack_dates" else "'yesterday'" in msg
    if field == "haystack_dates":
        assert "answer_39900a0a_2" in msg  # names the session


def test_longmemeval_wrong_types_and_bad_json(tmp_path, lme_entry):
    bad = copy.deepcopy(lme_entry) | {"haystack_sessions": "not a list"}
    with pytest.raises(DatasetError, match="field 'haystack_sessions' should be list, got str"):
        load_longmemeval(write(tmp_path, "a.json", [bad]))
    with pytest.raises(DatasetError, match="entry 0 .*expected an object, got str"):
        load_longmemeval(write(tmp_path, "b.json", ["just a string"]))
    sess = copy.deepcopy(lme_entry)
    sess["haystack_sessions"][0] = {"role": "user"}
    with pytest.raises(DatasetError, match="session 'answer_39900a0a_1' should be a list of turns"):
        load_longmemeval(write(tmp_path, "c.json", [sess]))
    (tmp_path / "d.json").write_text("[{")
    with pytest.raises(DatasetError, match=r"d\.json:1: invalid JSON"):
        load_longmemeval(tmp_path / "d.json")
    with pytest.raises(DatasetError, match="LongMemEval file not found"):
        load_longmemeval(tmp_path / "missing.json")


# --- LoCoMo ------------------------------------------------------------------------------
def test_locomo_dev2_loads(locomo_raw):
    convs = load_locomo(LOCOMO_DEV)
    assert [c.id for c in convs] == ["conv-26", "conv-30"]
    for c, raw in zip(convs, locomo_raw):
        assert len(c.sessions) == 19
        assert [s.id for s in c.sessions] == [f"{c.id}-session_{n}" for n in range(1, 20)]
        dates = [s.date for s in c.sessions]
        assert dates == sorted(dates) and all(d.tzinfo is timezone.utc for d in dates)
        assert len(c.qa) == len(raw["qa"])
        assert c.speakers == [raw["conversation"]["speaker_a"], raw["conversation"]["speaker_b"]]
        assert {q.category for q in c.qa} <= set(CATEGORIES)
    c26 = convs[0]
    assert c26.sessions[0].date == utc(2023, 5, 8, 13, 56)  # '1:56 pm on 8 May, 2023'
    assert convs[1].sessions[0].date == utc(2023, 1, 20, 16, 4)  # '4:04 pm on 20 January, 2023'
    first = c26.sessions[0].turns[0]
    assert first.id == "D1:1" and first.role == "Caroline"
    assert sum(len(s.turns) for s in c26.sessions) == 419
    assert len(c26.qa) == 199
    assert {q.category for q in c26.qa} == {1, 2, 3, 4, 5}
    photo = next(t for s in c26.sessions for t in s.turns if "[shares a photo:" in t.content)
    assert photo.content.endswith("]")
    # Category 5 mostly has no answer, only an adversarial one; int answers become strings.
    no_answer = [q for q in c26.qa if q.answer is None]
    assert len(no_answer) == 45 and all(q.category == 5 for q in no_answer)
    assert c26.qa[1].answer == "2022"
    assert all(q.adversarial_answer for q in no_answer)
    # Defensive evidence parsing on the real quirks: empty lists and 'D8:6; D9:17'.
    assert c26.qa[30].evidence == [] and c26.qa[46].evidence == []
    assert c26.qa[37].evidence == ["D8:6", "D9:17"]


def test_parse_evidence_quirks():
    assert parse_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert parse_evidence(["D:11:26"]) == ["D11:26"]
    assert parse_evidence(["D"]) == []
    assert parse_evidence(["D30:05", "D1:3,D2:4"]) == ["D30:5", "D1:3", "D2:4"]
    assert parse_evidence(None) == [] and parse_evidence([]) == []


def test_parse_locomo_date():
    assert parse_locomo_date(" 1:56 pm on 8 May, 2023 ") == utc(2023, 5, 8, 13, 56)
    assert parse_locomo_date("12:09 am on 13 September, 2023") == utc(2023, 9, 13, 0, 9)


def test_locomo_malformed_evidence_in_a_copy(tmp_path, locomo_raw):
    data = copy.deepcopy(locomo_raw[:1])
    data[0]["qa"][0]["evidence"] = ["D:11:26", "D", "D8:6; D9:17"]
    conv = load_locomo(write(tmp_path, "locomo.json", data))[0]
    assert conv.qa[0].evidence == ["D11:26", "D8:6", "D9:17"]


def test_locomo_malformed_copies(tmp_path, locomo_raw):
    with pytest.raises(DatasetError, match="expected a JSON list of conversations"):
        load_locomo(write(tmp_path, "a.json", locomo_raw[0]))

    data = copy.deepcopy(locomo_raw)
    del data[1]["qa"]
    with pytest.raises(DatasetError, match=r"conversation 1 \(conv-30\): field 'qa' missing"):
        load_locomo(write(tmp_path, "b.json", data))

    data = copy.deepcopy(locomo_raw)
    del data[0]["sample_id"]
    with pytest.raises(DatasetError, match="conversation 0: field 'sample_id' missing"):
        load_locomo(write(tmp_path, "c.json", data))

    data = copy.deepcopy(locomo_raw)
    data[0]["conversation"]["session_3_date_time"] = "2023-05-08"
    with pytest.raises(DatasetError, match=r"\(conv-26\): session_3_date_time '2023-05-08' is not like"):
        load_locomo(write(tmp_path, "d.json", data))

    data = copy.deepcopy(locomo_raw)
    del data[0]["conversation"]["session_2_date_time"]
    with pytest.raises(DatasetError, match=r"\(conv-26\): session_2_date_time missing"):
        load_locomo(write(tmp_path, "e.json", data))

    data = copy.deepcopy(locomo_raw)
    del data[0]["qa"][4]["question"]
    with pytest.raises(DatasetError, match=r"\(conv-26\): qa 4: field 'question' missing"):
        load_locomo(write(tmp_path, "f.json", data))

    data = copy.deepcopy(locomo_raw)
    data[0]["qa"][4]["category"] = "four"
    with pytest.raises(DatasetError, match=r"qa 4: field 'category' should be int, got str"):
        load_locomo(write(tmp_path, "g.json", data))


def test_locomo_malformed_turns(tmp_path, locomo_raw):
    data = copy.deepcopy(locomo_raw[:1])
    data[0]["conversation"]["session_2"] = "not a list"
    with pytest.raises(DatasetError, match=r"\(conv-26\): session_2 should be a list of turns"):
        load_locomo(write(tmp_path, "a.json", data))
    data = copy.deepcopy(locomo_raw[:1])
    data[0]["conversation"]["session_2"][3] = "just text"
    with pytest.raises(DatasetError, match=r"\(conv-26\): session_2 turn 3 should be an object"):
        load_locomo(write(tmp_path, "b.json", data))


# --- Multi-Session Chat ------------------------------------------------------------------
def test_msc_sample_loads():
    (ep,) = load_msc(MSC_SAMPLE)
    assert ep.id == "msc-episode-30"
    assert [len(s.turns) for s in ep.sessions] == [14, 10, 12, 12, 12]
    assert [s.id for s in ep.sessions] == [f"msc-episode-30-s{n}" for n in range(1, 6)]
    assert [s.date for s in ep.sessions] == [DEFAULT_START + timedelta(days=7 * i) for i in range(5)]
    assert ep.speakers == ["Speaker A", "Speaker B"]
    t = ep.sessions[1].turns[0]
    assert t.id == "msc-episode-30-s2-t1" and t.role in ep.speakers and t.content


def test_msc_custom_gap_and_start():
    start = utc(2020, 1, 1)
    (ep,) = load_msc(MSC_SAMPLE, gap=timedelta(days=1), start=start)
    assert [s.date for s in ep.sessions] == [start + timedelta(days=i) for i in range(5)]


def test_msc_time_intervals_per_ordinal_field(tmp_path):
    (raw,) = json.loads(MSC_SAMPLE.read_text())
    raw |= {"second_time_interval": "2 days", "third_time_interval": "a few hours",
            "fourth_time_interval": "some time later", "fifth_time_interval": "1 month"}
    (ep,) = load_msc(write(tmp_path, "msc.json", raw))  # a single episode object is accepted
    d = [s.date for s in ep.sessions]
    assert d[0] == DEFAULT_START
    assert [b - a for a, b in zip(d, d[1:])] == [timedelta(days=2), timedelta(hours=3), timedelta(days=7),
                                                 timedelta(days=30)]  # unreadable text: the default gap


@pytest.mark.parametrize("intervals", [
    ["", "2 days", "A few hours after", "soon", "A couple of months after"],  # one per session
    ["2 days", "A few hours after", "soon", "A couple of months after"],  # one per gap
])
def test_msc_time_interval_list(tmp_path, intervals):
    """The msc-raw / Conversation Chronicles layout: a ``time_interval`` list."""
    (raw,) = json.loads(MSC_SAMPLE.read_text())
    raw["time_interval"] = intervals
    (ep,) = load_msc(write(tmp_path, "msc.json", [raw]))
    d = [s.date for s in ep.sessions]
    assert [b - a for a, b in zip(d, d[1:])] == [timedelta(days=2), timedelta(hours=3), timedelta(days=7),
                                                 timedelta(days=60)]


@pytest.mark.parametrize("text,expected", [
    ("2 days", timedelta(days=2)), ("a few hours", timedelta(hours=3)), ("an hour", timedelta(hours=1)),
    ("10 minutes later", timedelta(minutes=10)), ("several weeks", timedelta(weeks=5)),
    ("1 Year", timedelta(days=365)), ("One year after", timedelta(days=365)),
    ("A couple of days after", timedelta(days=2)), ("soon", None), ("", None), ("alpha days", None),
])
def test_msc_parse_interval(text, expected):
    assert parse_interval(text) == expected


def test_msc_malformed(tmp_path):
    (raw,) = json.loads(MSC_SAMPLE.read_text())
    with pytest.raises(DatasetError, match="expected a list of episodes"):
        load_msc(write(tmp_path, "a.json", "text"))
    with pytest.raises(DatasetError, match="episode 0: expected an object"):
        load_msc(write(tmp_path, "b.json", [1]))
    bad = copy.deepcopy(raw)
    bad["second_session_speakers"] = bad["second_session_speakers"][:-1]
    with pytest.raises(DatasetError, match=r"episode 0 \(msc-episode-30\): second_session_dialogue and _speakers"):
        load_msc(write(tmp_path, "c.json", [bad]))
    with pytest.raises(DatasetError, match=r"episode 0 \(x\): no '<ordinal>_session_dialogue' fields"):
        load_msc(write(tmp_path, "d.json", [{"dataID": "x"}]))
