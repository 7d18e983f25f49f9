"""Whole runs against a misbehaving endpoint: every unit ends up judged or failed with its
error, none lost or duplicated, the summary agrees with samples.jsonl, and ``--resume`` against
a healthy endpoint redoes exactly the failed units.

The fake endpoint (127.0.0.1 only) injects a seeded ~30% fault mix: 429 with Retry-After, 500,
503, timeouts, connection resets, truncated JSON bodies, empty contents, plus malformed verdicts
and malformed JSON from the responder. Retries, backoff and timeouts are set small so the test
stays fast; nothing asserts on wall-clock time.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer, Fault

from .conftest import read_jsonl, write_jsonl

MODEL = "openai-compatible/judge-m"
N_SAMPLES = 50
MARK = re.compile(r"\[s(\d\d)\]")

# ~30% of requests misbehave; each kind is frequent enough to occur in a run of this size.
FAULTS = {
    Fault("429", retry_after=0.01): 0.05,
    Fault("500"): 0.05,
    Fault("503"): 0.04,
    Fault("timeout", delay=3.0): 0.04,
    Fault("reset"): 0.04,
    Fault("truncated"): 0.04,
    Fault("empty"): 0.04,
}
# --timeout is well above a normal reply's latency even on a loaded machine, and below the
# "timeout" fault's delay.
FAST = ["--max-retries", "1", "--retry-base-delay", "0.01", "--timeout", "1", "--no-cache"]
# The healthy endpoint of a resumed run: generous, so a slow machine cannot add a retry.
HEALTHY = ["--timeout", "30", "--max-retries", "2"]


def expected_scores(i: int) -> tuple[int, int]:
    """The (deterministic) verdict a healthy judge gives sample i."""
    if i % 5 == 0:
        return 6, 6
    return (8, 4) if i % 2 else (3, 9)


def expected_winner(i: int) -> str:
    a, b = expected_scores(i)
    return "tie" if a == b else ("1" if a > b else "2")


def sample_of(body: dict[str, Any]) -> int | None:
    """Which sample a request is about: the marker in its question (in the system message)."""
    marks = {int(m) for msg in body.get("messages", []) for m in MARK.findall(str(msg.get("content", "")))}
    assert len(marks) <= 1, marks  # a request never mixes two samples
    return marks.pop() if marks else None


class Judge:
    """A responder: the sample's verdict, or (with probability ``bad``) an unreadable one."""

    def __init__(self, bad: float = 0.0, seed: int = 0) -> None:
        self.bad, self.rng, self.lock = bad, random.Random(seed), threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            roll = self.rng.random()
        if roll < self.bad / 2:
            return "Both answers have merit; I would rather not put numbers on them."
        if roll < self.bad:
            return "Assistant 1 is better.\nScore of Assistant 1: eleven\nScore of Assistant 2: 12"
        i = sample_of(body)
        a, b = expected_scores(i if i is not None else 1)
        return f"My assessment of both responses.\nScore of Assistant 1: {a}\nScore of Assistant 2: {b}"


def heal(server: FakeOpenAIServer, responder: Any) -> None:
    """The endpoint recovers: no more faults, a well-behaved responder, a fresh request log."""
    server.faults.clear()
    server.responder = responder
    server.reset()


def pairwise_file(path: Path) -> Path:
    rows = [{"id": f"s{i:02d}", "question": f"[s{i:02d}] Which reply about topic {i} is better?",
             "answer_1": f"Answer one about topic {i}.", "answer_2": f"Answer two about topic {i}.",
             "label": expected_winner(i)} for i in range(N_SAMPLES)]
    return write_jsonl(path, rows)


def check_run(out: Path, ids: list[str]) -> tuple[list[dict], dict]:
    """Invariants of any finished run: each id exactly once; summary equals the records."""
    rows = read_jsonl(out / "samples.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert Counter(r["id"] for r in rows) == Counter(ids)  # none lost, none duplicated
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] != "ok"]
    for r in ok:
        assert r["verdict"] and r["verdict"]["winner"] in ("1", "2", "tie") and r["error"] is None
    for r in failed:
        assert r["status"] == "failed" and r["verdict"] is None
        assert isinstance(r["error"], str) and r["error"].strip() and "\n" not in r["error"]
        assert "Traceback" not in r["error"]
    assert summary["n_samples"] == len(rows) == len(ids)
    assert summary["n_ok"] == len(ok) and summary["n_failed"] == len(failed)
    assert sorted(summary["failed_ids"]) == sorted(r["id"] for r in failed)
    assert summary["verdicts"] == dict(Counter(r["verdict"]["winner"] for r in ok))
    agents = [a for r in rows for a in r["agents"]]
    assert summary["parse_errors"] == sum(1 for a in agents if a["parse_error"])
    assert summary["reasked"] == sum(1 for a in agents if a["reasked"])
    assert summary["complete"] is True
    return rows, summary


