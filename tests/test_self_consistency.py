"""Self-consistency (--samples N, issue 37): the judge repeated N times at a temperature above 0,
the majority as the verdict and the spread per item; repeats keep their own cached replies."""

from __future__ import annotations

import itertools
import json
import threading

import pytest

from chateval.cli import main
from chateval.debate.consistency import consistency
from chateval.evaluation.config import EvalConfig
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.util.errors import ConfigError

from .conftest import REPO, read_jsonl

PAIRWISE = REPO / "examples" / "faireval_pairwise.jsonl"
FIRST = "Assistant 1 is better.\nScore of Assistant 1: 9\nScore of Assistant 2: 2"
SECOND = "Assistant 2 is better.\nScore of Assistant 1: 2\nScore of Assistant 2: 9"


def cycling(*replies: str):
    """A server-side 'sampler': the replies in turn, whatever the request."""
    it, lock = itertools.cycle(replies), threading.Lock()

    def respond(body: dict) -> str:
        with lock:
            return next(it)

    return respond


def single(out, base_url, *extra):
    return main(
        [
            "evaluate",
            str(PAIRWISE),
            "--model",
            "openai-compatible/j",
            "--base-url",
            base_url,
            "--preset",
            "single",
            "--limit",
            "1",
            "--out",
            str(out),
            *extra,
        ]
    )


def test_consistency_counts_hand_computed():
    c = consistency(["1", "2", "1", None])
    assert (c.samples, c.n_ok, c.majority) == (4, 3, "1")
    assert c.agreement == pytest.approx(2 / 3) and c.pair_agreement == pytest.approx(1 / 3)
    assert consistency(["2", "1"]).majority == "2"  # a tie goes to the verdict given first
    assert consistency([None, None]).agreement is None


def test_samples_need_a_temperature(tmp_path, capsys):
    with pytest.raises(ConfigError, match="--samples 3.*--temperature above 0"):
        EvalConfig.merged({"samples": 3})
    assert main(["evaluate", str(PAIRWISE), "--samples", "2", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--temperature" in err[0]
    assert EvalConfig.merged({"samples": 3, "temperature": 0.7}).samples == 3


def test_majority_and_spread_per_item(tmp_path, capsys):
    with FakeOpenAIServer(cycling(FIRST, FIRST, SECOND)) as server:
        assert (
            single(
                tmp_path / "r",
                server.base_url,
                "--samples",
                "3",
                "--temperature",
                "0.8",
                "--cache-dir",
                str(tmp_path / "cache"),
            )
            == 0
        )
        assert len(server.requests) == 3  # the single judge (1 call) three times
        assert all(r["temperature"] == 0.8 for r in server.requests)
        rec = read_jsonl(tmp_path / "r" / "samples.jsonl")[0]
        assert sorted(rec["consistency"]["verdicts"]) == ["1", "1", "2"]
        assert rec["consistency"]["majority"] == "1" and rec["verdict"]["winner"] == "1"
        assert rec["consistency"]["agreement"] == pytest.approx(2 / 3)
        assert rec["calls"] == 3 and rec["usage"]["calls"] == 3
        summary = json.loads((tmp_path / "r" / "summary.json").read_text())
        assert summary["self_consistency"]["mean_agreement"] == pytest.approx(2 / 3)
        assert summary["self_consistency"]["unanimous"] == 0
        # run-to-run variance: each repeat's agreement with the label ("1") on its own
        ra = summary["self_consistency"]["repeat_accuracy"]
        assert sorted(ra["per_repeat"]) == [0.0, 1.0, 1.0] and ra["mean"] == pytest.approx(2 / 3)
        assert ra["sd"] == pytest.approx(0.57735, abs=1e-4)
        assert "self-consistency" in (tmp_path / "r" / "report.md").read_text()
        # a rerun: every repeat from its own cached reply, none sent, the same spread
        assert (
            single(
                tmp_path / "r2",
                server.base_url,
                "--samples",
                "3",
                "--temperature",
                "0.8",
                "--cache-dir",
                str(tmp_path / "cache"),
            )
            == 0
        )
        assert len(server.requests) == 3
        again = read_jsonl(tmp_path / "r2" / "samples.jsonl")[0]
        assert sorted(again["consistency"]["verdicts"]) == ["1", "1", "2"]
        # the plain judge at that temperature is the first repeat: answered from the cache too
        assert (
            single(tmp_path / "r3", server.base_url, "--temperature", "0.8", "--cache-dir", str(tmp_path / "cache"))
            == 0
        )
        assert len(server.requests) == 3
        assert (
            "consistency" not in read_jsonl(tmp_path / "r3" / "samples.jsonl")[0]
            or read_jsonl(tmp_path / "r3" / "samples.jsonl")[0]["consistency"] is None
        )


def test_samples_work_with_a_panel_and_a_dry_run(tmp_path, capsys):
    with FakeOpenAIServer(cycling(FIRST)) as server:
        common = [
            "evaluate",
            str(PAIRWISE),
            "--model",
            "openai-compatible/j",
            "--base-url",
            server.base_url,
            "--limit",
            "2",
            "--samples",
            "2",
            "--temperature",
            "0.5",
            "--no-cache",
        ]
        capsys.readouterr()
        assert main([*common, "--out", str(tmp_path / "d"), "--dry-run", "--json"]) == 0
        est = json.loads(capsys.readouterr().out)
        assert est["calls"] == 2 * 2 * 4 and not server.requests  # items x samples x (2 debaters x 2 turns)
        assert main([*common, "--out", str(tmp_path / "r")]) == 0
        assert len(server.requests) == 16
    recs = read_jsonl(tmp_path / "r" / "samples.jsonl")
    assert all(r["consistency"]["agreement"] == 1.0 and r["calls"] == 8 for r in recs)


def test_calibrate_reports_a_settings_run_to_run_variance(tmp_path):
    from chateval.calibration import calibrate, parse_setting

    from .conftest import FIXTURES

    with FakeOpenAIServer(cycling(FIRST, FIRST, SECOND)) as server:
        summary = calibrate(
            FIXTURES / "calibrate_pairwise.jsonl",
            tmp_path / "cal",
            model="openai-compatible/j",
            base_url=server.base_url,
            settings=[parse_setting("sc=single,samples=3,temperature=0.9")],
            cache=False,
        )
    sc = summary.settings["sc"].self_consistency
    assert sc["samples"] == 3 and sc["n_items"] == 10
    assert len(sc["repeat_accuracy"]["per_repeat"]) == 3 and sc["repeat_accuracy"]["sd"] is not None
    assert summary.settings["single"].self_consistency is None
    assert "Self-consistency" in (tmp_path / "cal" / "report.md").read_text()
