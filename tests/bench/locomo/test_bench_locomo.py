"""`chateval bench locomo`: the official LoCoMo scoring rules, BLEU-1, evidence recall, and an
offline end-to-end run (with --resume) on a slice of the dev file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from chateval.bench import BENCHMARKS
from chateval.bench.locomo import locomo as lc
from chateval.bench.locomo import metrics as lm
from chateval.cli import main
from chateval.datasets import DatasetError, load_locomo

from ...conftest import needs_shared, SHARED, read_jsonl

DEV = SHARED / "locomo" / "locomo_dev2.json"
SLICE_QA = (0, 1, 2, 3, 7, 82, 152)  # categories 2, 2 (int answer), 3, 1, 1, 4, 5; evidence in sessions 1-3


# --- normalisation and F1 ----------------------------------------------------------------------

def test_normalize_answer_official_rules():
    # commas dropped, lower-cased, punctuation removed, a/an/the/and removed, whitespace collapsed
    assert lm.normalize_answer("The Quick, brown fox -- and a dog!") == "quick brown fox dog"
    assert lm.normalize_answer("  An apple;  the end. ") == "apple end"
    # whole words only: 'and'/'the' inside words survive
    assert lm.normalize_answer("Andrew then band") == "andrew then band"


@pytest.mark.slow
def test_stemming_makes_running_match_runs():
    assert lm.answer_tokens("running runs") == ["run", "run"]
    assert lm.token_f1("running", "runs") == 1.0
    # pred tokens: i, wa, run, in, park (5); gold: run -> P = 1/5, R = 1, F1 = 1/3
    assert lm.token_f1("I was running in the park", "runs") == pytest.approx(1 / 3)
    assert lm.token_f1("blue", "green") == 0.0
    assert lm.token_f1("", "green") == 0.0


def test_single_hop_and_temporal_are_plain_f1():
    # pred: 7 may 2023 (3 tokens); gold: 7 may 2023 -> 1.0
    assert lm.locomo_f1(2, "7 May, 2023", "7 May 2023") == 1.0
    # pred: mental health awar (3), gold: mental health (2): P = 2/3, R = 1 -> F1 = 0.8
    assert lm.locomo_f1(4, "Mental health awareness", "mental health") == pytest.approx(0.8)


def test_multi_hop_partial_f1_over_comma_parts():
    # each gold part takes its best prediction part: Paris 1, London 1, Rome 0 -> 2/3
    assert lm.locomo_f1(1, "London, Paris", "Paris, London, Rome") == pytest.approx(2 / 3)
    # one prediction part [she, like, hike, paint]; gold 'hiking' -> [hike]: P 1/4, R 1 -> 0.4;
    # gold 'painting sunsets' -> [paint, sunset]: P 1/4, R 1/2 -> 1/3; mean = 11/30
    assert lm.locomo_f1(1, "she likes hiking and paints", "hiking, painting sunsets") == pytest.approx(11 / 30)
    # the same pair scored as single-hop (no split) differs: [she like hike paint] vs [hike paint sunset]
    assert lm.locomo_f1(4, "she likes hiking and paints", "hiking, painting sunsets") == pytest.approx(4 / 7)


def test_open_domain_gold_cut_at_semicolon():
    gold = "Likely yes; she collects classic children's books"
    assert lm.locomo_f1(3, "likely yes", gold) == 1.0
    assert lm.token_f1("likely yes", gold) < 0.5  # what it would be without the cut


def test_adversarial_keyword_rule():
    assert lm.locomo_f1(5, "Not mentioned in the conversation", "self-care is important") == 1.0
    assert lm.locomo_f1(5, "No information available.", "x") == 1.0
    assert lm.locomo_f1(5, "That was never NOT MENTIONED, sorry", "x") == 1.0
    assert lm.locomo_f1(5, "I don't know", "x") == 0.0
    assert lm.locomo_f1(5, "self-care is important", "self-care is important") == 0.0
    with pytest.raises(ValueError):
        lm.locomo_f1(7, "a", "b")


# --- BLEU-1 and evidence recall ----------------------------------------------------------------

def test_bleu1_hand_computed():
    # hyp [cat, sat] vs ref [cat, sat, on, mat]: precision 1, brevity penalty exp(1 - 4/2)
    assert lm.bleu1("the cat sat", "the cat sat on the mat") == pytest.approx(math.exp(-1))
    # hyp [cat, cat, cat, dog] vs ref [cat, dog]: clipped unigram precision 2/4, no brevity penalty
    assert lm.bleu1("cat cat cat dog", "cat dog") == pytest.approx(0.5)
    assert lm.bleu1("zebra", "cat dog") == 0.0
    assert lm.bleu1("", "cat") == 0.0
    assert lm.locomo_bleu1(5, "Not mentioned", "cat") is None
    assert lm.locomo_bleu1(3, "likely yes", "likely yes; because") == 1.0


def test_evidence_recall():
    assert lm.evidence_recall(["D1:3", "D2:5", "D1:3"], ["D1:3", "D9:9"]) == 0.5
    assert lm.evidence_recall(["D1:3"], []) == 0.0
    assert lm.evidence_recall(["D1:3"], None) is None  # the system exposes no retrieval
    # A QA listing no evidence: 1.0 as the official code scores it, or left out.
    assert lm.evidence_recall([], ["D1:3"]) == 1.0 == lm.evidence_recall([], [], "one")
    assert lm.evidence_recall([], ["D1:3"], "exclude") is None


@needs_shared("locomo")
def test_official_question_format_and_choice_mapping():
    conv = load_locomo(DEV)[0]
    temporal = next(q for q in conv.qa if q.category == 2)
    adversarial = next(q for q in conv.qa if q.category == 5)
    assert lc.asked_question(conv.id, temporal, "official").endswith(lc.TEMPORAL_HINT)
    assert lc.asked_question(conv.id, temporal, "plain") == temporal.question
    asked = lc.asked_question(conv.id, adversarial, "official")
    opts = lc.cat5_options(conv.id, adversarial)
    assert f"(a) {opts['a']} (b) {opts['b']}" in asked and lc.NOT_MENTIONED in opts.values()
    assert adversarial.adversarial_answer in opts.values()
    assert lc.resolve_choice("(a)", opts) == opts["a"] and lc.resolve_choice("B", opts) == opts["b"]
    assert lc.resolve_choice("Not mentioned anywhere", opts) == "Not mentioned anywhere"
    assert lc.asked_question(conv.id, adversarial, "official") == asked  # deterministic


def test_category_mapping_matches_official_code():
    from chateval.datasets.locomo import CATEGORIES

    assert CATEGORIES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    assert lc.parse_categories("4, 1,1") == [1, 4]
    with pytest.raises(Exception, match="not a LoCoMo category"):
        lc.parse_categories("1,6")


# --- end to end --------------------------------------------------------------------------------

def _slice(tmp_path: Path, *, category_override: int | None = None) -> Path:
    conv = json.loads(DEV.read_text())[0]
    c = conv["conversation"]
    keep = {"speaker_a": c["speaker_a"], "speaker_b": c["speaker_b"]}
    for n in (1, 2, 3):
        keep[f"session_{n}"] = c[f"session_{n}"]
        keep[f"session_{n}_date_time"] = c[f"session_{n}_date_time"]
    qa = [conv["qa"][i] for i in SLICE_QA]
    if category_override is not None:
        qa[0] = dict(qa[0], category=category_override)
    path = tmp_path / "locomo_slice.json"
    path.write_text(json.dumps([{"sample_id": conv["sample_id"], "conversation": keep, "qa": qa}]))
    return path


def test_registered():
    assert "locomo" in BENCHMARKS.names()


@needs_shared("locomo")
def test_unknown_category_is_a_dataset_error(tmp_path, capsys):
    path = _slice(tmp_path, category_override=9)
    with pytest.raises(DatasetError, match=r"conversation 0 \(conv-26\): qa 0: unknown category 9"):
        lc.check_conversations(load_locomo(path), str(path))
    rc = main(["bench", "locomo", "--data", str(path), "--systems", "full_context", "--embedder", "hash",
               "--out", str(tmp_path / "run")])
    assert rc == 2
    assert "unknown category 9" in capsys.readouterr().err


@needs_shared("locomo")
def test_bad_categories_option(tmp_path, capsys):
    rc = main(["bench", "locomo", "--data", str(_slice(tmp_path)), "--systems", "full_context",
               "--embedder", "hash", "--categories", "0", "--out", str(tmp_path / "run")])
    assert rc == 2
    assert "--categories" in capsys.readouterr().err


@pytest.mark.slow
@needs_shared("locomo")
def test_end_to_end_offline_and_resume(tmp_path, monkeypatch):
    data = _slice(tmp_path)
    out = tmp_path / "run"
    argv = ["bench", "locomo", "--data", str(data), "--systems", "full_context,retrieval",
            "--answer-model", "offline", "--embedder", "hash", "--judge", "both", "--out", str(out)]
    assert main(argv) == 0

    for name in ("config.json", "samples.jsonl", "summary.json", "report.md", "f1_by_category.png"):
        assert (out / name).exists(), name
    assert (out / "f1_by_category.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    records = read_jsonl(out / "samples.jsonl")
    assert sorted(r["key"] for r in records) == ["conv-26::full_context", "conv-26::retrieval"]
    for r in records:
        assert r["status"] == "ok" and len(r["qa"]) == len(SLICE_QA)
        assert r["now"].startswith("2023-06-10")  # session 3 (9 June 2023) + 1 day
        for q in r["qa"]:
            assert 0.0 <= q["f1"] <= 1.0 and q["context_tokens"] > 0
            assert set(q["judge"]) >= {"single", "debate", "agreement", "correct"}
            assert q["latency"].keys() >= {"answer_s", "judge_s"}
            assert ("recall_s" in q["latency"]) == (r["method"] == "retrieval")  # full_context does not recall
            if q["category"] == 5:
                assert q["bleu1"] is None and q["gold"] == "self-care is important"
            if r["method"] == "full_context":
                assert q["retrieved"] is None and q["evidence_recall"] is None
            else:
                assert all(":" in t for t in q["retrieved"]) and q["evidence_recall"] is not None
        assert next(q for q in r["qa"] if q["qa_index"] == 1)["gold"] == "2022"  # int answer

    summary = json.loads((out / "summary.json").read_text())
    assert summary["benchmark"] == "locomo" and summary["n_failed"] == 0 and summary["complete"]
    assert summary["note"]  # offline
    for s in ("full_context", "retrieval"):
        e = summary["systems"][s]
        cats = e["categories"]
        assert list(cats) == ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"]
        assert {k: v["n"] for k, v in cats.items()} == {"multi-hop": 2, "temporal": 2, "open-domain": 1,
                                                        "single-hop": 1, "adversarial": 1}
        assert e["overall"]["n"] == 7 and e["overall_no_adversarial"]["n"] == 6
        assert e["overall"]["judge_single"] is not None and e["overall"]["judge_debate"] is not None
        assert cats["adversarial"]["bleu1"] is None and cats["adversarial"]["f1"] is not None
        assert e["latency"].keys() >= {"ingest_s", "answer_s", "judge_s"}
        assert e["mean_context_tokens"] > 0 and e["answer_usage"]["calls"] > 0 and e["judge_usage"]["calls"] > 0
    assert summary["systems"]["full_context"]["overall"]["evidence_recall"] is None
    assert summary["systems"]["retrieval"]["overall"]["evidence_recall"] is not None
    # the summary's F1 is the mean of the recorded per-QA values
    f1s = [q["f1"] for r in records if r["method"] == "retrieval" for q in r["qa"]]
    assert summary["systems"]["retrieval"]["overall"]["f1"] == pytest.approx(sum(f1s) / len(f1s))

    report = (out / "report.md").read_text()
    header = "| system | multi-hop | temporal | open-domain | single-hop | adversarial | all | 1–4 |"
    for title in ("Token F1", "BLEU-1", "judge accuracy — single", "judge accuracy — debate", "Evidence recall"):
        assert any(line.startswith("## ") and title in line for line in report.splitlines()), title
    assert report.count(header) == 5
    assert "| full_context | 2 | 2 | 1 | 1 | 1 | 7 | 0 |" in report
    assert "f1_by_category.png" in report

    # --resume: every unit is done, so nothing runs again
    async def boom(*a, **k):
        raise AssertionError("a finished unit ran again")

    monkeypatch.setattr(lc.LoCoMo, "_unit", boom)
    before = (out / "samples.jsonl").read_text()
    assert main(argv + ["--resume"]) == 0
    assert (out / "samples.jsonl").read_text() == before
    assert json.loads((out / "summary.json").read_text())["systems"] == summary["systems"]


@needs_shared("locomo")
def test_filters_and_failed_qa_resume(tmp_path, monkeypatch):
    data = _slice(tmp_path)
    out = tmp_path / "run"
    argv = ["bench", "locomo", "--data", str(data), "--systems", "retrieval", "--answer-model", "offline",
            "--embedder", "hash", "--categories", "1,5", "--max-questions", "2", "--out", str(out)]
    real = lc.LoCoMo._answer
    calls = {"n": 0}

    async def flaky(*args):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("model went away")
        return await real(*args)

    monkeypatch.setattr(lc.LoCoMo, "_answer", staticmethod(flaky))
    assert main(argv) == 1  # one QA failed -> the unit is failed
    rec = read_jsonl(out / "samples.jsonl")[0]
    assert rec["status"] == "failed" and "model went away" in rec["error"]
    assert [q["category"] for q in rec["qa"]] == [1, 1]  # first two of categories 1 and 5, file order
    summary = json.loads((out / "summary.json").read_text())
    assert summary["systems"]["retrieval"]["n_qa_failed"] == 1 and not summary["complete"]

    monkeypatch.setattr(lc.LoCoMo, "_answer", staticmethod(real))
    assert main(argv + ["--resume"]) == 0  # the failed unit is redone
    records = read_jsonl(out / "samples.jsonl")
    assert len(records) == 1 and records[0]["status"] == "ok"
    assert json.loads((out / "summary.json").read_text())["complete"]