@pytest.mark.slow
def test_evaluate_50_samples_under_faults_then_resume(tmp_path, request):
    data = pairwise_file(tmp_path / "pairs.jsonl")
    ids = [f"s{i:02d}" for i in range(N_SAMPLES)]
    out = tmp_path / "run"
    args = ["evaluate", str(data), "--out", str(out), "--model", MODEL, "--turns", "2", *FAST]

    server = FakeOpenAIServer(responder=Judge(bad=0.08, seed=1), faults=FAULTS, seed=7)
    request.addfinalizer(server.close)
    args.append(f"--base-url={server.base_url}")
    code = main(args)
    counts = server.counts
    rows, summary = check_run(out, ids)
    assert code == (1 if summary["n_failed"] else 0)
    # The mix did happen, every kind of it, and some samples did not survive it.
    assert {"429", "500", "503", "timeout", "reset", "truncated", "empty", "reply"} <= set(counts)
    assert 0.2 < 1 - counts["reply"] / sum(counts.values()) < 0.4
    assert 0 < summary["n_failed"] < N_SAMPLES
    assert summary["n_ok"] >= N_SAMPLES // 2
    # Errors name what went wrong, and no ok verdict was guessed from an unreadable reply.
    errors = {r["error"] for r in rows if r["status"] == "failed"}
    assert all(e.startswith(f"model call to {MODEL} failed after") or e.startswith("no readable verdict")
               for e in errors), errors
    for r in rows:
        if r["status"] == "ok":
            readable = [a for a in r["agents"] if not a["parse_error"]]
            assert readable and all(a["winner"] == expected_winner(int(r["id"][1:])) for a in readable)
            assert r["verdict"]["winner"] == expected_winner(int(r["id"][1:]))
    ok_before = {r["id"]: r for r in rows if r["status"] == "ok"}
    failed_before = {r["id"] for r in rows if r["status"] != "ok"}

    # --resume against a healthy endpoint: only the failed samples are judged again.
    # (The same endpoint: its URL is part of the judging settings --resume checks.)
    heal(server, Judge())
    code = main([*args, *HEALTHY, "--resume"])
    asked = {f"s{sample_of(b):02d}" for b in server.requests}
    n_requests = len(server.requests)
    assert code == 0
    rows2, summary2 = check_run(out, ids)
    assert asked == failed_before
    assert all(r["status"] == "ok" for r in rows2) and summary2["n_ok"] == N_SAMPLES
    by_id = {r["id"]: r for r in rows2}
    assert all(by_id[i] == ok_before[i] for i in ok_before)  # finished samples untouched
    assert n_requests == sum(by_id[i]["usage"]["calls"] for i in failed_before)
    assert summary2["verdicts"] == dict(Counter(expected_winner(i) for i in range(N_SAMPLES)))
    assert summary2["label_accuracy"] == {"n": N_SAMPLES, "accuracy": 1.0}


# --- a memory benchmark under faults -----------------------------------------------------------

TOPICS = [("Alice", "Berlin", "violin"), ("Bruno", "Lisbon", "chess"), ("Chen", "Osaka", "rowing")]


