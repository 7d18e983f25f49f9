"""Issue 34, item 8: MSC as THEANINE's paper evaluates it — the test split, sessions 3 to 5, 50
episodes sampled with a seed — as a named protocol (``--protocol paper``) made of three options
(``--split``, ``--session 3,4,5``, ``--sample N --seed S``), each asserted on the episodes a run
evaluated; and the shared data (session 3 valid only) named when the files are missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.bench.msc.episodes import PROTOCOLS, msc_episodes, msc_protocol, sample_ids, session_paths
from chateval.bench.msc.settings import MSCResponseConfig
from chateval.cli import main
from chateval.util.errors import ConfigError

from ...conftest import FIXTURES

TINY = FIXTURES / "msc_release_tiny.jsonl"
IDS = [f"test_{k}" for k in range(8)]


def episode(eid: str, session: int) -> dict:
    """One release line of conversation ``eid`` whose last session is ``session``."""
    def turns(n: int, tag: str) -> list[dict]:
        return [{"text": f"{eid} {tag} turn {i}: I play the violin and work at the hospital."} for i in range(n)]

    previous = [{"dialog": turns(4, f"s{k + 1}"), "time_num": 2, "time_unit": "days"} for k in range(session - 1)]
    return {"previous_dialogs": previous, "dialog": turns(3, f"s{session}"),
            "metadata": {"initial_data_id": eid, "session_id": session - 1}}


def release(folder: Path, split: str = "test", missing: dict[int, str] | None = None) -> Path:
    """Sessions 3-5 of ``split``: conversations test_0..test_7, except ``missing[session]``."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in (3, 4, 5):
        rows = [episode(eid, n) for eid in IDS if (missing or {}).get(n) != eid]
        (folder / f"msc_session{n}_{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def config(folder: Path, **kw) -> MSCResponseConfig:
    return MSCResponseConfig(data=str(folder), out="unused", systems=["retrieval"], **kw)


def chosen(folder: Path, **kw) -> list[str]:
    c = config(folder, **kw)
    p = msc_protocol(c)
    return [e.id for e in msc_episodes(session_paths(c, p), p, c)]


def test_the_paper_protocol_is_the_test_split_sessions_3_to_5_and_50_sampled_episodes():
    assert PROTOCOLS["paper"].model_dump() == {"split": "test", "sessions": [3, 4, 5], "sample": 50}
    p = msc_protocol(MSCResponseConfig(out="x", protocol="paper"))
    assert (p.split, p.sessions, p.sample) == ("test", [3, 4, 5], 50)
    # Explicit options override the preset; the default protocol is session 3 valid, every episode.
    p = msc_protocol(MSCResponseConfig(out="x", protocol="paper", sample=3, session="3,4"))
    assert (p.split, p.sessions, p.sample) == ("test", [3, 4], 3)
    assert msc_protocol(MSCResponseConfig(out="x")).model_dump() == {"split": "valid", "sessions": [3], "sample": None}


def test_sampled_episodes_are_seeded_common_to_every_session_and_evaluated_at_each(tmp_path):
    folder = release(tmp_path / "msc", missing={4: "test_7"})
    ids = chosen(folder, protocol="paper", sample=3, seed=1)
    conversations = list(dict.fromkeys(i.rsplit("-s", 1)[0] for i in ids))
    assert len(conversations) == 3 and "test_7" not in conversations  # test_7 lacks session 4
    assert ids == [f"{c}-s{n}" for c in conversations for n in (3, 4, 5)]  # each at sessions 3, 4, 5
    assert conversations == [c for c in IDS if c in conversations]  # the data's order
    assert chosen(folder, protocol="paper", sample=3, seed=1) == ids  # the same seed, the same episodes
    other = {tuple(chosen(folder, protocol="paper", sample=3, seed=s)) for s in range(2, 6)}
    assert any(o != tuple(ids) for o in other)  # another seed, another draw
    # Without --sample every conversation of each session is taken (test_7 at sessions 3 and 5 only).
    everything = chosen(folder, split="test", session="3,4,5")
    assert len(everything) == 8 * 3 - 1 and "test_7-s4" not in everything and "test_7-s5" in everything
    # --question-ids and --limit pick conversations before the sample.
    assert chosen(folder, protocol="paper", sample=2, limit=4, seed=0)[0].rsplit("-s", 1)[0] in IDS[:4]
    with pytest.raises(ConfigError, match="--sample 50: only 7 episodes"):
        chosen(folder, protocol="paper")  # the preset's 50 from the 7 conversations in every session
    assert sample_ids(IDS, 8, 0) == IDS


@pytest.mark.slow
def test_a_run_with_the_paper_protocol_predicts_the_sampled_episodes_at_sessions_3_to_5(tmp_path):
    folder = release(tmp_path / "msc")
    out = tmp_path / "run"
    assert main(["bench", "msc-response", "--data", str(folder), "--protocol", "paper", "--sample", "2",
                 "--seed", "7", "--systems", "retrieval", "--embedder", "hash", "--no-bertscore",
                 "--no-helpfulness", "--out", str(out)]) == 0
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines() if x.strip()]
    picked = sample_ids(IDS, 2, 7)
    assert {r["episode"] for r in rows} == {f"{c}-s{n}" for c in picked for n in (3, 4, 5)}
    assert len(rows) == 2 * 3 * 2  # 2 conversations x 3 sessions x turns 2-3 of the last session
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["split"], summary["sessions"], summary["sample"], summary["protocol"]) == ("test", [3, 4, 5], 2,
                                                                                              "paper")
    judging = json.loads((out / "config.json").read_text())["judging"]
    assert judging["episodes"] == [f"{c}-s{n}" for c in picked for n in (3, 4, 5)]
    assert "msc_session5_test.jsonl" in judging["data"]


def test_missing_test_files_name_what_the_shared_data_holds(tmp_path, capsys):
    folder = tmp_path / "shared_like"
    folder.mkdir()
    (folder / "msc_session3_valid.jsonl").write_text(TINY.read_text())
    assert main(["bench", "msc-response", "--data", str(folder), "--protocol", "paper", "--systems", "retrieval",
                 "--no-helpfulness", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "msc_session3_test.jsonl" in err and "session 3 of the valid split only" in err
    assert "chateval data get msc" in err
    release(folder, split="test", missing=None)
    (folder / "msc_session5_test.jsonl").unlink()
    assert main(["bench", "msc-response", "--data", str(folder), "--protocol", "paper", "--systems", "retrieval",
                 "--no-helpfulness", "--out", str(tmp_path / "r2")]) == 2
    assert "no msc_session5_test.jsonl" in capsys.readouterr().err


def test_session_option_is_validated_and_a_file_holds_one_session(tmp_path, capsys):
    assert main(["bench", "msc-response", "--data", str(TINY), "--session", "3,6", "--systems", "retrieval",
                 "--no-helpfulness", "--out", str(tmp_path / "r")]) == 2
    assert "between 2 and 5" in capsys.readouterr().err
    assert main(["bench", "msc-response", "--data", str(TINY), "--session", "3,4", "--systems", "retrieval",
                 "--no-helpfulness", "--out", str(tmp_path / "r2")]) == 2
    assert "one release file holds one session" in capsys.readouterr().err
