"""The end-of-run table says what each number is: which judge an accuracy is from (both, with
--judge both), and for a head-to-head which system is A, with its wins, ties and losses."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from rich.console import Console

from chateval.cli import main
from chateval.cli.bench import headline_table

from .conftest import FIXTURES

OFFLINE = ["--answer-model", "offline", "--embedder", "hash", "--no-cache"]


def table_text(rows) -> str:
    console = Console(width=200, file=StringIO(), record=True)
    headline_table(rows, console)
    return console.export_text()


def cells(text: str, first: str) -> list[str]:
    """The cells of the table row starting with ``first``."""
    line = next(ln for ln in text.splitlines() if re.match(rf"\W*{re.escape(first)}\b", ln))
    return [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]


@pytest.mark.slow
def test_judge_both_shows_both_accuracies_labelled(tmp_path):
    out = tmp_path / "lme"
    assert main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems",
                 "full_context", "--judge", "both", "--limit", "3", *OFFLINE, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [row] = summary["headline"]
    qa = summary["methods"]["full_context"]["qa"]
    assert row["metric"] == "accuracy (single judge)" and row["value"] == qa["single"]["overall"]
    assert row["accuracy (debate judge)"] == qa["debate"]["overall"]
    text = table_text(summary["headline"])
    assert "accuracy (single judge)" in text and "accuracy (debate judge)" in text
    assert cells(text, "full_context")[2:4] == [f"{100 * qa['single']['overall']:.1f}%",
                                                f"{100 * qa['debate']['overall']:.1f}%"]


def test_a_single_judge_is_named_too(tmp_path):
    out = tmp_path / "lme"
    assert main(["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems",
                 "full_context", "--judge", "debate", "--limit", "2", *OFFLINE, "--out", str(out)]) == 0
    [row] = json.loads((out / "summary.json").read_text())["headline"]
    assert row["metric"] == "accuracy (debate judge)" and "accuracy (single judge)" not in row


@pytest.mark.slow
def test_head2head_names_a_and_b_with_wins_ties_losses(tmp_path):
    out = tmp_path / "h2h"
    assert main(["bench", "head2head", "--systems", "full_context,retrieval", "--data",
                 str(FIXTURES / "lme_tiny.json"), *OFFLINE, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [row] = summary["headline"]
    assert row["system"] == "A=full_context vs B=retrieval"
    rates = [summary[k]["rate"] for k in ("wins", "ties", "losses")]
    assert [row["value"], row["ties"], row["A losses"]] == rates and abs(sum(rates) - 1) < 1e-9
    text = table_text(summary["headline"])
    assert "A wins" in text and "ties" in text and "A losses" in text
    assert cells(text, "A=full_context vs B=retrieval")[2:5] == [f"{100 * r:.1f}%" for r in rates]