def lme_slice(path: Path) -> Path:
    """A 3-question LongMemEval oracle-style file: only evidence sessions, two per question."""
    entries = []
    for k, (name, city, hobby) in enumerate(TOPICS):
        qid = f"q{k}"
        entries.append({
            "question_id": qid, "question_type": "single-session-user",
            "question": f"[s{k:02d}] Where does {name} live now?", "answer": city,
            "question_date": "2023/06/30 (Fri) 10:00",
            "haystack_session_ids": [f"answer_{qid}_a", f"answer_{qid}_b"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/06/01 (Thu) 09:00"],
            "haystack_sessions": [
                [{"role": "user", "content": f"[s{k:02d}] I am {name} and I took up {hobby}.", "has_answer": False},
                 {"role": "assistant", "content": f"[s{k:02d}] {hobby.title()} is a great choice."}],
                [{"role": "user", "content": f"[s{k:02d}] I just moved to {city}.", "has_answer": True},
                 {"role": "assistant", "content": f"[s{k:02d}] Welcome to {city}!"}],
            ],
            "answer_session_ids": [f"answer_{qid}_b"],
        })
    path.write_text(json.dumps(entries))
    return path


# One reply that satisfies every typed step of these systems: extract_facts reads "facts",
# the LongMemEval judge reads "correct" and "reason"; the answer step takes any text.
STEP_REPLY = json.dumps({"facts": [{"text": "The user moved to a new city.", "turn_ids": []}],
                         "summary": "x", "correct": True, "reason": "r"})


class Steps:
    def __init__(self, bad: float = 0.0, seed: int = 0) -> None:
        self.bad, self.rng, self.lock = bad, random.Random(seed), threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            roll = self.rng.random()
        return "Sorry, I can't produce JSON right now." if roll < self.bad else STEP_REPLY


@pytest.mark.slow
def test_memory_bench_under_faults_then_resume(tmp_path, request):
    data = lme_slice(tmp_path / "lme.json")
    out = tmp_path / "lme-run"
    keys = [f"q{k}::{m}" for m in ("full_context", "retrieval") for k in range(len(TOPICS))]
    args = ["bench", "longmemeval", "--data", str(data), "--out", str(out),
            "--systems", "full_context,retrieval", "--answer-model", "openai-compatible/m",
            "--embedder", "hash", "--judge", "single", "--workers", "1", "--max-connections", "1",
            "--judge-protocol", "chateval", *FAST]  # the JSON judge, whose replies the script exercises

    server = FakeOpenAIServer(responder=Steps(bad=0.05, seed=3), faults=FAULTS, seed=11)
    request.addfinalizer(server.close)
    args.append(f"--base-url={server.base_url}")
    # A short run makes few requests, so it opens with every kind of fault once (calls are
    # sequential here): the first call fails for good (both attempts), so its unit fails; the
    # others are retried or re-asked. Then the seeded ~30% mix takes over.
    server.script([Fault("500"), Fault("503"),
                   Fault("429", retry_after=0.01), STEP_REPLY, Fault("timeout", delay=3.0), STEP_REPLY,
                   Fault("reset"), STEP_REPLY, Fault("truncated"), STEP_REPLY,
                   Fault("empty"), "Sorry, I can't produce JSON right now.", STEP_REPLY])
    code = main(args)
    counts = server.counts
    assert {"429", "500", "503", "timeout", "reset", "truncated", "empty", "reply"} <= set(counts)
    assert server.pending == 0
    rows = read_jsonl(out / "samples.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert Counter(r["key"] for r in rows) == Counter(keys)
    failed = {r["key"] for r in rows if r["status"] != "ok"}
    assert failed and code == 1
    assert summary["n_units"] == len(rows) and summary["n_failed"] == len(failed)
    for method in ("full_context", "retrieval"):
        m = summary["methods"][method]
        mine = [r for r in rows if r["key"].endswith(f"::{method}")]
        assert m["n"] == len(mine) and m["n_failed"] == sum(1 for r in mine if r["status"] != "ok")
        assert {f["key"] for f in m["failed"]} == {r["key"] for r in mine if r["status"] != "ok"}
    for r in rows:
        if r["status"] == "ok":
            assert r["judge"]["single"]["correct"] is True and r["correct"] is True
        else:
            assert r["error"].strip() and "\n" not in r["error"] and "Traceback" not in r["error"]
    assert (out / "report.md").exists()
    ok_before = {r["key"]: r for r in rows if r["status"] == "ok"}

    heal(server, Steps())
    code = main([*args, *HEALTHY, "--resume"])
    asked = {f"q{sample_of(b)}" for b in server.requests}
    n_requests = len(server.requests)
    assert code == 0
    rows2 = read_jsonl(out / "samples.jsonl")
    summary2 = json.loads((out / "summary.json").read_text())
    assert Counter(r["key"] for r in rows2) == Counter(keys)
    assert all(r["status"] == "ok" for r in rows2) and summary2["n_failed"] == 0
    assert summary2["n_units"] == len(keys)
    by_key = {r["key"]: r for r in rows2}
    assert all(by_key[k] == ok_before[k] for k in ok_before)  # finished units untouched
    assert asked == {k.split("::")[0] for k in failed}  # only the failed units' questions were asked
    redone = [by_key[k] for k in failed]
    assert n_requests == sum(r["usage"]["calls"] + r["judge"]["usage"]["calls"] for r in redone)
