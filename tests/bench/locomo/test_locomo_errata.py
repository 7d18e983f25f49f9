"""`bench locomo --errata`: the same predictions scored on the raw and the corrected gold, side
by side, with the ceiling; numbers computed by hand on the tiny fixture (offline judge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chateval.cli import main

from ...conftest import FIXTURES, needs_shared, read_jsonl, shared, write_jsonl

LOCOMO, ERRATA = FIXTURES / "locomo_tiny.json", FIXTURES / "locomo_tiny_errata.json"
# qa index -> prediction. Errata: qa0 gold "pottery classes" -> "knitting lessons"; qa1 a wrong
# citation only (the gold stands); qa2 -> "mid-March"; qa3 "Porto, July 2023" -> "Madrid, June 2023";
# qa4 not audited; one entry is about a conversation the file does not hold.
PREDICTIONS = {0: "pottery classes", 1: "Pepper", 2: "mid-March", 3: "Madrid, June 2023", 4: "new running shoes"}


def _run(tmp_path: Path, *extra: str) -> int:
    conv = json.loads(LOCOMO.read_text())[0]
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {"sample_id": conv["sample_id"], "question": conv["qa"][i]["question"], "prediction": p}
            for i, p in PREDICTIONS.items()
        ],
    )
    return main(
        [
            "bench",
            "locomo",
            "--data",
            str(LOCOMO),
            "--predictions",
            str(preds),
            "--categories",
            "1,2,3,4",
            "--answer-model",
            "offline",
            "--embedder",
            "hash",
            "--out",
            str(tmp_path / "run"),
            *extra,
        ]
    )


def test_raw_and_corrected_side_by_side(tmp_path):
    assert _run(tmp_path, "--errata", str(ERRATA)) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    e = summary["errata"]
    assert (e["entries"], e["wrong_gold_entries"], e["outside_data"]) == (5, 4, 1)
    x = e["systems"]["predictions"]
    # wrong gold among the 5 scored: qa0, qa2, qa3 -> ceiling 2/5
    assert (x["n"], x["n_wrong_gold"], x["ceiling"]) == (5, 3, pytest.approx(0.4))
    # raw F1: qa0 1, qa1 1, qa2 0, qa3 partial F1 (porto 0, "july 2023" vs "june 2023" 0.5) = 0.25, qa4 1
    assert x["raw"]["f1"] == pytest.approx((1 + 1 + 0 + 0.25 + 1) / 5)
    # corrected F1: qa0 0 (knitting lessons), qa1 1, qa2 1, qa3 1, qa4 1
    assert x["corrected"]["f1"] == pytest.approx(4 / 5)
    # the judge: raw correct on qa0, qa1, qa4; corrected on qa1, qa2, qa3, qa4
    assert (x["raw"]["judge"], x["corrected"]["judge"]) == (pytest.approx(3 / 5), pytest.approx(4 / 5))
    assert (x["credits_from_wrong_gold"], x["credits_on_corrected_gold"]) == (1, 2)
    # the raw numbers are the run's own (the overlay changes nothing else)
    assert summary["systems"]["predictions"]["overall"]["f1"] == pytest.approx(x["raw"]["f1"])
    rows = {q["qa_index"]: q for r in read_jsonl(tmp_path / "run" / "samples.jsonl") for q in r["qa"]}
    assert set(k for k, q in rows.items() if "errata" in q) == {0, 2, 3}  # not qa1: its gold stands
    assert rows[0]["errata"]["gold"] == "knitting lessons" and rows[0]["gold"] == "pottery classes"
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert len(config["judging"]["errata_sha256"]) == 64
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Raw and corrected gold (--errata)" in report
    assert "| predictions | 5 | 3 | 40.0 | 65.0 | 80.0 | 60.0 | 80.0 | 1 | 2 |" in report
    from chateval.view.build import build_view

    page = build_view([tmp_path / "run"]).read_text()
    assert 'class="kv mem-errata"' in page and "knitting lessons" in page  # the corrected gold beside the raw one


def test_without_errata_nothing_changes(tmp_path):
    assert _run(tmp_path) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "errata" not in summary
    assert "errata" not in json.loads((tmp_path / "run" / "config.json").read_text())["judging"]


def test_errata_of_another_file_are_refused(tmp_path, capsys):
    bad = json.loads(ERRATA.read_text())
    bad[0]["question"] = "What did Ana stop on Tuesday?"
    path = tmp_path / "errors.json"
    path.write_text(json.dumps(bad))
    assert _run(tmp_path, "--errata", str(path)) == 2
    err = capsys.readouterr().err
    assert "entry locomo_0_qa0: its question 'What did Ana stop on Tuesday?' is not question 0 of conv-tiny" in err
    assert not (tmp_path / "run" / "samples.jsonl").exists()
    path.write_text(json.dumps([{"question_id": "locomo_0_qa0"}]))
    assert _run(tmp_path, "--errata", str(path)) == 2
    assert "field 'question' missing" in capsys.readouterr().err


def test_the_errata_by_the_data_sets_name(tmp_path, monkeypatch, capsys):
    """`--errata locomo-audit` reads the data folder's copy (as rejudge does) and records that file."""
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(tmp_path / "data"))
    assert _run(tmp_path, "--errata", "locomo-audit") == 2
    assert "get it with `chateval data get locomo-audit`" in capsys.readouterr().err
    (tmp_path / "data" / "locomo_judged").mkdir(parents=True)
    copy = tmp_path / "data" / "locomo_judged" / "locomo_audit_errors.json"
    copy.write_bytes(ERRATA.read_bytes())
    assert _run(tmp_path, "--errata", "locomo-audit") == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["errata"]["entries"], summary["errata"]["wrong_gold_entries"]) == (5, 4)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["judging"]["errata"] == str(copy)


@needs_shared("locomo_judged", "locomo_audit_errors.json")
def test_the_published_audit_places_on_the_dev_file():
    """The real audit against the shared two-conversation dev file: every entry about its
    conversations matches the file's question at its index; the other eight are counted."""
    from chateval.bench.locomo.errata import match_errata
    from chateval.datasets import load_locomo
    from chateval.datasets.errata import load_errata

    errata = load_errata(shared("locomo_judged", "locomo_audit_errors.json"))
    fixes, outside = match_errata(load_locomo(shared("locomo", "locomo_dev2.json")), errata, "dev2")
    assert {k: len(v) for k, v in fixes.items()} == {"conv-26": 15, "conv-30": 4}
    assert outside == 99 - 19
