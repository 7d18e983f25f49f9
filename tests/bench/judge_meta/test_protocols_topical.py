"""Topical-Chat's judging protocol (issue 14, item 6): one debate per aspect on the aspect's USR
scale (the default, as ChatEval's code does) or every aspect 1-10 in one debate (joint)."""

from __future__ import annotations

import json
import re

import pytest

from chateval.cli import main
from chateval.datasets.topical_chat import SCALE_RANGES
from chateval.debate.parsing import VerdictParseError, parse_scores, score_schema
from chateval.debate.samples import Sample
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.testing.protocols import requested_schema

from ...conftest import FIXTURES

DATA = FIXTURES / "topical_chat_tiny.json"
ASPECTS = ("naturalness", "coherence", "engagingness", "groundedness")


def _verdict_reply(top: bool):
    """A fake judge: prose in discussion rounds; for the verdict, every aspect named in the
    prompt gets the top (or an out-of-scale 7) score of the schema the request carries."""

    def reply(body: dict) -> str:
        schema = requested_schema(body)
        if schema is None:
            return "I have read the response and the conversation carefully."
        bounds = schema["properties"]["scores"]["additionalProperties"]
        names = re.findall(r'"(\w+)"', body["messages"][-1]["content"].split("mapping", 1)[1].split(" to ")[0])
        return json.dumps({"reasoning": "fine", "scores": {a: bounds["maximum"] if top else 7 for a in names}})

    return reply


def _run(tmp_path, server, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "tc"
    rc = main(["bench", "topical-chat", "--data", str(DATA), "--out", str(out), "--setting", "single",
               "--baselines", "", "--model", "openai-compatible/judge", "--base-url", server.base_url,
               "--no-cache", "--structured", "auto", *extra])  # JSON verdicts: the schema's bounds are checked
    return rc, json.loads((out / "summary.json").read_text())


def _system_prompts(server) -> list[str]:
    return [r["messages"][0]["content"] for r in server.requests if r["messages"][0]["role"] == "system"]


@pytest.mark.slow
def test_per_aspect_protocol_on_the_wire(tmp_path):
    with FakeOpenAIServer(responder=_verdict_reply(top=True)) as server:
        rc, summary = _run(tmp_path, server)
        systems = _system_prompts(server)
        verdict_requests = [r for r in server.requests if requested_schema(r) is not None]
    assert rc == 0 and summary["aspect_mode"] == "per-aspect" and summary["n_failed"] == 0
    n = summary["n_items"]
    # One debate (one agent, one turn in the `single` setting) per aspect and response.
    assert len(verdict_requests) == len(ASPECTS) * n
    for aspect in ASPECTS:
        low, high = SCALE_RANGES[aspect]
        mine = [s for s in systems if f"Rate only its {aspect}:" in s]
        assert len(mine) == n
        assert all(f"on a scale of {low} (very poor) to {high} (excellent)" in s for s in mine)
        assert all(a not in s.split("GUIDELINES")[1] for s in mine for a in ASPECTS if a != aspect)
    # The schema sent with each verdict request bounds the scores to that aspect's scale.
    bounds = {(b["minimum"], b["maximum"]) for r in verdict_requests
              for b in [requested_schema(r)["properties"]["scores"]["additionalProperties"]]}
    assert bounds == {(1, 3), (0, 1)}
    rows = [json.loads(line) for line in (tmp_path / "tc" / "single" / "samples.jsonl").read_text().splitlines()]
    for r in rows:
        assert r["pred"] == {a: float(SCALE_RANGES[a][1]) for a in ASPECTS}
        assert set(r["per_aspect"]) == set(ASPECTS) and all(p["transcript"] for p in r["per_aspect"].values())
        assert len(r["agents"]) == len(ASPECTS)  # one debater per aspect's debate
    assert "Judge protocol: **per-aspect**" in (tmp_path / "tc" / "report.md").read_text()
    config = json.loads((tmp_path / "tc" / "single" / "config.json").read_text())
    assert config["judging"]["aspect_mode"] == "per-aspect"


def test_joint_protocol_rates_every_aspect_1_to_10_in_one_debate(tmp_path):
    with FakeOpenAIServer(responder=_verdict_reply(top=True)) as server:
        rc, summary = _run(tmp_path, server, "--aspect-mode", "joint")
        systems = _system_prompts(server)
        verdict_requests = [r for r in server.requests if requested_schema(r) is not None]
    assert rc == 0 and summary["aspect_mode"] == "joint"
    assert len(verdict_requests) == summary["n_items"]
    assert all("on a scale of 1 (very poor) to 10 (excellent)" in s for s in systems)
    rows = [json.loads(line) for line in (tmp_path / "tc" / "single" / "samples.jsonl").read_text().splitlines()]
    assert all(r["pred"] == {a: 10.0 for a in ASPECTS} and "per_aspect" not in r for r in rows)
    assert "Judge protocol: **joint**" in (tmp_path / "tc" / "report.md").read_text()


def test_a_score_off_the_aspects_scale_fails_the_unit(tmp_path):
    with FakeOpenAIServer(responder=_verdict_reply(top=False)) as server:  # 7 on a 1-3 / 0-1 scale
        rc, summary = _run(tmp_path, server)
    assert rc == 1 and summary["n_failed"] == summary["n_items"]
    rows = [json.loads(line) for line in (tmp_path / "tc" / "single" / "samples.jsonl").read_text().splitlines()]
    assert all(r["status"] == "failed" and "outside 1-3" in json.dumps(r["agents"]) for r in rows)


def test_offline_per_aspect_scores_stay_on_each_scale(tmp_path):
    out = tmp_path / "off"
    assert main(["bench", "topical-chat", "--data", str(DATA), "--out", str(out), "--setting", "multi",
                 "--baselines", "", "--no-cache"]) == 0
    rows = [json.loads(line) for line in (out / "multi" / "samples.jsonl").read_text().splitlines()]
    for r in rows:
        for a, v in r["pred"].items():
            assert SCALE_RANGES[a][0] <= v <= SCALE_RANGES[a][1]
    assert {v for r in rows for v in [r["pred"]["groundedness"]]} <= {0.0, 0.5, 1.0}  # mean of two 0-1 raters


def test_score_parsing_and_schema_follow_the_scale():
    assert parse_scores("Fine.\ngroundedness: 0", ["groundedness"], (0, 1)) == {"groundedness": 0.0}
    with pytest.raises(VerdictParseError, match="outside 0-1"):
        parse_scores("Fine.\ngroundedness: 2", ["groundedness"], (0, 1))
    with pytest.raises(VerdictParseError, match="outside 1-10"):
        parse_scores("Fine.\nnaturalness: 0", ["naturalness"])
    bounds = score_schema((1, 3)).model_json_schema()["properties"]["scores"]["additionalProperties"]
    assert (bounds["minimum"], bounds["maximum"]) == (1, 3) and score_schema((1, 3)) is score_schema((1, 3))
    with pytest.raises(ValueError, match="lowest score must be below"):
        Sample(id="x", question="q", answer="a", scale=(3, 1))


def test_judge_benchmarks_take_a_pool_of_base_urls(tmp_path):
    """--base-url repeated on faireval/topical-chat forms one pool, as on every other command."""
    from chateval.bench.judge_meta.topical_chat import TopicalChatConfig

    cfg = TopicalChatConfig(base_url=["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"], out=str(tmp_path))
    assert cfg.base_url == "http://127.0.0.1:1/v1,http://127.0.0.1:2/v1"
    with pytest.raises(ValueError, match="not an http"):
        TopicalChatConfig(base_url=["ftp://x"], out=str(tmp_path))
