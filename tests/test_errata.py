"""The errata overlay of LoCoMo's gold answers (chateval/datasets/errata.py)."""

import json

import pytest

from chateval.datasets.common import DatasetError
from chateval.datasets.errata import conversation_of, load_errata, locomo_question_id

from .conftest import FIXTURES, needs_shared, shared

FIX = FIXTURES / "rejudge" / "errata_tiny.json"


def test_overlay_replaces_only_wrong_gold():
    e = load_errata(FIX)
    assert len(e.entries) == 3 and [x.question_id for x in e.wrong_gold] == ["locomo_0_qa2", "locomo_1_qa0"]
    assert e.corrected("2022", "locomo_0_qa1") == "2022"  # a wrong citation: the answer stands
    assert e.corrected("Psychology", "locomo_0_qa2") == "Counselling"
    assert e.corrected("x", "locomo_5_qa9") == "x"  # not audited
    assert len(e.sha256) == 64


def test_match_by_text_within_the_conversation():
    e = load_errata(FIX)
    # No id (Zep's grades): the question's text within its conversation.
    assert e.find(question="  when did BEN move?", conversation=1).question_id == "locomo_1_qa0"
    assert e.find(question="When did Ben move?", conversation=0) is None
    assert e.find(question="When did Ben move?") is not None  # unique across the file
    assert locomo_question_id(3, 17) == "locomo_3_qa17" and conversation_of("locomo_3_qa17") == 3
    assert conversation_of("q1") is None


def test_bad_errata_name_the_entry_and_field(tmp_path):
    bad = tmp_path / "e.json"
    bad.write_text(json.dumps([{"question_id": "q1", "question": "?", "golden_answer": "a", "category": 1}]))
    with pytest.raises(DatasetError, match=r"e.json: entry 0 \(q1\): field 'error_type' missing"):
        load_errata(bad)
    bad.write_text(json.dumps({"a": 1}))
    with pytest.raises(DatasetError, match="expected a JSON list"):
        load_errata(bad)


@needs_shared("locomo_judged", "locomo_audit_errors.json")
def test_the_published_audit_ceiling():
    e = load_errata(shared("locomo_judged", "locomo_audit_errors.json"))
    assert len(e.entries) == 156 and len(e.wrong_gold) == 99
    assert e.counts()["WRONG_CITATION"] == 57
    assert round(100 * (1540 - len(e.wrong_gold)) / 1540, 2) == 93.57
