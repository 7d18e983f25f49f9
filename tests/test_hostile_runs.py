"""Hostile run folders and arguments (issue 35 item 13): each is one line, exit 2, before any
work: a --resume whose config.json is not an object (null, a list, nested 100,000 deep), whose
samples.jsonl is a directory, /dev/zero or a pipe (resume used to hang), an unknown
format_version (999, "1") read by `view` or `--resume`; options that used to fail only after
judging everything (negative seeds, absurd resamples, gates that can never be met or name a
setting that does not exist) or that silently meant something else ('' as every perturbation)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from chateval.cli import main

from .conftest import write_jsonl

FIX = Path(__file__).parent / "fixtures"
PAIRS = FIX / "calibrate_pairwise.jsonl"


def items(path: Path, n: int = 3) -> Path:
    return write_jsonl(
        path, [{"id": f"c{i}", "question": f"Q{i}?", "answer_1": "a", "answer_2": "b", "label": "1"} for i in range(n)]
    )


def run(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's own refusal (a value of the wrong type): usage and one error line
        code = int(e.code or 0)
    return code, " ".join(capsys.readouterr().err.split())


def one_line(err: str, *needles: str) -> None:
    assert "Traceback" not in err and err.count("error:") == 1, err
    for n in needles:
        assert n in err, (n, err)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished evaluate run (offline model), copied for each case."""
    tmp = tmp_path_factory.mktemp("base")
    data = items(tmp / "items.jsonl")
    assert main(["evaluate", str(data), "--model", "offline", "--out", str(tmp / "run"), "--no-cache"]) == 0
    return data, tmp / "run"


def resume(capsys, finished, tmp_path, damage) -> tuple[int, str, Path]:
    data, base = finished
    out = tmp_path / "run"
    shutil.copytree(base, out)
    damage(out)
    code, err = run(capsys, "evaluate", str(data), "--model", "offline", "--out", str(out), "--no-cache", "--resume")
    return code, err, out


def _set(name: str, value: object):
    def damage(out: Path) -> None:
        path = out / name
        data = json.loads(path.read_text())
        data["format_version"] = value
        path.write_text(json.dumps(data))

    return damage


def _replace(name: str, how: str):
    def damage(out: Path) -> None:
        path = out / name
        path.unlink()
        if how == "dir":
            path.mkdir()
        elif how == "dev-zero":
            path.symlink_to("/dev/zero")
        elif how == "fifo":
            os.mkfifo(path)
        elif how == "loop":
            path.symlink_to(path.name)
        else:
            path.write_text(how)

    return damage


