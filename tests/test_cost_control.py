"""Cost before and during a run: ``--dry-run`` (calls, tokens, cache-eligible share, cost; nothing
sent or written) and ``--max-cost`` (stops starting units at the cap, exit 3, --resume goes on)."""

from __future__ import annotations

import json

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.testing.protocols import requested_schema
from chateval.testing.schema_reply import instance_of

from .conftest import EXAMPLES, FIXTURES

MODEL = "openai-compatible/cost-test"  # a model missing from the price table
SCORE_ASPECTS = ["naturalness", "coherence", "engagingness", "groundedness"]  # examples/score.jsonl's
REASON = "Both answers address the question; the first is more complete and better supported."
FAST = ["--max-retries", "0", "--timeout", "30", "--no-cache"]


def judge(body: dict) -> str:
    """A well-behaved judge: the requested schema filled with readable values, or verdict lines."""
    schema = requested_schema(body)
    if schema is None:
        return f"{REASON}\nScore of Assistant 1: 7\nScore of Assistant 2: 5\nVerdict: correct\n" + \
            "\n".join(f"{a}: 7" for a in SCORE_ASPECTS)
    obj = instance_of(schema)
    props = schema.get("properties", {})
    if "reasoning" in props:
        obj["reasoning"] = REASON
    if "scores" in props:
        obj["scores"] = {a: 7 for a in SCORE_ASPECTS}
    if "score_assistant_1" in props:
        obj["score_assistant_1"], obj["score_assistant_2"] = 7, 5
    return json.dumps(obj)


