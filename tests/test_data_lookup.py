"""One data lookup (issue 39 items 3-5): `data list`, every benchmark's `--data` and `memory ask
--data` find the same files (a path, a catalog name, a catalog file's name), and a download that
cannot connect says what to do instead."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from chateval.bench.selection import resolve_data
from chateval.cli import main
from chateval.datasets.catalog import find
from chateval.datasets.common import DatasetError
from chateval.datasets.locate import find_data, search_folders

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def data_dir(monkeypatch, tmp_path):
    """CHATEVAL_DATA_DIR set to an empty folder; the working directory elsewhere."""
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(root))
    monkeypatch.delenv("CHATEVAL_DATA_MIRROR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "300")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return root


def put(root: Path, rel: str, fixture: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / fixture, path)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys, name: str) -> str:
    code, out, _ = run(capsys, "data", "list")
    assert code == 0
    return out.split(f"\n{name}  ", 1)[1].split()[0] if not out.startswith(f"{name}  ") else out.split()[1]


def test_with_the_data_dir_set_only_it_is_searched(data_dir):
    assert search_folders() == [data_dir]


@pytest.mark.parametrize(
    "given", ["longmemeval-oracle", "longmemeval_oracle.json", "longmemeval/longmemeval_oracle.json"]
)
def test_data_list_shows_present_iff_data_finds_it(data_dir, capsys, given):
    assert listed(capsys, "longmemeval-oracle") == "missing"
    with pytest.raises(DatasetError, match=r"get it with `chateval data get longmemeval-oracle`"):
        find_data(given, "LongMemEval")
    path = put(data_dir, "longmemeval/longmemeval_oracle.json", "lme_tiny.json")
    assert listed(capsys, "longmemeval-oracle") == "present"
    assert find_data(given, "LongMemEval") == path


def test_an_existing_path_is_taken_as_it_is(data_dir):
    put(data_dir, "longmemeval/longmemeval_oracle.json", "lme_tiny.json")
    local = Path("longmemeval_oracle.json")
    shutil.copy(FIXTURES / "lme_tiny.json", local)
    assert find_data("longmemeval_oracle.json", "LongMemEval") == local  # the file here wins


def test_the_first_release_name_points_at_the_catalog_name(data_dir):
    with pytest.raises(DatasetError) as e:
        find_data("longmemeval_s.json", "LongMemEval")
    msg = str(e.value)
    assert "longmemeval_s_cleaned.json: --data longmemeval-s" in msg and "chateval data get longmemeval-s" in msg
    assert str(data_dir) in msg and "\n" not in msg


def test_memory_ask_finds_a_catalog_name_in_the_data_folder(data_dir, capsys):
    code, _, err = run(
        capsys,
        "memory",
        "ask",
        "--system",
        "full_context",
        "--question-id",
        "t_job",
        "--data",
        "longmemeval-oracle",
        "--embedder",
        "hash",
    )
    assert code == 2 and "chateval data get longmemeval-oracle" in err and str(data_dir) in err
    put(data_dir, "longmemeval/longmemeval_oracle.json", "lme_tiny.json")
    code, out, err = run(
        capsys,
        "memory",
        "ask",
        "--system",
        "full_context",
        "--question-id",
        "t_job",
        "--data",
        "longmemeval-oracle",
        "--embedder",
        "hash",
    )
    assert code == 0, err
    assert "llm calls" in out


@pytest.mark.parametrize(
    ("bench", "rel", "fixture", "given", "extra"),
    [
        ("longmemeval", "longmemeval/longmemeval_oracle.json", "lme_tiny.json", "longmemeval-oracle", []),
        ("longmemeval", "longmemeval/longmemeval_oracle.json", "lme_tiny.json", "longmemeval_oracle.json", []),
        ("locomo", "locomo/locomo10.json", "locomo_tiny.json", "locomo", []),
        ("head2head", "locomo/locomo10.json", "locomo_tiny.json", "locomo10.json", []),
        ("teafarm", "locomo/locomo10.json", "locomo_tiny.json", "locomo", []),
    ],
)
def test_every_memory_benchmark_finds_its_data_by_name(data_dir, capsys, tmp_path, bench, rel, fixture, given, extra):
    out_dir = tmp_path / "run"
    systems = "full_context,retrieval" if bench == "head2head" else "full_context"
    argv = [
        "bench",
        bench,
        "--data",
        given,
        "--systems",
        systems,
        "--embedder",
        "hash",
        "--limit",
        "1",
        "--model",
        "offline",
        "--out",
        str(out_dir),
        *extra,
    ]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "not found" in err and f"chateval data get {find(given).name if find(given) else ''}" in err
    assert not out_dir.exists()  # refused before the run folder is made
    path = put(data_dir, rel, fixture)
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert json.loads((out_dir / "summary.json").read_text())["data"] == str(path)


def test_folder_benchmarks_take_a_catalog_name_as_its_folder(data_dir):
    put(data_dir, "faireval/faireval_gpt35_vs_vicuna13b.jsonl", "calibrate_pairwise.jsonl")
    files = ["faireval_gpt35_vs_vicuna13b.jsonl"]
    assert resolve_data("faireval", "faireval", files, "FairEval") == data_dir / "faireval"
    assert (
        resolve_data("faireval_gpt35_vs_vicuna13b.jsonl", "faireval", files, "FairEval")
        == data_dir / "faireval" / files[0]
    )
    with pytest.raises(DatasetError, match=r"chateval data get msc.*pass --data PATH"):
        resolve_data("msc", "msc", ["msc_session3_valid.jsonl"], "Multi-Session Chat")


def test_a_download_that_cannot_connect_says_what_to_do(data_dir, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = run(capsys, "data", "get", "locomo", "--mirror", f"http://127.0.0.1:{port}", "--timeout", "5")
    err = " ".join(err.split())  # rich may wrap the line
    assert code == 1
    assert "cannot connect" in err and "--mirror" in err
    ds = find("locomo")
    assert ds is not None and ds.files[0].url in err  # the official file, to fetch by hand
    assert f"save it as {data_dir / 'locomo' / 'locomo10.json'}" in err
    assert not (data_dir / "locomo" / "locomo10.json").exists()


def test_without_the_data_dir_shared_data_is_found_and_listed(monkeypatch, tmp_path, capsys):
    """CHATEVAL_DATA_DIR unset: the default data folder, then ../shared/data; `data list` names
    where a file outside the data folder was found, and `--data NAME` reads that very file."""
    monkeypatch.delenv("CHATEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "300")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    put(tmp_path / "shared" / "data", "theanine/sample_dialogue.json", "locomo_tiny.json")
    found = find_data("theanine-sample", "TeaFarm")
    assert found.parent.parent.name == "data" and found.parent.parent.parent.name == "shared"
    code, out, _ = run(capsys, "data", "list")
    block = out.split("\ntheanine-sample  ", 1)[1]
    assert code == 0 and block.startswith("present")
    lines = block.split("\n")
    own = lines[: next(i for i, line in enumerate(lines[1:], 1) if not line.startswith(" "))]
    assert any(line.split() == ["found", str(found)] for line in own), own


def test_a_name_never_reaches_outside_the_data_folder(data_dir, tmp_path, monkeypatch):
    (tmp_path / "outside.json").write_text("[]")  # ../outside.json from the data folder
    (tmp_path / "x" / "y").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "x" / "y")  # where ../outside.json is not
    with pytest.raises(DatasetError, match="not found"):
        find_data("../outside.json", "LongMemEval")