CASES = {
    "config null": (_replace("config.json", "null"), "not a run file (a JSON NoneType"),
    "config list": (_replace("config.json", "[1, 2]"), "a JSON list"),
    "config string": (_replace("config.json", '"run"'), "a JSON str"),
    "config number": (_replace("config.json", "1e400"), "a JSON float"),
    "config deep array": (_replace("config.json", "[" * 100_000 + "]" * 100_000), "nested too deep"),
    "config deep object": (_replace("config.json", '{"a":' * 100_000 + "1" + "}" * 100_000), "nested too deep"),
    "config judging not an object": (_replace("config.json", '{"judging": [1], "config_hash": "x"}'), "judging"),
    "config binary": (_replace("config.json", "\udcff"), "config.json"),
    "samples a directory": (_replace("samples.jsonl", "dir"), "a directory, not a file"),
    "samples /dev/zero": (_replace("samples.jsonl", "dev-zero"), "a device, pipe or socket"),
    "samples a pipe": (_replace("samples.jsonl", "fifo"), "a device, pipe or socket"),
    "summary a directory": (_replace("summary.json", "dir"), "summary.json: a directory"),
    "summary /dev/zero": (_replace("summary.json", "dev-zero"), "summary.json: a device"),
    "config a directory": (_replace("config.json", "dir"), "config.json: a directory"),
    "config /dev/zero": (_replace("config.json", "dev-zero"), "config.json: a device"),
    "samples a symlink loop": (_replace("samples.jsonl", "loop"), "samples.jsonl: cannot read it"),
    "config version 999": (_set("config.json", 999), "999 is not a format version this chateval reads (it reads 1"),
    "config version '1'": (_set("config.json", "1"), "'1' is not a format version"),
    "config version 1.0": (_set("config.json", 1.0), "1.0 is not a format version"),
    "config version -1": (_set("config.json", -1), "-1 is not a format version"),
    "config version true": (_set("config.json", True), "is not a format version"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_run_folder_is_one_error_on_resume(capsys, finished, tmp_path, case):
    damage, needle = CASES[case]
    if case == "config binary":

        def damage(out: Path) -> None:
            (out / "config.json").write_bytes(b"\xff\xfe{}")

    code, err, _ = resume(capsys, finished, tmp_path, damage)
    assert code == 2, err
    one_line(err, needle)


def test_a_sample_record_of_an_unknown_version_is_refused_on_resume(capsys, finished, tmp_path):
    def damage(out: Path) -> None:
        lines = (out / "samples.jsonl").read_text().splitlines()
        first = json.loads(lines[0]) | {"format_version": 2}
        (out / "samples.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")

    code, err, _ = resume(capsys, finished, tmp_path, damage)
    assert code == 2
    one_line(err, "samples.jsonl: record 1", "2 is not a format version")


@pytest.mark.parametrize(
    "file,value",
    [("config.json", 999), ("config.json", "1"), ("summary.json", 2), ("summary.json", "1"), ("samples.jsonl", 999)],
)
def test_view_refuses_an_unknown_format_version(capsys, finished, tmp_path, file, value):
    out = tmp_path / "run"
    shutil.copytree(finished[1], out)
    if file == "samples.jsonl":
        lines = (out / file).read_text().splitlines()
        (out / file).write_text(
            "\n".join([json.dumps(json.loads(lines[0]) | {"format_version": value}), *lines[1:]]) + "\n"
        )
    else:
        _set(file, value)(out)
    code, err = run(capsys, "view", str(out), "--out", str(tmp_path / "v.html"))
    assert code == 2, err
    one_line(err, file, f"{value!r} is not a format version")


def test_view_refuses_a_config_whose_fields_have_the_wrong_type(capsys, finished, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished[1], out)
    data = json.loads((out / "config.json").read_text()) | {"judging": 5}
    (out / "config.json").write_text(json.dumps(data))
    code, err = run(capsys, "view", str(out), "--out", str(tmp_path / "v.html"))
    assert code == 2
    one_line(err, "config.json", "judging")


# --- options checked before any work --------------------------------------------------------------
@pytest.mark.parametrize(
    "args,needle",
    [
        (["--bootstrap-seed", "-1"], "--bootstrap-seed"),
        (["--bootstrap-seed", "-99999999999"], "--bootstrap-seed"),
        (["--resamples", "1000000000"], "--resamples"),
        (["--resamples", "20001"], "--resamples"),
        (["--resamples", "1e9"], "--resamples"),
        (["--resamples", "-5"], "--resamples"),
        (["--fail-under", "accuracy:nosuch=0.5"], "no setting or system 'nosuch'"),
        (["--fail-under", "accuracy=1.5"], "accuracy lies between 0 and 1"),
        (["--fail-under", "spearman=-1.01"], "spearman lies between -1 and 1"),
        (["--fail-under", "accuracy:=0.5"], "--fail-under"),
        (["--fail-under", "kappa=nan"], "not a number"),
    ],
)
def test_calibrate_options_are_checked_before_any_judging(capsys, tmp_path, args, needle):
    out = tmp_path / "cal"
    code, err = run(capsys, "calibrate", str(PAIRS), "--model", "offline", "--out", str(out), "--no-cache", *args)
    assert code == 2, err
    assert needle in err and "Traceback" not in err, err
    assert not out.exists()  # nothing judged, nothing written


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--fail-under", "accuracy:nosys=0.5"], "measures one accuracy"),
        (["--fail-under", "accuracy=1.5"], "accuracy lies between 0 and 1"),
        (["--fail-under", "accuracy=-0.1"], "accuracy lies between 0 and 1"),
        (["--fail-under", "kappa=-2"], "kappa lies between -1 and 1"),
        (["--fail-under", "kappa=inf"], "not a number"),
    ],
)
def test_evaluate_gates_are_checked_before_the_run(capsys, tmp_path, args, needle):
    out = tmp_path / "ev"
    code, err = run(
        capsys,
        "evaluate",
        str(items(tmp_path / "i.jsonl")),
        "--model",
        "offline",
        "--out",
        str(out),
        "--no-cache",
        *args,
    )
    assert code == 2
    one_line(err, needle)
    assert not out.exists()


def test_a_benchmark_gate_out_of_range_is_refused_before_the_run(capsys, tmp_path):
    out = tmp_path / "b"
    code, err = run(
        capsys,
        "bench",
        "longmemeval",
        "--data",
        str(FIX / "lme_tiny.json"),
        "--systems",
        "full_context",
        "--out",
        str(out),
        "--embedder",
        "hash",
        "--no-cache",
        "--fail-under",
        "accuracy=2",
    )
    assert code == 2
    one_line(err, "accuracy lies between 0 and 1")
    assert not out.exists()


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--perturbation", ""], "an empty name"),
        (["--perturbation", " , "], "an empty name"),
        (["--perturbation", "position,,verbosity"], "an empty name"),
        (["--judge-family", ""], "--judge-family"),
        (["--judge-family", "   "], "--judge-family"),
        (["--other-family", ""], "--other-family"),
        (["--score-threshold", "nan"], "finite"),
        (["--score-threshold", "-1"], "--score-threshold"),
    ],
)
def test_audit_options_are_checked_before_any_judging(capsys, tmp_path, args, needle):
    out = tmp_path / "audit"
    code, err = run(
        capsys, "audit", str(items(tmp_path / "i.jsonl")), "--model", "offline", "--out", str(out), "--no-cache", *args
    )
    assert code == 2
    one_line(err, needle)
    assert not out.exists()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_memory_ask_checks_the_batch_size(capsys, value):
    code, err = run(
        capsys,
        "memory",
        "ask",
        "--system",
        "full_context",
        "--data",
        str(FIX / "lme_tiny.json"),
        "--question-id",
        "x",
        "--model",
        "offline",
        "--embedder-batch-size",
        value,
    )
    assert code == 2
    one_line(err, "--embedder-batch-size")
