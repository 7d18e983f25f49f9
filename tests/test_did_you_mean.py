"""A mistyped command, option, system, preset or persona gets a 'did you mean' (issue 39 item 12)."""

from __future__ import annotations

import pytest

from chateval.cli import main
from chateval.util.errors import ConfigError
from chateval.util.registry import Registry, did_you_mean


def _error(capsys, argv: list[str]) -> str:
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    assert rc == 2
    return " ".join(capsys.readouterr().err.split())


def test_did_you_mean_picks_the_closest_names():
    assert did_you_mean("full_contxt", ["full_context", "retrieval", "zep"]) == "; did you mean 'full_context'?"
    assert did_you_mean("Critic", ["critic"]) == "; did you mean 'critic'?"
    assert did_you_mean("zzz", ["full_context", "retrieval"]) == ""


def test_a_registry_suggests_a_registered_name():
    reg: Registry[int] = Registry("widget")
    reg.register("one_by_one")(1)
    reg.register("simultaneous")(2)
    with pytest.raises(ConfigError, match=r"unknown widget 'one_by_on'; did you mean 'one_by_one'\? \(known: "):
        reg.get("one_by_on")
    Registry.ALL.remove(reg)


@pytest.mark.parametrize(("argv", "said"), [
    (["evalute", "x"], "invalid choice: 'evalute'"),
    (["bench", "longmemevl", "--out", "o"], "did you mean 'longmemeval'?"),
    (["data", "gt"], "did you mean 'get'?"),
])
def test_a_mistyped_command(capsys, argv, said):
    err = _error(capsys, argv)
    assert said in err and "did you mean" in err


def test_a_mistyped_option_is_compared_with_its_commands_options(capsys, tmp_path):
    err = _error(capsys, ["evaluate", "examples/faireval_pairwise.jsonl", "--modle", "offline", "--out", str(tmp_path)])
    assert "unrecognized arguments: --modle offline; did you mean '--model'" in err  # (or a second close name)
    err = _error(capsys, ["bench", "longmemeval", "--data", "x", "--answer-modle=offline", "--out", str(tmp_path)])
    assert "did you mean '--answer-model'" in err


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--preset", "chateval_defualt", "unknown preset 'chateval_defualt'; did you mean 'chateval_default'?"),
    ("--personas", "critc", "unknown persona 'critc'; did you mean 'critic'?"),
    ("--strategy", "one_by_on", "unknown strategy 'one_by_on'; did you mean 'one_by_one'?"),
])
def test_a_mistyped_name_in_evaluate(capsys, tmp_path, option, value, said):
    err = _error(capsys, ["evaluate", "examples/faireval_pairwise.jsonl", "--model", "offline", option, value,
                          "--out", str(tmp_path / "run")])
    assert said in err
    assert not (tmp_path / "run").exists()


def test_a_mistyped_system(capsys, tmp_path):
    from .conftest import FIXTURES

    err = _error(capsys, ["bench", "longmemeval", "--data", str(FIXTURES / "lme_tiny.json"), "--systems",
                          "full_contxt", "--out", str(tmp_path / "run")])
    assert "unknown memory system 'full_contxt'; did you mean 'full_context'?" in err


def test_judge_help_lists_the_choices_plainly(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "longmemeval", "--help"])
    out = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse wraps at hyphens
    assert ("single (a LongMemEval-style yes/no judge), debate (the panel's correctness task) or both (each "
            "scores every answer, reported side by side) (default: single)") in out
