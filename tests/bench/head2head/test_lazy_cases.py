"""head2head reads a LongMemEval file an entry at a time (issue 38 item 3): each case keeps its
entry compressed and parses its sessions again when a system ingests them. The cases, their
sessions and every error are those of the whole-file read; the run's slots are let go after the
last case of their group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.bench.head2head.pairs import lazy_lme_cases, load_cases
from chateval.bench.slot import SlotPool
from chateval.datasets.common import DatasetError, array_items, read_json
from chateval.datasets.longmemeval import lme_questions

from ...conftest import FIXTURES

LME = FIXTURES / "lme_tiny.json"
FIELDS = ("key", "group", "question", "gold", "now", "qtype", "rule", "names", "meta")


def whole_file_error(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The error of the whole-file read (what head2head reported before it read lazily)."""
    with monkeypatch.context() as m:
        m.setattr("chateval.bench.head2head.pairs.lazy_lme_cases", lambda path: None)
        with pytest.raises(DatasetError) as e:
            load_cases(path)
    return str(e.value)


@pytest.mark.parametrize(
    "text",
    ["[]", ' [ 1 , {"a": [1, 2.5e3, null]} ,"x\\u00e9"] \n', "[\n\t{}\r\n]", '[{"k": "a, ] b"}, []]'],
)
def test_array_items_are_what_json_loads_gives(text):
    items = list(array_items(text))
    assert [v for _, v in items] == json.loads(text)
    assert [json.loads(t) for t, _ in items] == json.loads(text)  # each item's own text


@pytest.mark.parametrize("text", ["{}", "[1,]", "[1 2]", "[1] x", "[1", "", "\ufeff[1]"])
def test_array_items_refuse_what_is_not_one_json_array(text):
    with pytest.raises(ValueError):
        list(array_items(text))


@pytest.mark.parametrize("indent", [None, 2])
def test_lazy_cases_are_those_of_the_whole_file(tmp_path, indent):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(json.loads(LME.read_text()), indent=indent))
    kind, cases = load_cases(path)
    questions = lme_questions(read_json(path, "LongMemEval"), path)
    assert kind == "longmemeval" and len(cases) == len(questions) == 5
    for case, q in zip(cases, questions):
        assert isinstance(case.history, bytes)  # held compressed, not parsed
        assert case.sessions == q.sessions and case.sessions is not case.sessions  # parsed on each use
        assert (case.key, case.now, case.gold, case.question) == (q.question_id, q.question_date, q.answer, q.question)
    abstention = next(c for c in cases if c.key == "t_car_abs")
    assert abstention.qtype == "abstention" and abstention.meta["abstention"] is True


def test_lazy_and_whole_file_cases_agree_field_by_field(tmp_path):
    # A file the lazy reader passes on (a UTF-8 byte order mark) is read whole: the same cases.
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + LME.read_bytes())
    assert lazy_lme_cases(bom) is None
    kind, whole = load_cases(bom)
    _, lazy = load_cases(LME)
    assert kind == "longmemeval" and all(isinstance(c.history, list) for c in whole)
    for a, b in zip(lazy, whole):
        assert all(getattr(a, f) == getattr(b, f) for f in FIELDS) and a.sessions == b.sessions


def bad_files(tmp_path: Path) -> dict[str, bytes]:
    good = json.loads(LME.read_text())
    missing = [dict(good[0]), *good[1:]]
    del missing[0]["question_date"]
    text = json.dumps(missing)
    return {
        "a field missing": text.encode(),
        # an entry's error and bad JSON further on: the JSON error, as the whole-file read says
        "bad JSON after a bad entry": (text[:-1] + ", {").encode(),
        "extra data": (json.dumps(good) + "\n" + json.dumps(good)).encode(),
        "duplicate id": json.dumps([*good, good[2]]).encode(),
        "empty": b"[]",
        "not UTF-8": json.dumps(good).replace("Miso", "Mi\\u00e9so").encode().replace(b"\\u00e9", b"\xe9"),
        "lone surrogate": json.dumps(good).replace("Miso", "Mi\\ud800so").encode(),
    }


def test_every_bad_file_gives_the_whole_file_error(tmp_path, monkeypatch):
    for name, raw in bad_files(tmp_path).items():
        path = tmp_path / f"{name.replace(' ', '_')}.json"
        path.write_bytes(raw)
        assert lazy_lme_cases(path) is None, name
        with pytest.raises(DatasetError) as e:
            load_cases(path)
        assert str(e.value) == whole_file_error(path, monkeypatch), name


def test_locomo_cases_share_their_conversation_sessions():
    kind, cases = load_cases(FIXTURES / "locomo_tiny.json")
    assert kind == "locomo" and all(isinstance(c.history, list) for c in cases)
    assert len({id(c.sessions) for c in cases}) == 1


class FakeSlot:
    closed = 0

    def __init__(self, *args, **kwargs) -> None:
        pass

    def close(self) -> None:
        FakeSlot.closed += 1


def test_a_slot_is_let_go_after_its_groups_last_unit(monkeypatch):
    monkeypatch.setattr("chateval.bench.slot.SystemSlot", FakeSlot)
    asked: list[str] = []
    pool = SlotPool(None, [("g1", "A"), ("g1", "A"), ("g2", "A")], sessions=lambda g: asked.append(g) or [])  # type: ignore[arg-type]
    first = pool.get("g1", "A")
    assert pool.get("g1", "A") is first and asked == ["g1"]  # one slot per (group, system)
    pool.done("g1", "A")
    assert FakeSlot.closed == 0 and ("g1", "A") in pool.slots
    pool.get("g2", "A")
    pool.done("g1", "A")
    assert FakeSlot.closed == 1 and set(pool.slots) == {("g2", "A")} and set(pool.left) == {("g2", "A")}
    pool.done("g2", "A")
    assert FakeSlot.closed == 2 and not pool.slots and not pool.left
