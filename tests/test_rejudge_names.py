"""chateval rejudge's inputs and --errata by a data set's name (issue 39): NAME for a data set of one
file, NAME/FILE for one file of a data set with several, read from the data folder as --data is; a
path always wins. The data folder is a scratch one holding small fixtures of our own under the
catalog's file names (never the published files)."""

import hashlib
import json
import shutil

import pytest

from chateval import read_rejudge, rejudge
from chateval.cli import main
from chateval.datasets.common import DatasetError
from chateval.datasets.locate import find_data_file

from .conftest import FIXTURES

FX = FIXTURES / "rejudge"
FAST = ["--resamples", "200"]
# The catalog's files (locomo_judged/...) as small fixtures; fc_gpt-4o-mini_memos.json is left out:
# a file of a data set not (fully) downloaded.
FILES = {
    "fc_gpt-4o-mini_cot.json": FX / "evermemos_tiny.json",
    "ap_v1_specific_wrong.json": FX / "wrong_tiny.jsonl",
    "zep_locomo_grades.json": FX / "zep_tiny.json",
    "locomo_audit_errors.json": FX / "errata_tiny.json",
}


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def data(tmp_path, monkeypatch):
    """The data folder (CHATEVAL_DATA_DIR) with the fixtures; the working folder is another."""
    folder = tmp_path / "data" / "locomo_judged"
    folder.mkdir(parents=True)
    for name, src in FILES.items():
        shutil.copy(src, folder / name)
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return folder


def error_of(capsys, args) -> str:
    assert main(["rejudge", *args, "--out", "o"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.count("error:") == 1  # one line
    return err


def test_names_and_picked_files_are_read_from_the_data_folder_and_recorded(data):
    args = [
        "locomo-audit-fc/fc_gpt-4o-mini_cot:cot",  # a file picked by its name without .json
        "zep-locomo/zep_locomo_grades.json:zep",  # ... or with it
        "locomo-audit-wrong:ap:wrong",  # a data set of one file
        "--errata",
        "locomo-audit",
    ]
    assert main(["rejudge", *args, "--out", "o", *FAST]) == 0
    summ = read_rejudge("o")
    want = {"cot": "fc_gpt-4o-mini_cot.json", "zep": "zep_locomo_grades.json", "ap": "ap_v1_specific_wrong.json"}
    config = json.loads(open("o/config.json").read())["judging"]
    for label, name in want.items():
        path = data / name
        assert summ.sets[label].path == str(path) and summ.sets[label].sha256 == sha(path)
        assert config["sets"][label]["path"] == str(path) and config["sets"][label]["sha256"] == sha(path)
        card = summ.sets[label].protocol_card
        assert card["data"] == str(path) and card["data_sha256"] == sha(path)
    assert summ.sets["ap"].wrong and summ.sets["zep"].format == "zep" and summ.sets["cot"].format == "evermemos"
    errata = data / "locomo_audit_errors.json"
    assert config["errata"] == str(errata) and config["errata_sha256"] == sha(errata)
    assert summ.sets["cot"].errata.path == str(errata) and summ.sets["cot"].errata.wrong_gold == 2
    # The Python API resolves the same names.
    api = rejudge("locomo-audit-wrong:ap:wrong", out="o2", judges="recorded", resamples=200)
    assert api.sets["ap"].path == str(data / "ap_v1_specific_wrong.json")


def test_a_name_not_downloaded_says_which_data_get(data, capsys):
    err = error_of(capsys, ["locomo-audit-fc/fc_gpt-4o-mini_memos.json:memos"])
    assert "locomo-audit-fc/fc_gpt-4o-mini_memos.json: graded answers data not found" in err
    assert err.endswith("get it with `chateval data get locomo-audit-fc`")
    (data / "locomo_audit_errors.json").unlink()
    err = error_of(capsys, ["locomo-audit-wrong", "--errata", "locomo-audit"])
    assert "locomo-audit: errata data not found" in err and err.endswith("`chateval data get locomo-audit`")
    assert not (data.parent.parent / "work" / "o").exists()  # nothing written


def test_a_data_set_of_several_files_needs_a_pick(data, capsys):
    err = error_of(capsys, ["locomo-audit-fc:cot"])
    assert err.endswith(
        "locomo-audit-fc: data set locomo-audit-fc has 2 files; name one: "
        "locomo-audit-fc/fc_gpt-4o-mini_cot.json or locomo-audit-fc/fc_gpt-4o-mini_memos.json"
    )
    err = error_of(capsys, ["zep-locomo/grades:zep"])
    assert err.endswith(
        "zep-locomo/grades: data set zep-locomo has no file 'grades' (its files: "
        "zep-locomo/zep_locomo_grades.json or zep-locomo/zep_locomo_responses.json)"
    )


def test_a_mistyped_name_gets_did_you_mean(data, capsys):
    assert "did you mean 'locomo-audit'" in error_of(capsys, ["locomo-audt:x"])
    assert "did you mean 'locomo-audit-fc'" in error_of(capsys, ["locomo-audit-fx/cot"])
    assert "did you mean 'locomo-audit'" in error_of(capsys, ["locomo-audit-wrong", "--errata", "locomo-audt"])


def test_an_existing_path_wins_over_a_name(data):
    # A file in the working folder named like a data set (and one like a picked file) is read, not
    # the data folder's copy.
    shutil.copy(FX / "zep_tiny.json", "locomo-audit-wrong")
    (data.parent.parent / "work" / "locomo-audit-fc").mkdir()
    shutil.copy(FX / "wrong_tiny.jsonl", "locomo-audit-fc/fc_gpt-4o-mini_cot.json")
    assert find_data_file("locomo-audit-wrong", "x").resolve() == (data.parent.parent / "work" / "locomo-audit-wrong")
    summ = rejudge("locomo-audit-wrong:a", "locomo-audit-fc/fc_gpt-4o-mini_cot.json:b", out="o", resamples=200)
    assert summ.sets["a"].format == "zep" and summ.sets["a"].path == "locomo-audit-wrong"
    assert summ.sets["b"].format == "jsonl" and summ.sets["b"].path == "locomo-audit-fc/fc_gpt-4o-mini_cot.json"
    # A plain path that is no file anywhere: the --data error, no data set named.
    with pytest.raises(DatasetError, match=r"^nothere.json: graded answers data not found \(not a file here"):
        find_data_file("nothere.json", "graded answers")


def test_help_gives_the_syntax(capsys):
    with pytest.raises(SystemExit):
        main(["rejudge", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "NAME/FILE for one of its files" in text and "--errata locomo-audit" in text
    assert "an existing path always wins" in text
