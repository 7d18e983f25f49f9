"""A command missing several required options names them all in one line (not one per attempt)."""

from __future__ import annotations

from chateval.cli import main

from .conftest import EXAMPLES

PLUGIN = str(EXAMPLES / "extending" / "answer_check")


def test_every_missing_required_option_is_named_at_once(capsys):
    assert main(["bench", "answer_check", "--plugin", PLUGIN]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'out' (--out)" in err and "'data' (--data)" in err and "required" in err


def test_one_missing_option_reads_as_before(tmp_path, capsys):
    assert main(["bench", "answer_check", "--plugin", PLUGIN, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "error: setting 'data' (--data): required"
