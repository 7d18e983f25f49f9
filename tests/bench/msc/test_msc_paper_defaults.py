"""Issue 28, items 11-15: THEANINE and `bench msc-response` default to the paper's and the
official code's protocol — the whole dialogue as the retrieval query, every turn from the second
on predicted, memory helpfulness judged pairwise, MSC session 2 read as well as 3 — and the
sampling temperature of the systems' steps is settable (a THEANINE preset carries the official
values) while the default stays deterministic. Asserted on what the fake OpenAI server received
or on the computed result."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chateval.bench.msc.msc_response import turns_to_predict
from chateval.cli import main
from chateval.datasets import load_msc_release
from chateval.memory import MEMORY_SYSTEMS, Session, Turn
from chateval.memory.embeddings import make_embedder
from chateval.models import ModelLayer, ModelSpec
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES

TINY = FIXTURES / "msc_release_tiny.jsonl"
TINY_S2 = FIXTURES / "msc_release_tiny_s2.jsonl"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]


def text_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))


# --- item 11: the retrieval query is the whole current dialogue -------------------------------
async def test_theanine_retrieval_query_is_the_whole_dialogue():
    system = MEMORY_SYSTEMS.get("theanine")(ModelLayer(ModelSpec.parse("offline")),
                                            embedder=make_embedder("hash", cache=False))
    await system.ingest(Session(id="s1", date=T0, turns=[Turn(id="a", role="Speaker 1", content="I adopted a puppy named Max from the shelter")]))
    embedded: list[str] = []
    real = system.embedder.embed

    async def spy(texts):
        embedded.extend(texts)
        return await real(texts)

    system.embedder.embed = spy
    dialogue = [Turn(id=f"t{i}", role=f"Speaker {i % 2 + 1}", content=f"utterance number {i}") for i in range(9)]
    await system.respond(dialogue, T0)
    (query,) = embedded
    assert all(f"utterance number {i}" in query for i in range(9))  # the first turns too (not the last 6)
    assert query.index("number 0") < query.index("number 8")  # oldest first, as the original code (issue 34)
    # query_turns keeps its meaning as an option
    system.settings = system.settings.model_copy(update={"query_turns": 6})
    embedded.clear()
    await system.respond(dialogue, T0)
    assert "utterance number 2" not in embedded[0] and "utterance number 3" in embedded[0]


# --- item 12: every turn from the second on, both speakers ------------------------------------
@pytest.mark.slow
def test_every_turn_from_the_second_on_is_predicted_by_default(tmp_path):
    ep = load_msc_release(TINY)[0]
    assert turns_to_predict(ep, None, 0) == [1, 2, 3, 4, 5]
    assert turns_to_predict(ep, None, 0, "speaker2") == [1, 3, 5]
    out = tmp_path / "run"
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--embedder", "hash",
                 "--no-bertscore", "--no-helpfulness", "--limit", "1", "--out", str(out)]) == 0
    rows = samples(out)
    assert sorted(r["turn"] for r in rows) == [2, 3, 4, 5, 6]
    assert {ep.current.turns[r["turn"] - 1].role for r in rows} == {"Speaker 1", "Speaker 2"}
    assert json.loads((out / "config.json").read_text())["judging"]["speakers"] == "all"
    out2 = tmp_path / "run2"
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--embedder", "hash",
                 "--no-bertscore", "--no-helpfulness", "--limit", "1", "--speakers", "speaker2",
                 "--out", str(out2)]) == 0
    assert sorted(r["turn"] for r in samples(out2)) == [2, 4, 6]


# --- item 13: memory helpfulness judged pairwise ----------------------------------------------
class Prefers:
    """A fake model: systems answer from their memory (a recalled violin fact or nothing); the
    panel prefers the response that mentions the violin, in whichever position it is shown."""

    GOOD, BAD = "Good luck with the violin contest!", "Nice weather today."

    def __call__(self, body: dict) -> str:
        text = text_of(body)
        if "Assistant 1's response" in text:
            a, b = text.find(self.GOOD), text.find(self.BAD)
            first_good = 0 <= a < b
            return f"One remembers the violin.\nScore of Assistant 1: {8 if first_good else 3}\n" \
                   f"Score of Assistant 2: {3 if first_good else 8}"
        if '"facts"' in text:
            return json.dumps({"facts": [{"text": "Speaker 1 is learning the violin", "turn_ids": []}]})
        return self.GOOD if "learning the violin" in text else self.BAD


class Amnesic(MEMORY_SYSTEMS.get("retrieval")):  # type: ignore[misc]
    """A baseline that recalls nothing."""

    name = "amnesic"

    async def _recall(self, query, now, k):
        return []


@pytest.mark.slow
def test_helpfulness_is_judged_pairwise_with_a_win_rate_and_its_interval(tmp_path):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=Prefers()) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems",
                     f"retrieval,{__name__}:Amnesic", "--embedder", "hash", "--answer-model", "openai-compatible/x",
                     "--base-url", server.base_url, "--structured", "off", "--turns-per-episode", "2",
                     "--no-bertscore", "--helpfulness-compare", "responses", "--out", str(out)]) == 0
        judged = [r for r in server.requests if "Assistant 1's response" in text_of(r)]
    rows = samples(out)
    pairs = [r for r in rows if r.get("kind") == "helpfulness_pair"]
    assert len(pairs) == 4 and all(r["systems"] == {"A": "retrieval", "B": "amnesic"} for r in pairs)
    # Each pair judged by the panel in both orders: both responses in the same prompt.
    assert judged and all("Good luck with the violin contest!" in text_of(r) and "Nice weather today." in text_of(r)
                          for r in judged)
    assert not any("Rate only 'memory helpfulness'" in text_of(r) for r in judged)  # not the 1-10 rating
    assert all("helpfulness" not in r for r in rows if r.get("system"))
    summary = json.loads((out / "summary.json").read_text())
    p = summary["helpfulness_pairs"]["amnesic"]
    assert summary["helpfulness_reference"] == "retrieval" and summary["helpfulness_protocol"] == "pairwise"
    wins = sum(r["verdict"] == "A" for r in pairs)
    assert p["n"] == 4 and p["wins"] == wins == 4 and p["losses"] == 0
    assert p["win_rate"] == 1.0 and p["win_rate_ci"][0] == pytest.approx(0.5101, abs=1e-3)  # Wilson, 4/4
    assert p["paired"]["diff"] == 1.0
    assert "## Memory helpfulness, head to head" in (out / "report.md").read_text()


def test_the_pointwise_score_is_an_option_and_pairwise_needs_two_systems(tmp_path, capsys):
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--embedder", "hash",
                 "--out", str(tmp_path / "r")]) == 2
    assert "needs a baseline" in capsys.readouterr().err
    out = tmp_path / "s"
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--embedder", "hash",
                 "--no-bertscore", "--limit", "1", "--turns-per-episode", "1", "--helpfulness-protocol", "score",
                 "--out", str(out)]) == 0
    (row,) = samples(out)
    assert 1 <= row["helpfulness"]["score"] <= 10


# --- item 14: sampling temperatures -----------------------------------------------------------
def echo(body: dict) -> str:
    text = text_of(body)
    if "Rate only 'memory helpfulness'" in text:
        return "The memory helped.\nmemory helpfulness: 7"
    if '"facts"' in text:
        return json.dumps({"facts": [{"text": "Speaker 1 is learning the violin", "turn_ids": []}]})
    if '"explanation"' in text:
        return json.dumps({"explanation": "both are about the violin", "relation": "SameTopic"})
    if '"events"' in text:
        return json.dumps({"events": [{"id": "E1", "text": "Speaker 1 is learning the violin"}], "note": ""})
    return "Good luck!"


def run_theanine(tmp_path: Path, name: str, *extra: str) -> dict[str, set[float]]:
    """Temperatures the fake server received, per kind of prompt."""
    with FakeOpenAIServer(responder=echo) as server:
        assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "theanine", "--embedder", "hash",
                     "--answer-model", "openai-compatible/x", "--base-url", server.base_url, "--structured", "off",
                     "--limit", "1", "--turns-per-episode", "1", "--no-bertscore", "--helpfulness-protocol", "score",
                     "--no-cache", "--out", str(tmp_path / name), *extra]) == 0
        seen: dict[str, set[float]] = {}
        for r in server.requests:
            t = text_of(r)
            kind = ("judge" if "Rate only 'memory helpfulness'" in t else "link" if '"explanation"' in t else "other")
            seen.setdefault(kind, set()).add(r.get("temperature"))
    return seen


def test_temperature_is_deterministic_by_default_and_the_theanine_preset_samples(tmp_path):
    default = run_theanine(tmp_path, "default")
    assert set().union(*default.values()) == {0.0}
    preset = run_theanine(tmp_path, "preset", "--sampling", "theanine")
    assert preset["link"] == {0.5} and preset["other"] == {0.7}
    assert preset["judge"] == {0.0}  # the judges never sample with the systems
    config = json.loads((tmp_path / "preset" / "config.json").read_text())["judging"]
    assert config["sampling"]["steps"]["theanine_relation_pair"] == 0.5
    assert "sampling" not in json.loads((tmp_path / "default" / "config.json").read_text())["judging"]
    # --temperature for every step, --step-temperature for one
    mixed = run_theanine(tmp_path, "mixed", "--temperature", "0.3", "--step-temperature", "theanine_relation_pair=0.9")
    assert mixed["link"] == {0.9} and mixed["other"] == {0.3} and mixed["judge"] == {0.0}


def test_a_bad_step_temperature_is_one_line(tmp_path, capsys):
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--no-helpfulness",
                 "--step-temperature", "theanine_response", "--out", str(tmp_path / "r")]) == 2
    assert "--step-temperature 'theanine_response': expected STEP=T" in capsys.readouterr().err
    assert main(["bench", "msc-response", "--data", str(TINY), "--systems", "retrieval", "--no-helpfulness",
                 "--sampling", "nonesuch", "--out", str(tmp_path / "r2")]) == 2
    assert "--sampling 'nonesuch'" in capsys.readouterr().err


# --- item 15: MSC session 2 -------------------------------------------------------------------
def test_session_2_release_file_is_read(tmp_path):
    eps = load_msc_release(TINY_S2)
    assert [len(e.past) for e in eps] == [1, 1] and eps[0].current.id == "s2tiny_0-s2"
    folder = tmp_path / "msc"
    folder.mkdir()
    (folder / "msc_session2_valid.jsonl").write_text(TINY_S2.read_text())
    out = tmp_path / "run"
    assert main(["bench", "msc-response", "--data", str(folder), "--session", "2", "--systems", "retrieval",
                 "--embedder", "hash", "--no-bertscore", "--no-helpfulness", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["session"] == 2 and summary["data"].endswith("msc_session2_valid.jsonl")
    assert summary["n_turns"] == sum(len(e.current.turns) - 1 for e in eps)
    assert main(["bench", "msc-response", "--data", str(folder), "--systems", "retrieval", "--embedder", "hash",
                 "--no-helpfulness", "--out", str(tmp_path / "r3")]) == 2  # session 3's file is not there


def test_a_sampling_preset_file_sets_step_temperatures(tmp_path):
    from chateval.util.errors import ConfigError
    from chateval.memory.sampling import combine, load_sampling

    path = tmp_path / "sampling.yaml"
    path.write_text("temperature: 0.2\nsteps:\n  memory_answer: 0.9\n")
    s = combine(load_sampling(str(path)), None, {"theanine_refine": 0.4})
    assert s.resolved() == (0.2, {"memory_answer": 0.9, "theanine_refine": 0.4}) and not s.deterministic
    assert combine(load_sampling("theanine"), 0.1, {}).resolved()[0] == 0.1
    assert load_sampling(None).deterministic
    path.write_text("steps:\n  memory_answer: hot\n")
    with pytest.raises(ConfigError, match="sampling.yaml: field 'steps.memory_answer'"):
        load_sampling(str(path))
