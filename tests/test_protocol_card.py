"""The protocol card (issue 36): its pieces, the category-count check, the top-k warning and the
comparison of two cards. The cards of real bench runs are tested in test_protocol_card_bench.py."""

from __future__ import annotations

import hashlib

import pytest

from chateval.records.protocol_card import (
    LOCOMO_NAMES,
    LOCOMO_UPSTREAM,
    JudgePrompt,
    ProtocolCard,
    ProtocolMismatch,
    build_card,
    card_differences,
    card_markdown,
    check_counts,
    read_card,
    top_k_entry,
)


def _card(tmp_path, **kw):
    data = tmp_path / "data.json"
    data.write_text("[]")
    args = dict(
        benchmark="locomo",
        data=data,
        found={1: 282, 2: 321, 3: 96, 4: 841, 5: 446},
        upstream=LOCOMO_UPSTREAM,
        names=LOCOMO_NAMES,
        versions={"chateval": "0"},
    )
    return build_card(**(args | kw))


def test_the_full_counts_pass_and_the_data_is_hashed(tmp_path):
    card = _card(tmp_path)
    assert card.counts_match is True and card.warnings == []
    assert card.data_sha256 == hashlib.sha256(b"[]").hexdigest()
    assert [(c.category, c.name, c.found, c.upstream) for c in card.categories][0] == ("1", "multi-hop", 282, 282)


def test_a_subset_warns_and_strict_refuses(tmp_path):
    card = _card(tmp_path, found={1: 31, 2: 37, 3: 13, 4: 70, 5: 47})
    assert card.counts_match is False
    assert len(card.warnings) == 1 and "a subset of the published file?" in card.warnings[0]
    assert "1: 31 found, 282 published" in card.warnings[0]
    with pytest.raises(ProtocolMismatch, match="strict"):
        _card(tmp_path, found={1: 31, 2: 37, 3: 13, 4: 70, 5: 47}, strict=True)


def test_a_renumbering_is_named():
    # mem0's numbering swaps labels: the same counts under other numbers.
    found = {"1": 841, "2": 321, "3": 96, "4": 282, "5": 446}
    (msg,) = check_counts(found, LOCOMO_UPSTREAM, what="LoCoMo")
    assert "numbered differently" in msg and "1: 841 found, 282 published" in msg
    assert check_counts(dict(LOCOMO_UPSTREAM), LOCOMO_UPSTREAM, what="LoCoMo") == []


def test_top_k_covering_the_history_warns(tmp_path):
    whole = top_k_entry("rag", {"k": 50, "granularity": "session"}, sessions=[40, 50, 60])
    assert (whole.k, whole.covered, whole.sessions_min, whole.sessions_max) == (50, 2, 40, 60) and whole.bypasses
    rounds = top_k_entry("rag", {"k": 50, "granularity": "round"}, sessions=[40, 50])
    assert not rounds.bypasses  # 50 rounds of a 40-session history: not everything
    small = top_k_entry("retrieval", {"k": 6, "min_score": None}, sessions=[19, 32])
    assert small.covered == 0 and not small.bypasses
    none = top_k_entry("full_context", {}, sessions=[19])
    assert none.k is None and not none.bypasses
    card = _card(tmp_path, top_k=[whole, small, none])
    assert [w for w in card.warnings if "retrieval is bypassed" in w] == [
        "rag: top-k 50 (k) is at least the number of sessions in 2 of 3 histories (sessions 40–60): where it "
        "recalls whole sessions it returns the whole history, and retrieval is bypassed"
    ]


def test_judge_prompt_hashes():
    j = JudgePrompt.of_text("single", "t.j2", "hello")
    assert j.sha256 == hashlib.sha256(b"hello").hexdigest()
    a = JudgePrompt.of_parts("debate", {"b": "2", "a": "1"})
    assert a.parts == ["a", "b"] and a.sha256 != JudgePrompt.of_parts("debate", {"b": "2", "a": "X"}).sha256


def test_markdown_and_round_trip(tmp_path):
    card = _card(tmp_path, found={1: 2}, judges=[JudgePrompt.of_text("single", "t.j2", "x")])
    md = "\n".join(card_markdown(card))
    assert md.startswith("## Protocol card") and "**Warning:**" in md and "DIFFER" in md
    assert "| judge prompt: single | sha256 " in md
    back = read_card(card.model_dump(mode="json"))
    assert back == card
    assert read_card(None) is None and read_card({"benchmark": 3, "categories": "x"}) is None


def test_differences_leave_out_paths_and_versions(tmp_path):
    a = _card(tmp_path, judge_model="gpt-4o-mini")
    b = ProtocolCard.model_validate(
        a.model_dump() | {"data": "elsewhere/locomo10.json", "versions": {"chateval": "9"}, "judge_model": "gpt-4o"}
    )
    assert card_differences(a, b) == [("judge model", "gpt-4o-mini", "gpt-4o")]
    assert card_differences(a, a) == []
