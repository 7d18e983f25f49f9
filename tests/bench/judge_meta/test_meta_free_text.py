"""Issue 34, item 11: ChatEval's meta-evaluation benchmarks read free-text score lines by default,
as ChatEval does (no response_format sent, the verdict asked as score lines), so an unreadable
reply counts as a tie as in its code; --structured auto asks for JSON; `evaluate` keeps auto."""

from __future__ import annotations

import json
import re

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from ...conftest import FIXTURES

FAIREVAL = FIXTURES / "faireval_tiny.jsonl"


def _lines(body: dict) -> str:
    return "Fine answers.\nScore of Assistant 1: 8\nScore of Assistant 2: 6"


def _faireval(out, server, *extra: str) -> int:
    return main(
        [
            "bench",
            "faireval",
            "--data",
            str(FAIREVAL),
            "--out",
            str(out),
            "--setting",
            "single",
            "--model",
            "openai-compatible/judge",
            "--base-url",
            server.base_url,
            "--no-cache",
            "--limit",
            "3",
            *extra,
        ]
    )


def test_faireval_asks_for_and_reads_score_lines_by_default(tmp_path):
    with FakeOpenAIServer(responder=_lines) as server:
        assert _faireval(tmp_path / "fe", server) == 0
        bodies = list(server.requests)
    assert bodies and not any("response_format" in b for b in bodies)
    assert all("Score of Assistant 1: <score>" in b["messages"][-1]["content"] for b in bodies)
    config = json.loads((tmp_path / "fe" / "single" / "config.json").read_text())
    assert config["judging"]["structured"] == "off"
    records = [json.loads(x) for x in (tmp_path / "fe" / "single" / "samples.jsonl").read_text().splitlines()]
    assert {r["pred"] for r in records} == {"tie"}  # 8 vs 6 in both orders: position calibration evens them


def test_an_unreadable_free_text_verdict_counts_as_a_tie(tmp_path):
    with FakeOpenAIServer(responder=lambda body: "Both answers are good, I cannot decide.") as server:
        assert _faireval(tmp_path / "fe", server) in (0, 1)
    summary = json.loads((tmp_path / "fe" / "single" / "summary.json").read_text())
    metrics = summary["metrics"]
    assert metrics["unreadable"] == 3 and metrics["unreadable_as"] == "tie"
    assert metrics["judge_verdicts"] == {"tie": 3}


def test_structured_verdicts_remain_an_option(tmp_path):
    with FakeOpenAIServer(
        responder=lambda body: json.dumps({"reasoning": "ok", "score_assistant_1": 8, "score_assistant_2": 6})
    ) as server:
        assert _faireval(tmp_path / "fe", server, "--structured", "auto") == 0
        assert all("response_format" in b for b in server.requests)


def test_topical_chat_reads_score_lines_by_default(tmp_path):
    def reply(body: dict) -> str:
        aspect = re.search(r"^(\w+): <", body["messages"][-1]["content"], flags=re.M)
        return f"Reasonable.\n{aspect.group(1) if aspect else 'Score'}: 1"

    with FakeOpenAIServer(responder=reply) as server:
        rc = main(
            [
                "bench",
                "topical-chat",
                "--data",
                str(FIXTURES / "topical_chat_tiny.json"),
                "--out",
                str(tmp_path / "tc"),
                "--setting",
                "single",
                "--baselines",
                "",
                "--model",
                "openai-compatible/judge",
                "--base-url",
                server.base_url,
                "--no-cache",
                "--limit",
                "2",
            ]
        )
        bodies = list(server.requests)
    assert rc == 0 and bodies and not any("response_format" in b for b in bodies)


def test_evaluate_keeps_structured_auto():
    from chateval.evaluation.config import EvalConfig

    assert EvalConfig.model_fields["structured"].default == "auto"
