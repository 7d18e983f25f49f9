"""`chateval data list` / `chateval data get`: the real download code against a file server on
127.0.0.1 (Range requests, truncation, checksum mismatch, server errors), the conversions, and
the benchmarks' default data folder."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from chateval.bench.selection import resolve_data
from chateval.cli import main
from chateval.datasets import catalog
from chateval.datasets.catalog import CATALOG, RemoteFile, data_root
from chateval.datasets.common import DatasetError
from chateval.datasets.download import ChecksumError, DownloadError, fetch, get
from chateval.testing.file_server import FileServer
from tests.conftest import SHARED, needs_shared, shared


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No inherited data folder or mirror; HOME's cache under tmp_path."""
    monkeypatch.delenv("CHATEVAL_DATA_DIR", raising=False)
    monkeypatch.delenv("CHATEVAL_DATA_MIRROR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "300")
    return tmp_path


@pytest.fixture
def server(tmp_path):
    (tmp_path / "srv").mkdir()
    with FileServer(tmp_path / "srv") as s:
        yield s


def serve(server: FileServer, rel: str, data: bytes) -> None:
    path = server.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


BLOB = bytes(range(256)) * 400  # 102,400 bytes: several chunks


# --- the downloader ------------------------------------------------------------------------
def test_fetch_downloads_and_verifies(server, tmp_path):
    serve(server, "a/blob.bin", BLOB)
    dest = tmp_path / "data" / "a" / "blob.bin"
    res = fetch(f"{server.base_url}/a/blob.bin", dest, sha256=sha(BLOB), size=len(BLOB))
    assert dest.read_bytes() == BLOB and res.sha256 == sha(BLOB) and res.pinned and res.action == "downloaded"
    assert not dest.with_name("blob.bin.part").exists()
    assert server.requests == [("/a/blob.bin", None)]


def test_truncated_download_is_kept_and_the_next_call_resumes_with_a_range_request(server, tmp_path):
    serve(server, "a/blob.bin", BLOB)
    server.truncate["a/blob.bin"] = 30_000
    dest = tmp_path / "data" / "blob.bin"
    part = dest.with_name("blob.bin.part")
    with pytest.raises(DownloadError, match="interrupted after 30,000 of 102,400 bytes.*resume"):
        fetch(f"{server.base_url}/a/blob.bin", dest, sha256=sha(BLOB), size=len(BLOB))
    assert part.read_bytes() == BLOB[:30_000] and not dest.exists()
    res = fetch(f"{server.base_url}/a/blob.bin", dest, sha256=sha(BLOB), size=len(BLOB))
    assert res.action == "resumed" and dest.read_bytes() == BLOB and not part.exists()
    assert server.requests[-1] == ("/a/blob.bin", "bytes=30000-")


def test_a_file_that_changed_at_the_source_is_not_spliced_onto_the_old_part(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    server.truncate["blob.bin"] = 30_000
    dest = tmp_path / "blob.bin"
    with pytest.raises(DownloadError):
        fetch(f"{server.base_url}/blob.bin", dest)
    assert dest.with_name("blob.bin.part.validator").is_file()
    new = bytes(reversed(BLOB))
    serve(server, "blob.bin", new)  # a new version at the source, same length
    fetch(f"{server.base_url}/blob.bin", dest)  # nothing pinned: only If-Range can tell
    assert dest.read_bytes() == new
    assert not dest.with_name("blob.bin.part.validator").exists()


def test_a_server_without_range_support_starts_over(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    dest = tmp_path / "blob.bin"
    dest.with_name("blob.bin.part").write_bytes(BLOB[:500])
    server.ignore_range = True
    fetch(f"{server.base_url}/blob.bin", dest, sha256=sha(BLOB))
    assert dest.read_bytes() == BLOB
    assert server.requests == [("/blob.bin", "bytes=500-")]


def test_a_complete_part_file_is_finished_without_downloading_again(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    dest = tmp_path / "blob.bin"
    dest.with_name("blob.bin.part").write_bytes(BLOB)
    fetch(f"{server.base_url}/blob.bin", dest, sha256=sha(BLOB))  # size unknown: asks, gets 416
    assert dest.read_bytes() == BLOB and server.requests == [("/blob.bin", f"bytes={len(BLOB)}-")]


def test_a_part_file_longer_than_the_file_is_discarded(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    dest = tmp_path / "blob.bin"
    dest.with_name("blob.bin.part").write_bytes(BLOB + b"stale tail")
    fetch(f"{server.base_url}/blob.bin", dest)  # no size, no checksum: the server's 416 says how long it is
    assert dest.read_bytes() == BLOB
    assert server.requests == [("/blob.bin", f"bytes={len(BLOB) + 10}-"), ("/blob.bin", None)]


def test_redirects_are_followed(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    dest = tmp_path / "blob.bin"
    fetch(f"{server.base_url}/redirect/blob.bin", dest, sha256=sha(BLOB))
    assert dest.read_bytes() == BLOB


def test_checksum_mismatch_is_refused_and_the_download_removed(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    dest = tmp_path / "blob.bin"
    with pytest.raises(ChecksumError, match="does not match the catalog's"):
        fetch(f"{server.base_url}/blob.bin", dest, sha256="0" * 64, size=len(BLOB))
    assert not dest.exists() and not dest.with_name("blob.bin.part").exists()
    with pytest.raises(ChecksumError, match="102,400 bytes, more than the catalog's 1,000"):
        fetch(f"{server.base_url}/blob.bin", dest, size=1000)
    assert not dest.exists()


@pytest.mark.parametrize("code, words", [(500, "HTTP 500"), (404, "HTTP 404.*not found")])
def test_server_errors_are_one_clear_error(server, tmp_path, code, words):
    serve(server, "blob.bin", BLOB)
    server.status["blob.bin"] = code
    with pytest.raises(DownloadError, match=words):
        fetch(f"{server.base_url}/blob.bin", tmp_path / "blob.bin")
    assert not (tmp_path / "blob.bin").exists()


class _Interrupt:
    """A reporter standing in for Ctrl-C after the first chunk."""

    def start(self, label, total, done):
        pass

    def advance(self, n):
        raise KeyboardInterrupt

    def finish(self):
        pass


def test_ctrl_c_keeps_what_arrived_for_the_next_call(server, tmp_path):
    serve(server, "blob.bin", BLOB)
    dest = tmp_path / "blob.bin"
    with pytest.raises(KeyboardInterrupt):
        fetch(f"{server.base_url}/blob.bin", dest, sha256=sha(BLOB), reporter=_Interrupt())
    kept = dest.with_name("blob.bin.part").read_bytes()
    assert 0 < len(kept) < len(BLOB) and BLOB.startswith(kept)
    fetch(f"{server.base_url}/blob.bin", dest, sha256=sha(BLOB))
    assert dest.read_bytes() == BLOB and server.requests[-1] == ("/blob.bin", f"bytes={len(kept)}-")


def test_a_full_disk_is_one_clear_error(server, tmp_path, monkeypatch):
    import errno

    from chateval.datasets import transfer

    class Full(io.BytesIO):
        def write(self, b):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(transfer, "open", lambda path, mode: Full(), raising=False)
    serve(server, "blob.bin", BLOB)
    with pytest.raises(DownloadError, match=r"cannot write .*blob.bin.part: No space left on device; make room"):
        fetch(f"{server.base_url}/blob.bin", tmp_path / "blob.bin")


def test_an_unreachable_server_is_one_clear_error(tmp_path):
    with FileServer(tmp_path) as s:
        url = s.base_url
    with pytest.raises(DownloadError, match="cannot connect"):
        fetch(url + "/x.bin", tmp_path / "x.bin", timeout=5)


# --- chateval data get ----------------------------------------------------------------------
ORACLE = catalog.find("longmemeval-oracle")
THEANINE = catalog.find("theanine-sample")


def test_get_through_the_cli_resumes_and_prints_the_unpinned_checksum(env, server, capsys):
    """longmemeval-oracle has no pinned sha256: accepted, and its computed sha256 is printed."""
    assert ORACLE is not None and ORACLE.files[0].sha256 is None
    data = json.dumps([{"question_id": "q1"}]).encode() * 2000
    serve(server, "longmemeval/longmemeval_oracle.json", data)
    server.truncate["longmemeval/longmemeval_oracle.json"] = 5000
    to = env / "data"
    code, out, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(to), "--mirror", server.base_url)
    assert code == 1, err
    assert "interrupted after 5,000" in err and "run the same command again to resume" in err
    assert "Traceback" not in err
    code, out, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(to), "--mirror", server.base_url)
    assert code == 0, err
    assert (to / "longmemeval" / "longmemeval_oracle.json").read_bytes() == data
    assert server.requests[-1] == ("/longmemeval/longmemeval_oracle.json", "bytes=5000-")
    assert f"sha256 {sha(data)}; not pinned in the catalog" in " ".join(err.split())
    assert "longmemeval-oracle: ready:" in out


def test_get_refuses_a_file_that_differs_from_the_pinned_checksum(env, server, capsys):
    assert THEANINE is not None and THEANINE.files[0].size == 10095
    serve(server, "theanine/sample_dialogue.json", b"x" * 10095)  # the right size, the wrong bytes
    to = env / "data"
    code, _, err = run(capsys, "data", "get", "theanine-sample", "--to", str(to), "--mirror", server.base_url)
    assert code == 3
    lines = [ln for ln in err.strip().splitlines() if ln.startswith(("error:", "Traceback"))]
    assert len(lines) == 1 and "does not match the catalog's 2a8a953b" in lines[0] and "removed" in err
    assert not list((to / "theanine").iterdir())  # neither the file nor its .part


@pytest.mark.parametrize("code, words", [(500, "HTTP 500"), (404, "HTTP 404")])
def test_get_reports_server_errors_in_one_line(env, server, capsys, code, words):
    server.status["theanine/sample_dialogue.json"] = code
    rc, _, err = run(capsys, "data", "get", "theanine-sample", "--to", str(env / "d"), "--mirror", server.base_url)
    assert rc == 1 and words in err and "Traceback" not in err


def test_get_uses_the_mirror_from_the_environment_and_the_default_folder(env, server, capsys, monkeypatch):
    data = b"[]" * 10
    serve(server, "longmemeval/longmemeval_oracle.json", data)
    monkeypatch.setenv("CHATEVAL_DATA_MIRROR", server.base_url + "/")
    code, _out, err = run(capsys, "data", "get", "longmemeval-oracle")
    assert code == 0, err
    # No --to: the data folder the benchmarks read (XDG cache here, since CHATEVAL_DATA_DIR is unset).
    assert data_root() == env / "cache" / "chateval" / "data"
    assert (data_root() / "longmemeval" / "longmemeval_oracle.json").read_bytes() == data


def test_get_does_not_overwrite_a_different_file_without_force(env, server, capsys, tmp_path):
    good = shared("theanine", "sample_dialogue.json").read_bytes()
    serve(server, "theanine/sample_dialogue.json", good)
    dest = tmp_path / "d" / "theanine" / "sample_dialogue.json"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"my own edits")
    argv = ["data", "get", "theanine-sample", "--to", str(tmp_path / "d"), "--mirror", server.base_url]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "--force" in err and dest.read_bytes() == b"my own edits"
    assert server.requests == []  # checked before anything was downloaded
    code, _, err = run(capsys, *argv, "--force")
    assert code == 0 and dest.read_bytes() == good and "sha256 verified" in err
    code, _, err = run(capsys, *argv)  # already there and verified: nothing downloaded
    assert code == 0 and "present" in err and len(server.requests) == 1


def test_get_interrupted_exits_130_and_says_how_to_resume(env, server, capsys, monkeypatch):
    serve(server, "longmemeval/longmemeval_oracle.json", BLOB)
    monkeypatch.setattr("chateval.cli.data._Bar.advance", lambda self, n: _Interrupt().advance(n))
    to = env / "d"
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(to), "--mirror", server.base_url)
    assert code == 130 and "run the same command again to resume" in err and "--resume" not in err
    assert (to / "longmemeval" / "longmemeval_oracle.json.part").is_file()


def test_get_rejects_an_unknown_name(env, capsys):
    code, _, err = run(capsys, "data", "get", "longmemeval", "--to", str(env / "d"))
    assert code == 2 and "unknown data set 'longmemeval'" in err and "longmemeval-oracle" in err


# --- conversions ----------------------------------------------------------------------------
@needs_shared("faireval", "raw")
def test_faireval_get_rebuilds_the_file_the_loader_reads_byte_for_byte(env, server, capsys):
    """The real FairEval files (served from the shared copy) pass the pinned checksums, and the
    merge reproduces faireval_gpt35_vs_vicuna13b.jsonl exactly (its sha256 is pinned too)."""
    src = shared("faireval")
    ds = catalog.find("faireval")
    assert ds is not None
    for f in ds.files:
        serve(server, f.path, (src.parent / f.path).read_bytes())
    to = env / "d"
    code, _out, err = run(capsys, "data", "get", "faireval", "--to", str(to), "--mirror", server.base_url)
    assert code == 0, err
    built = to / "faireval" / "faireval_gpt35_vs_vicuna13b.jsonl"
    assert built.read_bytes() == (src / "faireval_gpt35_vs_vicuna13b.jsonl").read_bytes()
    from chateval.datasets.faireval import load_faireval

    assert len(load_faireval(to / "faireval")) == 80
    # Again: everything is there and verified, so nothing is downloaded or rewritten.
    before = built.stat().st_mtime_ns
    n = len(server.requests)
    code, _, err = run(capsys, "data", "get", "faireval", "--to", str(to), "--mirror", server.base_url)
    assert code == 0 and len(server.requests) == n and built.stat().st_mtime_ns == before


def _faireval_raw(root: Path) -> None:
    raw = root / "faireval" / "raw"
    (raw / "answer").mkdir(parents=True)
    (raw / "review").mkdir()
    qs = [{"question_id": i, "text": f"question {i}?", "category": "generic"} for i in (1, 2)]
    (raw / "question.jsonl").write_text("\n".join(json.dumps(q) for q in qs))
    for f, who in (("answer_gpt35.jsonl", "gpt"), ("answer_vicuna-13b.jsonl", "vicuna")):
        (raw / "answer" / f).write_text("".join(json.dumps({"question_id": i, "text": f"{who} answer {i}"}) + "\n"
                                                for i in (2, 1)))
    (raw / "review" / "review_gpt35_vicuna-13b_human.txt").write_text("TIE\nVICUNA13B\n")


def test_faireval_merge_lines_up_answers_and_labels_by_question(tmp_path):
    from chateval.datasets.convert import faireval_merge
    from chateval.datasets.faireval import load_faireval

    _faireval_raw(tmp_path)
    faireval_merge(tmp_path)
    rows = load_faireval(tmp_path / "faireval")
    assert [(r.question_id, r.answer_1, r.answer_2, r.human) for r in rows] == [
        (1, "gpt answer 1", "vicuna answer 1", "tie"), (2, "gpt answer 2", "vicuna answer 2", "2")]
    (tmp_path / "faireval" / "raw" / "review" / "review_gpt35_vicuna-13b_human.txt").write_text("TIE\nMAYBE\n")
    with pytest.raises(DatasetError, match=r"review_gpt35_vicuna-13b_human.txt:2: unknown label 'MAYBE'"):
        faireval_merge(tmp_path)


def _msc_tarball(lines: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (("msc/msc_dialogue/session_3/valid.txt", lines),
                           ("msc/msc_dialogue/session_2/train.txt", b"{}\n"),
                           ("msc/msc_personasummary/session_1/valid.txt", b"not dialogue\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _msc_episode(eid: str) -> dict:
    said = [{"text": "I just got back from hiking."}, {"text": "Where did you go?"}]
    return {"previous_dialogs": [{"dialog": said, "personas": [[], []], "time_num": 3, "time_unit": "days"}],
            "dialog": [{"text": "How was the trail?", "id": "Speaker 1"}, {"text": "Muddy!", "id": "Speaker 2"}],
            "metadata": {"initial_data_id": eid, "session_id": 2}}


def test_msc_tarball_is_unpacked_to_the_jsonl_the_loader_reads(env, server):
    lines = "".join(json.dumps(_msc_episode(f"e{i}")) + "\n" for i in range(3)).encode()
    tarball = _msc_tarball(lines)
    serve(server, "msc/msc_v0.1.tar.gz", tarball)
    real = catalog.find("msc")
    assert real is not None
    ds = real.model_copy(update={"files": (RemoteFile(path="msc/msc_v0.1.tar.gz", url="unused", sha256=sha(tarball)),),
                                 "built": ()})
    res = get(ds, env / "d", mirror=server.base_url)
    assert sorted(p.name for p in res.built) == ["msc_session2_train.jsonl", "msc_session3_valid.jsonl"]
    assert (env / "d" / "msc" / "msc_session3_valid.jsonl").read_bytes() == lines
    assert set(res.unpinned_built) == {"msc/msc_session2_train.jsonl", "msc/msc_session3_valid.jsonl"}
    from chateval.datasets.msc_release import load_msc_release

    assert len(load_msc_release(env / "d" / "msc" / "msc_session3_valid.jsonl")) == 3


def test_a_built_file_that_differs_from_its_pinned_checksum_is_refused(env, server):
    tarball = _msc_tarball(b'{"dialog": []}\n')
    serve(server, "msc/msc_v0.1.tar.gz", tarball)
    real = catalog.find("msc")
    assert real is not None
    ds = real.model_copy(update={"files": (RemoteFile(path="msc/msc_v0.1.tar.gz", url="unused", sha256=sha(tarball)),)})
    with pytest.raises(ChecksumError, match="msc_session3_valid.jsonl: sha256 .* does not match"):
        get(ds, env / "d", mirror=server.base_url)
    assert not (env / "d" / "msc" / "msc_session3_valid.jsonl").exists()


# --- the catalog and the listing -------------------------------------------------------------
def test_catalog_entries_are_consistent():
    assert len({d.name for d in CATALOG}) == len(CATALOG)
    for d in CATALOG:
        for f in d.files:
            assert f.sha256 is None or (len(f.sha256) == 64 and int(f.sha256, 16) >= 0)
            assert urlsplit(f.url).scheme in ("https", "http") and urlsplit(f.url).netloc  # never fetched here
            assert not f.path.startswith("/") and f.path.split("/")[0] == d.reads[0].split("/")[0]
        assert d.conversion is None or d.built, d.name
        for r in d.reads:  # what the loaders read is downloaded or built
            assert r in {f.path for f in d.files} | {b.path for b in d.built}, (d.name, r)


@needs_shared("theanine", "sample_dialogue.json")
def test_pinned_checksums_match_the_shared_copies():
    """Where the shared folder holds a byte-for-byte copy, its sha256 is the pinned one."""
    checked = 0
    for d in CATALOG:
        for f in (*d.files, *d.built):
            path = SHARED / f.path
            if f.sha256 and path.is_file():
                assert sha(path.read_bytes()) == f.sha256, f.path
                checked += 1
    assert checked >= 8


def test_list_names_every_data_set_with_its_licence_and_whether_it_is_here(env, capsys, tmp_path):
    (tmp_path / "d" / "locomo").mkdir(parents=True)
    (tmp_path / "d" / "locomo" / "locomo10.json").write_text("[]")
    code, out, _ = run(capsys, "data", "list", "--to", str(tmp_path / "d"))
    assert code == 0
    for d in CATALOG:
        assert d.name in out and d.licence in " ".join(out.split())
    block = out.split("locomo  ", 1)[1].split("\n", 1)[0]
    assert block.startswith("present")
    assert out.split("longmemeval-oracle  ", 1)[1].startswith("missing")
    assert f"data folder: {tmp_path / 'd'}" in out


# --- benchmark defaults ---------------------------------------------------------------------
def test_benchmark_defaults_look_in_the_data_folder_first(env, monkeypatch, tmp_path):
    """With CHATEVAL_DATA_DIR unset the default data folder is ~/.cache/chateval/data (XDG), where
    `data get` puts files; a folder without the file is passed over."""
    monkeypatch.chdir(tmp_path)
    _faireval_raw(data_root())
    from chateval.datasets.convert import faireval_merge

    faireval_merge(data_root())
    assert resolve_data(None, "faireval", ["faireval_gpt35_vs_vicuna13b.jsonl"], "FairEval") == \
        (data_root() / "faireval").resolve()


@pytest.mark.slow
def test_a_missing_default_names_the_data_get_command(env, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CHATEVAL_DATA_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty" / "faireval").mkdir(parents=True)  # there, but without the file
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("chateval.bench.selection.default_data_candidates",
                        lambda folder: [tmp_path / "empty" / folder])
    with pytest.raises(DatasetError, match=r"get it with `chateval data get faireval`"):
        resolve_data(None, "faireval", ["faireval_gpt35_vs_vicuna13b.jsonl"], "FairEval")
    code, _, err = run(capsys, "bench", "faireval", "--out", str(tmp_path / "run"), "--model", "offline")
    assert code == 2 and "chateval data get faireval" in err and not (tmp_path / "run").exists()


def test_a_missing_data_file_names_the_data_get_command(env, tmp_path, capsys):
    code, _, err = run(capsys, "memory", "ask", "--system", "full_context", "--question-id", "q",
                       "--data", str(tmp_path / "longmemeval_oracle.json"))
    assert code == 2 and "get it with `chateval data get longmemeval-oracle`" in err
