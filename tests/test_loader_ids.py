"""Loaders read what the official files hold and refuse what would be miscounted. The refusals
through the command line (one line, exit 2, nothing written) are cases in test_bad_inputs.py;
here: what must still be accepted next to them, the loaders called directly, and the parser of
comma-separated options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.cli.options import csv
from chateval.datasets import DatasetError, load_locomo, load_longmemeval, load_msc, load_msc_release
from chateval.datasets.checks import UniqueIds
from chateval.datasets.teabag import TeaBag
from chateval.util.errors import ConfigError

from .test_bad_inputs import lme_entry, locomo_conv, msc_episode, msc_release_row, tea_conv, tea_question, teabag


def write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_numbers_where_the_official_files_give_numbers_are_text(tmp_path):
    # LoCoMo gives some answers as numbers (years, counts); LongMemEval 32 oracle answers (counts).
    conv = locomo_conv(qa=[{"question": "When?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
                           {"question": "How much?", "answer": 2.5, "evidence": [], "category": 1},
                           {"question": "Who?", "adversarial_answer": 7, "evidence": [], "category": 5}])
    qa = load_locomo(write(tmp_path, "locomo.json", [conv]))[0].qa
    assert [q.answer for q in qa] == ["2022", "2.5", None]
    assert qa[2].adversarial_answer == "7"
    q = load_longmemeval(write(tmp_path, "lme.json", [lme_entry(answer=3)]))[0]
    assert q.answer == "3" and [t.role for t in q.sessions[0].turns] == ["user", "assistant"]


def test_distinct_ids_load(tmp_path):
    convs = load_locomo(write(tmp_path, "locomo.json", [locomo_conv(), locomo_conv(sample_id="conv-2")]))
    assert [c.id for c in convs] == ["conv-1", "conv-2"]
    assert [e.id for e in load_msc(write(tmp_path, "msc.json", [msc_episode("a"), msc_episode("b")]))] == ["a", "b"]
    rel = tmp_path / "rel.jsonl"
    rel.write_text("".join(json.dumps(msc_release_row(e)) + "\n" for e in ("a", "b")))
    assert [d.id for d in load_msc_release(rel)] == ["a", "b"]
    # One question id in two conversations is fine: units are keyed conversation::question.
    bag = tmp_path / "bag.json"
    bag.write_bytes(teabag(tea_conv("c1", tea_question("q1")), tea_conv("c2", tea_question("q1"))))
    assert [c.id for c in TeaBag.load(bag).conversations] == ["c1", "c2"]


@pytest.mark.parametrize("name,data,loader,message", [
    ("lme.json", [lme_entry(), lme_entry(question_id="q2"), lme_entry()], load_longmemeval,
     "lme.json: entry 2 (question_id q1): duplicate question_id 'q1' (also entry 0)"),
    ("locomo.json", [locomo_conv(sample_id="conv-41"), locomo_conv(sample_id="conv-41")], load_locomo,
     "locomo.json: conversation 1 (conv-41): duplicate sample_id 'conv-41' (also conversation 0)"),
    # An id and a number naming the same episode are one id (both become the key '7').
    ("msc.json", [msc_episode("7"), msc_episode("x") | {"dataID": 7}], load_msc,
     "msc.json: episode 1 (7): duplicate episode id '7' (also episode 0)"),
])
def test_a_json_file_with_an_id_twice_is_refused_naming_both_entries(tmp_path, name, data, loader, message):
    with pytest.raises(DatasetError) as e:
        loader(write(tmp_path, name, data))
    assert str(e.value) == f"{tmp_path / name}: {message.split(': ', 1)[1]}"


def test_an_msc_release_id_twice_names_both_lines(tmp_path):
    path = tmp_path / "msc.jsonl"
    path.write_text("".join(json.dumps(msc_release_row(e)) + "\n" for e in ("a", "b", "a")))
    with pytest.raises(DatasetError, match=r"msc\.jsonl:3: duplicate episode id \(metadata\.initial_data_id\) 'a' "
                                           r"\(also line 1\)"):
        load_msc_release(path)


def test_unique_ids_names_the_first_entry():
    ids = UniqueIds("sample_id", "conversation")
    ids.add("a", "f: conversation 0", 0)
    ids.add("b", "f: conversation 1", 1)
    with pytest.raises(DatasetError, match=r"^f: conversation 2: duplicate sample_id 'a' \(also conversation 0\)$"):
        ids.add("a", "f: conversation 2", 2)


@pytest.mark.parametrize("value,expected", [("a,b", ["a", "b"]), (" a , b ", ["a", "b"]), ("", []), ("  ", [])])
def test_comma_separated_options(value, expected):
    # '' stays the empty list: --rankers '' and --baselines '' mean "none".
    assert csv("--x")(value) == expected


@pytest.mark.parametrize("value", [",", " , a", "a,", "a,,b", " , "])
def test_comma_separated_options_refuse_an_empty_name(value):
    with pytest.raises(ConfigError, match=r"^--personas '.*': an empty name"):
        csv("--personas")(value)
