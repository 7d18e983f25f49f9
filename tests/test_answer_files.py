"""Judging answers a user already has (--hypotheses, --predictions) and selecting questions
(--limit, --per-type, --question-ids): one meaning everywhere, errors before any model call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.cli import main

from .conftest import read_jsonl, write_jsonl

FIX = Path(__file__).parent / "fixtures"
LME, LOCOMO = FIX / "lme_tiny.json", FIX / "locomo_tiny.json"
LME_IDS = ["t_job", "t_cat", "t_trip", "t_garden", "t_car_abs"]


def run(*argv: str) -> int:
    return main([*argv, "--embedder", "hash", "--no-cache"])


def one_line(err: str, *needles: str) -> None:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def hyps(path: Path, rows: dict[str, str], **extra: dict) -> Path:
    return write_jsonl(path, [{"question_id": q, "hypothesis": h, **extra.get(q, {})} for q, h in rows.items()])


GOOD = {"t_job": "At Fernbrook.", "t_cat": "Miso is two.", "t_trip": "Lisbon", "t_garden": "tomatoes and basil; Miso",
        "t_car_abs": "You never told me about a car."}


@pytest.mark.slow
def test_hypotheses_are_judged_with_the_same_tables(tmp_path):
    f = hyps(tmp_path / "h.jsonl", GOOD, t_job={"retrieved_session_ids": ["answer_s_work", "s_pet"]})
    out = tmp_path / "o"
    assert run("bench", "longmemeval", "--data", str(LME), "--hypotheses", str(f), "--judge", "both",
               "--out", str(out)) == 0
    s = json.loads((out / "summary.json").read_text())
    m = s["methods"]["hypotheses"]
    assert s["n_units"] == 5 and s["n_failed"] == 0 and s["n_left_out"] == 0
    assert m["qa"]["single"]["n"] == 5 and m["qa"]["debate"]["n"] == 5
    recs = {r["question_id"]: r for r in read_jsonl(out / "samples.jsonl")}
    assert recs["t_job"]["answer"] == "At Fernbrook." and recs["t_job"]["correct"] is True
    assert recs["t_cat"]["correct"] is False  # "two" is not "three years old"
    assert recs["t_job"]["retrieval"]["session"]["recall_all@1"] == 1.0 and recs["t_job"]["retrieval"]["turn"] is None
    assert m["retrieval"]["n_evaluable"] == 1  # only t_job gave retrieved ids
    assert s["headline"][0]["system"] == "hypotheses" and "LongMemEval" in (out / "report.md").read_text()
    cfg = json.loads((out / "config.json").read_text())["judging"]
    assert len(cfg["hypotheses_sha256"]) == 64


@pytest.mark.parametrize("rows,needles", [
    ({**GOOD, "t_nope": "x"}, ["h.jsonl:6", "'t_nope' is not in the data"]),
    ({k: v for k, v in GOOD.items() if k != "t_cat"}, ["no answer for question_id 't_cat'", "--allow-missing"]),
])
def test_bad_hypotheses_are_one_line_errors_before_any_call(rows, needles, tmp_path, capsys):
    f = hyps(tmp_path / "h.jsonl", rows)
    assert run("bench", "longmemeval", "--data", str(LME), "--hypotheses", str(f), "--out", str(tmp_path / "o")) == 2
    one_line(capsys.readouterr().err, *needles)
    assert not (tmp_path / "o").exists()


def test_duplicate_and_malformed_hypotheses(tmp_path, capsys):
    f = tmp_path / "h.jsonl"
    f.write_text('{"question_id": "t_job", "hypothesis": "a"}\n{"question_id": "t_job", "hypothesis": "b"}\n')
    assert run("bench", "longmemeval", "--data", str(LME), "--hypotheses", str(f), "--out", str(tmp_path / "o")) == 2
    one_line(capsys.readouterr().err, "h.jsonl:2", "duplicate", "first on line 1")
    f.write_text('{"question_id": "t_job"}\n')
    assert run("bench", "longmemeval", "--data", str(LME), "--hypotheses", str(f), "--out", str(tmp_path / "o")) == 2
    one_line(capsys.readouterr().err, "h.jsonl:1", "field 'hypothesis': missing")


def test_allow_missing_reports_what_was_left_out(tmp_path):
    f = hyps(tmp_path / "h.jsonl", {"t_job": "Fernbrook", "t_trip": "Lisbon"})
    out = tmp_path / "o"
    assert run("bench", "longmemeval", "--data", str(LME), "--hypotheses", str(f), "--allow-missing",
               "--out", str(out)) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["n_units"] == 2 and s["n_left_out"] == 3 and set(s["left_out_ids"]) == {"t_cat", "t_garden", "t_car_abs"}


def test_hypotheses_exclude_systems(tmp_path, capsys):
    f = hyps(tmp_path / "h.jsonl", GOOD)
    assert run("bench", "longmemeval", "--data", str(LME), "--hypotheses", str(f), "--systems", "full_context",
               "--out", str(tmp_path / "o")) == 2
    one_line(capsys.readouterr().err, "--hypotheses")


@pytest.mark.slow
def test_locomo_predictions(tmp_path, capsys):
    conv = json.loads(LOCOMO.read_text())[0]
    rows = [{"sample_id": "conv-tiny", "question": q["question"], "prediction": q.get("answer") or "Not mentioned"}
            for q in conv["qa"]]
    f = write_jsonl(tmp_path / "p.jsonl", rows)
    out = tmp_path / "o"
    assert run("bench", "locomo", "--data", str(LOCOMO), "--predictions", str(f), "--out", str(out)) == 0
    s = json.loads((out / "summary.json").read_text())
    overall = s["systems"]["predictions"]["overall"]
    assert s["n_questions"] == 6 and overall["n"] == 6
    assert overall["f1"] == pytest.approx(1.0)  # every prediction is the gold answer (category 5: 'not mentioned')
    capsys.readouterr()
    write_jsonl(f, rows[:-1] + [dict(rows[-1], question="What colour vase did Ben paint?")])
    assert run("bench", "locomo", "--data", str(LOCOMO), "--predictions", str(f), "--out", str(tmp_path / "x")) == 2
    one_line(capsys.readouterr().err, "p.jsonl:6", "What colour vase did Ben paint?", "not in the data")


# --- selection ---------------------------------------------------------------------------------
def selected(out: Path) -> list[str]:
    return sorted({r["question_id"] for r in read_jsonl(out / "samples.jsonl")})


def test_per_type_and_question_ids_and_limit(tmp_path):
    base = ["bench", "longmemeval", "--data", str(LME), "--systems", "full_context"]
    assert run(*base, "--per-type", "1", "--out", str(tmp_path / "a")) == 0
    assert selected(tmp_path / "a") == ["t_garden", "t_job", "t_trip"]  # first of each of the 3 types
    ids = tmp_path / "ids.txt"
    ids.write_text("# wanted\nt_cat\nt_trip\n")
    assert run(*base, "--question-ids", f"@{ids}", "--out", str(tmp_path / "b")) == 0
    assert selected(tmp_path / "b") == ["t_cat", "t_trip"]
    assert run(*base, "--question-ids", "t_car_abs,t_job", "--limit", "1", "--out", str(tmp_path / "c")) == 0
    assert selected(tmp_path / "c") == ["t_job"]  # the data set's order, then the limit


def test_locomo_limit_counts_questions_across_conversations(tmp_path):
    out = tmp_path / "o"
    assert run("bench", "locomo", "--data", str(LOCOMO), "--systems", "full_context", "--limit", "4",
               "--out", str(out)) == 0
    assert json.loads((out / "summary.json").read_text())["n_questions"] == 4
    assert run("bench", "locomo", "--data", str(LOCOMO), "--systems", "full_context", "--per-type", "1",
               "--out", str(tmp_path / "p")) == 0
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["n_questions"] == 5  # one per category


@pytest.mark.parametrize("extra,needle", [
    (["--limit", "0"], "setting 'limit' (--limit)"),
    (["--limit", "-1"], "setting 'limit' (--limit)"),
    (["--per-type", "0"], "setting 'per_type' (--per-type)"),
    (["--question-ids", "t_job,nope"], "no question 'nope'"),
    (["--question-ids", "t_job,t_job"], "given twice"),
    (["--question-ids", "@/no/such/file"], "cannot read /no/such/file"),
    (["--workers", "0"], "setting 'workers'"),
    (["--timeout", "inf"], "finite"),
])
def test_bad_selection_is_one_line(extra, needle, tmp_path, capsys):
    assert run("bench", "longmemeval", "--data", str(LME), "--systems", "full_context", *extra,
               "--out", str(tmp_path / "o")) == 2
    one_line(capsys.readouterr().err, needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize("bench", ["longmemeval", "locomo"])
def test_answers_judged_by_an_endpoint_are_not_labelled_offline(tmp_path, capsys, bench):
    """The answer model is unused (answers come from the file) and left at its `offline` default:
    nothing ran offline, so no offline note in summary.json, report.md or on the console."""
    from chateval.testing.fake_openai import FakeOpenAIServer

    if bench == "longmemeval":
        f, flag, data = hyps(tmp_path / "h.jsonl", GOOD), "--hypotheses", LME
    else:
        conv = json.loads(LOCOMO.read_text())[0]
        f = write_jsonl(tmp_path / "p.jsonl", [{"sample_id": "conv-tiny", "question": q["question"],
                                                "prediction": "x"} for q in conv["qa"]])
        flag, data = "--predictions", LOCOMO
    out = tmp_path / "o"
    reply = json.dumps({"correct": True, "reason": "r"})
    with FakeOpenAIServer(responder=lambda body: reply) as server:
        capsys.readouterr()
        assert run("bench", bench, "--data", str(data), flag, str(f), "--judge", "single", "--out", str(out),
                   "--judge-model", "openai-compatible/m", "--base-url", server.base_url) == 0
        assert server.counts["reply"] > 0  # the judge did run there
    err = capsys.readouterr().err
    s = json.loads((out / "summary.json").read_text())
    assert s["offline"] is False and "note" not in s
    assert "offline" not in err.lower() and "offline model" not in (out / "report.md").read_text()
    # the control: the same run judged by the offline model is labelled
    assert run("bench", bench, "--data", str(data), flag, str(f), "--judge", "single", "--out", str(tmp_path / "off")) == 0
    assert json.loads((tmp_path / "off" / "summary.json").read_text())["offline"] is True
