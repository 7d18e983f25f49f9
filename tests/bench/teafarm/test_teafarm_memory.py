"""TeaFarm's memory as the run grows (issue 38 item 3): teabag.json written a conversation at a
time (the same text as the whole bag dumped at once), the bag held as each conversation's JSON
text and parsed again when asked, finished slots dropped from the pool, the input parsed once."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from chateval.bench import slot as slot_mod
from chateval.bench.teafarm import packed as packed_mod
from chateval.bench.teafarm.packed import PackedBag
from chateval.cli import main
from chateval.datasets import common, conversations, locomo, msc
from chateval.datasets.teabag import (
    TEABAG_FILE,
    SessionSummary,
    SimTurn,
    SpeakerEvent,
    TeaBag,
    TeaConversation,
    TeaQuestion,
)
from chateval.runs.files import write_json, write_json_list

from ...conftest import FIXTURES, SHARED

D = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("head", "items"),
    [
        ({"a": 1, "b": "two\nlines", "c": None}, [{"x": [1, {"y": "é – \u2028"}], "z": []}, {}, [], "s", 2.5]),
        ({"a": 1}, []),
        ({}, [{"k": "v"}]),
        ({}, []),
    ],
    ids=["nested", "empty-list", "empty-head", "both-empty"],
)
def test_the_list_written_an_item_at_a_time_is_the_text_write_json_writes(tmp_path, head, items):
    write_json(tmp_path / "whole.json", head | {"items": items})
    write_json_list(tmp_path / "parts.json", head, "items", iter(items))
    assert (tmp_path / "parts.json").read_text() == (tmp_path / "whole.json").read_text()


def question(i: int) -> TeaQuestion:
    return TeaQuestion(
        id=f"q{i}", asker="A", listener="B", question=f"Why did you sell the boat {i}?", answer="I never had one",
        date=D, turns=[SimTurn(speaker="A", text="Hi!"), SimTurn(speaker="B", text="Hello.")],
    )  # fmt: skip


def bag_of(n: int) -> TeaBag:
    summary = SessionSummary(session_id="s1", date=D, events=[SpeakerEvent(speaker="A", event="I bought a kayak.")])
    return TeaBag(
        data="x.json",
        data_format="locomo",
        generator_model="offline",
        per_speaker=1,
        conversations=[
            TeaConversation(
                id=f"c{i}", speakers=["A", "B"], summaries=[summary], questions=[question(i), question(i + 100)]
            )
            for i in range(n)
        ],
    )


def test_a_packed_bag_gives_back_each_conversation_and_dumps_as_the_whole_bag(tmp_path, monkeypatch):
    monkeypatch.setattr(packed_mod, "PARSED", 3)
    bag = bag_of(7)
    packed = PackedBag(
        bag.model_copy(update={"conversations": []}), {c.id: c.model_dump_json() for c in bag.conversations}
    )
    assert len(packed) == 7
    for c in bag.conversations + bag.conversations[::-1]:  # parsed again once it has left the few kept
        assert packed.conversation(c.id) == c
        tc, q = packed.question(c.id, "q1" if c.id == "c1" else c.questions[1].id)
        assert tc == c and q == c.questions[0 if c.id == "c1" else 1]
        assert len(packed._parsed) <= 3
    write_json(tmp_path / "whole.json", bag.model_dump(mode="json"))
    write_json_list(tmp_path / "parts.json", packed.head_dump(), "conversations", packed.dumped())
    assert (tmp_path / "parts.json").read_text() == (tmp_path / "whole.json").read_text()
    assert packed.first(2) == bag.model_copy(update={"conversations": bag.conversations[:2]})


def test_teafarm_teabag_file_is_the_bag_dumped_whole(tmp_path):
    out = tmp_path / "run"
    argv = ["bench", "teafarm", "--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "full_context"]
    assert (
        main(argv + ["--per-speaker", "2", "--answer-model", "offline", "--embedder", "hash", "--out", str(out)]) == 0
    )
    text = (out / TEABAG_FILE).read_text()
    bag = TeaBag.load(out / TEABAG_FILE)
    assert len(bag.conversations) == 1 and len(bag.conversations[0].questions) == 4
    assert text == json.dumps(bag.model_dump(mode="json"), indent=2, ensure_ascii=False, default=str) + "\n"
    assert json.loads((out / "summary.json").read_text())["n_questions"] == 4


def test_a_finished_slot_leaves_the_pool(monkeypatch):
    closed: list[str] = []
    monkeypatch.setattr(slot_mod.SystemSlot, "close", lambda self: closed.append(self.name))
    pool = slot_mod.SlotPool(None, [("g1", "s"), ("g1", "s"), ("g2", "s")], sessions=lambda g: [])  # type: ignore[arg-type]
    first = pool.get("g1", "s")
    assert pool.get("g1", "s") is first and pool.get("g2", "s") is not first
    pool.done("g1", "s")
    assert ("g1", "s") in pool.slots and not closed
    pool.done("g1", "s")
    assert ("g1", "s") not in pool.slots and closed == ["s"]  # dropped, not only closed
    pool.done("g2", "s")
    assert pool.slots == {} and closed == ["s", "s"]


@pytest.mark.parametrize("path", [FIXTURES / "locomo_tiny.json", SHARED / "theanine" / "sample_dialogue.json"])
def test_a_conversations_file_is_parsed_once(monkeypatch, path):
    if not path.exists():
        pytest.skip(f"{path} not present")
    reads: list[str] = []

    def counted(*args, **kw):
        reads.append(str(args[0]))
        return common.read_json(*args, **kw)

    for mod in (conversations, locomo, msc):
        monkeypatch.setattr(mod, "read_json", counted)
    kind, convs = conversations.load_conversations(path)
    assert reads == [str(path)] and convs and kind in ("locomo", "msc")


def test_a_conversation_is_let_go_once_every_system_has_ingested_it():
    from chateval.bench.teafarm.teafarm import Ingested
    from chateval.datasets.conversations import Conversation

    by_conv = {c: Conversation(c, ["A", "B"], []) for c in ("c1", "c2")}
    pending = [("c1", "x"), ("c1", "x"), ("c1", "y"), ("c2", "x")]  # a unit each: c1 has two systems
    take = Ingested(by_conv, pending)
    assert take("c1") == [] and "c1" in by_conv  # system y has not ingested it yet
    assert take("c2") == [] and "c2" not in by_conv
    assert take("c1") == [] and by_conv == {}