def dry_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main([*argv, "--dry-run", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


CASES = [("pairwise", EXAMPLES / "faireval_pairwise.jsonl"), ("score", EXAMPLES / "score.jsonl"),
         ("correctness", EXAMPLES / "correctness.jsonl")]
PANELS = {"default panel": [], "single judge": ["--agents", "1", "--turns", "1"]}


@pytest.mark.slow
@pytest.mark.parametrize("panel", list(PANELS))
@pytest.mark.parametrize("task,path", CASES, ids=[c[0] for c in CASES])
def test_dry_run_estimate_matches_what_the_server_counted(task, path, panel, tmp_path, capsys):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=judge) as server:
        argv = ["evaluate", str(path), "--task", task, "--model", MODEL, f"--base-url={server.base_url}",
                "--out", str(out), *FAST, *PANELS[panel]]
        est = dry_json(argv, capsys)
        assert server.requests == [] and not out.exists()  # nothing sent, nothing written
        assert main(argv) == 0
        sent = server.completions
    # The call count is exact; input tokens are counted by the same documented rule the fake
    # server applies, so the gap is only what the stand-in replies change in later prompts.
    assert est["calls"] == len(sent)
    actual = sum(c["usage"]["prompt_tokens"] for c in sent)
    assert abs(est["prompt_tokens"] - actual) <= 0.10 * actual, (est["prompt_tokens"], actual)
    assert est["cost_usd"] is None and est["models"][0]["price_known"] is False  # no price: said, not 0
    assert "4 characters per token" in est["token_rule"]
    if panel == "default panel":  # later turns of a sample repeat its first prompt's start
        assert 0 < est["cache_eligible_tokens"] < est["prompt_tokens"]


def test_dry_run_table_prices_with_price_and_needs_no_key(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    code = main(["evaluate", str(EXAMPLES / "correctness.jsonl"), "--task", "correctness", "--model",
                 "openai/gpt-4o-mini", "--out", str(out), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 0 and not out.exists()
    assert "dry run" in err and "openai/gpt-4o-mini" in err and "$0.0" in err and "4 characters per token" in err


BENCHES = {
    "longmemeval": ["--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context,retrieval",
                    "--judge", "both"],
    "locomo": ["--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "full_context"],
    "head2head": ["--data", str(FIXTURES / "lme_tiny.json"), "--systems", "full_context,retrieval"],
    "teafarm": ["--data", str(FIXTURES / "locomo_tiny.json"), "--systems", "full_context"],
    "msc-response": ["--data", str(FIXTURES / "msc_release_tiny.jsonl"), "--systems", "retrieval,rsum"],
    "faireval": ["--data", str(FIXTURES / "faireval_tiny.jsonl")],
    "topical-chat": ["--data", str(FIXTURES / "topical_chat_tiny.json"), "--setting", "multi"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BENCHES))
def test_every_bench_dry_run_counts_and_writes_nothing(name, tmp_path, capsys):
    out = tmp_path / "run"
    cache = tmp_path / "cache"
    est = dry_json(["bench", name, *BENCHES[name], "--limit", "2", "--out", str(out), "--cache-dir", str(cache)],
                   capsys)
    assert not out.exists() and not cache.exists()
    assert est["calls"] > 0 and est["prompt_tokens"] > 0 and est["completion_tokens"] > 0
    assert est["units"] > 0 and est["failed_units"] == 0
    assert est["calls"] == sum(m["calls"] for m in est["models"])
    assert est["cost_usd"] == 0.0  # the offline model's price


def test_calibrate_dry_run_writes_nothing(tmp_path, capsys):
    out = tmp_path / "cal"
    est = dry_json(["calibrate", str(FIXTURES / "calibrate_pairwise.jsonl"), "--out", str(out),
                    "--write-preset", str(tmp_path / "best.yaml")], capsys)
    assert not out.exists() and not (tmp_path / "best.yaml").exists()
    assert est["calls"] > 0 and est["units"] > 0


# --- --max-cost --------------------------------------------------------------------------------

PRICED = "cap-test-model"  # $1000 per million tokens both ways: a 2x2 pairwise sample costs a few dollars


def _timeless(obj):
    if isinstance(obj, dict):
        return {k: _timeless(v) for k, v in obj.items() if "latency" not in k and "wall_time" not in k}
    if isinstance(obj, list):
        return [_timeless(v) for v in obj]
    return obj


def test_max_cost_stops_keeps_finished_samples_and_resume_completes(tmp_path, capsys):
    data = EXAMPLES / "faireval_pairwise.jsonl"
    n = sum(1 for line in data.read_text().split("\n") if line.strip())
    with FakeOpenAIServer(responder=judge) as server:
        base = ["evaluate", str(data), "--model", f"openai-compatible/{PRICED}", f"--base-url={server.base_url}",
                "--price", f"{PRICED}=1000,1000", "--max-connections", "1", *FAST]
        full = tmp_path / "full"
        assert main([*base, "--out", str(full)]) == 0
        full_requests = len(server.requests)
        full_cost = json.loads((full / "summary.json").read_text())["usage"]["cost_usd"]
        server.reset()

        out = tmp_path / "capped"
        capsys.readouterr()
        code = main([*base, "--out", str(out), "--max-cost", f"{full_cost / 4:.4f}"])
        err = capsys.readouterr().err
        capped_requests = len(server.requests)
        assert code == 3
        assert 0 < capped_requests < full_requests
        assert "stopped at the cost cap" in err and "--resume" in err and "--max-cost" in err
        rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        assert 0 < len(rows) < n and all(r["status"] == "ok" for r in rows)  # in-flight samples finished
        summary = json.loads((out / "summary.json").read_text())
        assert summary["complete"] is False and summary["n_missing"] == n - len(rows)
        assert summary["stopped"]["stopped_at_cost_cap"] is True
        assert summary["stopped"]["n_not_run"] == n - len(rows)

        server.reset()
        left = dry_json([*base, "--out", str(out), "--resume"], capsys)  # counts only what is left
        assert left["calls"] == full_requests - capped_requests and left["units"] == n - len(rows)
        assert server.requests == []
        assert main([*base, "--out", str(out), "--resume", "--max-cost", "1000000"]) == 0
        assert len(server.requests) == full_requests - capped_requests  # only the samples not run
    final = json.loads((out / "summary.json").read_text())
    assert "stopped" not in final and final["complete"] is True
    assert _timeless(final) == _timeless(json.loads((full / "summary.json").read_text()))


@pytest.mark.slow
def test_bench_max_cost_stops_the_unit_runner(tmp_path, capsys):
    with FakeOpenAIServer(responder=judge) as server:
        out = tmp_path / "fe"
        argv = ["bench", "faireval", "--data", str(FIXTURES / "faireval_tiny.jsonl"), "--out", str(out),
                "--model", f"openai-compatible/{PRICED}", f"--base-url={server.base_url}", "--price",
                f"{PRICED}=1000,1000", "--workers", "1", "--setting", "multi", *FAST]
        capsys.readouterr()
        code = main([*argv, "--max-cost", "0.5"])
        err = capsys.readouterr().err
        capped = len(server.requests)
        assert code == 3 and "stopped at the cost cap" in err
        server.reset()
        left = dry_json([*argv, "--resume"], capsys)
        assert server.requests == []
        assert main([*argv, "--max-cost", "100000", "--resume"]) == 0
        assert left["calls"] == len(server.requests)  # the dry run of a resume counts what is left, exactly
    assert 0 < capped and len(server.requests) > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_failed"] == 0 and not summary.get("n_missing")


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "lots"])
def test_bad_max_cost_is_a_one_line_error(value, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["evaluate", str(EXAMPLES / "correctness.jsonl"), "--task", "correctness", "--out", str(out),
                 f"--max-cost={value}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--max-cost" in err and not out.exists()


def test_max_cost_refuses_a_model_without_a_price(tmp_path, capsys):
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=judge) as server:
        code = main(["evaluate", str(EXAMPLES / "correctness.jsonl"), "--task", "correctness", "--out", str(out),
                     "--model", MODEL, f"--base-url={server.base_url}", "--max-cost", "1", *FAST])
        assert server.requests == []
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--price" in err and not out.exists()


def test_max_cost_refuses_the_ray_executor(tmp_path, capsys):
    code = main(["bench", "faireval", "--data", str(FIXTURES / "faireval_tiny.jsonl"), "--out", str(tmp_path / "o"),
                 "--executor", "ray", "--max-cost", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--executor local" in err


@pytest.mark.slow
def test_calibrate_under_a_spent_cap_starts_nothing_and_exits_3(tmp_path, capsys):
    # The offline model costs $0, so a $0 cap is reached before the first item: every item is
    # left unstarted, the calibration says so and exits 3; --resume without the cap completes it.
    out = tmp_path / "cal"
    argv = ["calibrate", str(FIXTURES / "calibrate_pairwise.jsonl"), "--out", str(out)]
    capsys.readouterr()
    assert main([*argv, "--max-cost", "0"]) == 3
    assert "stopped at the cost cap" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0


def test_cache_eligible_tokens_are_the_shared_prefix_of_an_earlier_call_of_the_same_unit():
    from chateval.models.dryrun import DryRunMeter, common_prefix

    assert common_prefix("abcdef", "abcxyz") == 3 and common_prefix("", "a") == 0 and common_prefix("ab", "ab") == 2
    meter = DryRunMeter()
    shared = "S" * 400
    # 2 messages: 4 + 100 and 4 + 25 tokens
    first = meter.count(model="m", price_model="offline", unit="u1", messages=[shared, "a" * 100], reply="x" * 8)
    assert first == (133, 2)
    meter.count(model="m", price_model="offline", unit="u1", messages=[shared, "b" * 100], reply="")
    meter.count(model="m", price_model="offline", unit="u2", messages=[shared, "a" * 100], reply="")  # another unit
    est = meter.estimate(units=2)
    assert est.calls == 3 and est.prompt_tokens == 3 * 133 and est.completion_tokens == 2
    # The second call repeats the first's first message (and the separators before the second): about
    # 402/504 of its serialized text; the third, in another unit, repeats nothing.
    second_share = common_prefix("\x1estr\x1f" + shared + "\x1estr\x1f" + "b" * 100,
                                 "\x1estr\x1f" + shared + "\x1estr\x1f" + "a" * 100)
    assert est.cache_eligible_tokens == 133 * second_share // (len(shared) + 100 + 10)
    assert est.cost_usd == 0.0 and est.units == 2 and meter.units == 2


def test_dry_run_refuses_the_http_system_alone(tmp_path, capsys):
    code = main(["bench", "longmemeval", *BENCHES["longmemeval"][:2], "--systems", "http", "--out",
                 str(tmp_path / "o"), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "cannot estimate the 'http' system" in err
    assert not (tmp_path / "o").exists()
