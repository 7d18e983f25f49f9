"""`chateval data get` tried from outside (issue 35): a mirror's credentials are used as auth and
never printed, paths are joined before a mirror's query, a download stops at the catalog's size
(or a cap) and at a deadline, two processes on one folder cannot splice a file, and hostile
options and folders are one-line errors. Real downloads from the file server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from chateval.cli import main
from chateval.datasets import catalog
from chateval.datasets.download import LOCK
from chateval.testing.file_server import FileServer

ORACLE = "longmemeval/longmemeval_oracle.json"  # no size, no sha256 in the catalog
THEANINE = "theanine/sample_dialogue.json"  # size 10,095 and sha256 pinned
DATA = json.dumps([{"question_id": f"q{i}", "question": "what?"} for i in range(300)]).encode()
PASSWORD, TOKEN, SIG = "pw-Xq81zz", "tok-77aa9e2c", "sig-Zk55f0d1"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def env(monkeypatch, tmp_path):
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
    return code, out, " ".join(err.split())  # rich wraps long lines


def one_error(err: str) -> None:
    assert "Traceback" not in err and err.count("error:") == 1, err


# --- 4: credentials ------------------------------------------------------------------------------
def with_credentials(server: FileServer) -> str:
    """The fake server's loopback address with a user and password in it."""
    return server.base_url.replace("http://127.0.0.1", f"http://alice:{PASSWORD}@127.0.0.1", 1)


def secret_mirror(server: FileServer, prefix: str = "base") -> str:
    return f"{with_credentials(server)}/{prefix}?token={TOKEN}&sig={SIG}"


def test_mirror_credentials_authenticate_and_the_path_goes_before_the_query(env, server, capsys):
    server.auth = ("alice", PASSWORD)
    serve(server, f"base/{ORACLE}", DATA)
    code, out, err = run(
        capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"), "--mirror", secret_mirror(server)
    )
    assert code == 0, err
    assert (env / "d" / ORACLE).read_bytes() == DATA
    assert server.requests[-1][0] == f"/base/{ORACLE}?token={TOKEN}&sig={SIG}"
    for secret in (PASSWORD, TOKEN, SIG):
        assert secret not in out + err


@pytest.mark.parametrize("failure", ["status", "wrong-password", "truncated", "checksum", "from-env"])
def test_no_error_line_shows_the_mirrors_credentials(env, server, capsys, monkeypatch, failure):
    server.auth = ("alice", "another-password" if failure == "wrong-password" else PASSWORD)
    name, rel = ("theanine-sample", THEANINE) if failure == "checksum" else ("longmemeval-oracle", ORACLE)
    serve(server, f"base/{rel}", b"x" * 10095 if failure == "checksum" else DATA)
    if failure == "status":
        server.status[f"base/{rel}"] = 500
    if failure == "truncated":
        server.truncate[f"base/{rel}"] = 100
    if failure == "from-env":  # $CHATEVAL_DATA_MIRROR, and an error the server sends
        server.status[f"base/{rel}"] = 403
        monkeypatch.setenv("CHATEVAL_DATA_MIRROR", secret_mirror(server))
        code, out, err = run(capsys, "data", "get", name, "--to", str(env / "d"))
    else:
        code, out, err = run(capsys, "data", "get", name, "--to", str(env / "d"), "--mirror", secret_mirror(server))
    assert code in (1, 3), err
    one_error(err)
    assert "/base/" in err  # the URL is named ...
    for secret in (PASSWORD, TOKEN, SIG, "alice"):  # ... without what authenticates it
        assert secret not in out + err, err
    if failure == "wrong-password":
        assert "HTTP 401" in err and "credentials" in err


def test_a_redirect_on_the_same_server_keeps_the_credentials(env, server, capsys):
    server.auth = ("alice", PASSWORD)
    serve(server, ORACLE, DATA)
    code, _, err = run(
        capsys,
        "data",
        "get",
        "longmemeval-oracle",
        "--to",
        str(env / "d"),
        "--mirror",
        f"{with_credentials(server)}/redirect",
    )
    assert code == 0, err
    assert [p for p, _ in server.requests] == [f"/redirect/{ORACLE}", f"/{ORACLE}"]
    assert all(h.get("Authorization", "").startswith("Basic ") for h in server.headers)


def test_a_redirect_to_another_host_does_not_get_the_credentials(env, server, capsys, tmp_path):
    (tmp_path / "other").mkdir()
    with FileServer(tmp_path / "other") as other:
        serve(other, ORACLE, DATA)
        server.auth = ("alice", PASSWORD)
        server.redirect_base = other.base_url.replace("127.0.0.1", "localhost")  # another host name
        code, _, err = run(
            capsys,
            "data",
            "get",
            "longmemeval-oracle",
            "--to",
            str(env / "d"),
            "--mirror",
            f"{with_credentials(server)}/redirect",
        )
    assert code == 0, err
    assert (env / "d" / ORACLE).read_bytes() == DATA
    assert server.headers[0].get("Authorization", "").startswith("Basic ")
    assert other.requests == [(f"/{ORACLE}", None)] and "Authorization" not in other.headers[0]


# --- 9: size and time limits ---------------------------------------------------------------------
@pytest.mark.parametrize("announce", [True, False])
def test_a_file_larger_than_the_catalogs_size_is_stopped_at_that_size(env, server, capsys, announce):
    big = b"y" * 2_000_000
    serve(server, THEANINE, big)
    if not announce:
        server.no_length.add(THEANINE)
    part = env / "d" / (THEANINE + ".part")
    code, _, err = run(capsys, "data", "get", "theanine-sample", "--to", str(env / "d"), "--mirror", server.base_url)
    assert code == 3, err
    one_error(err)
    assert "catalog's 10,095" in err and not part.exists() and not (env / "d" / THEANINE).exists()


def test_a_file_of_unknown_size_stops_at_the_cap(env, server, capsys):
    serve(server, ORACLE, b"z" * 3_000_000)
    server.no_length.add(ORACLE)
    code, _, err = run(
        capsys,
        "data",
        "get",
        "longmemeval-oracle",
        "--to",
        str(env / "d"),
        "--mirror",
        server.base_url,
        "--max-size",
        "0.00002",
    )  # 20,000 bytes
    assert code == 1, err
    one_error(err)
    assert "20,000-byte cap" in err and "--max-size" in err
    assert (env / "d" / (ORACLE + ".part")).stat().st_size == 20_000
    assert not (env / "d" / ORACLE).exists()


def test_an_announced_length_over_the_cap_is_refused_before_downloading(env, server, capsys):
    serve(server, ORACLE, b"z" * 3_000_000)
    code, _, err = run(
        capsys,
        "data",
        "get",
        "longmemeval-oracle",
        "--to",
        str(env / "d"),
        "--mirror",
        server.base_url,
        "--max-size",
        "0.001",
    )
    assert code == 1 and "announces 3,000,000 bytes" in err, err
    assert not (env / "d" / (ORACLE + ".part")).exists()


def test_a_trickling_server_is_stopped_at_the_deadline_and_the_next_run_resumes(env, server, capsys):
    serve(server, ORACLE, DATA)
    server.trickle[ORACLE] = 0.05  # 64 bytes every 50 ms: about 10 s for the file, each read well under --timeout
    started = time.monotonic()
    code, _, err = run(
        capsys,
        "data",
        "get",
        "longmemeval-oracle",
        "--to",
        str(env / "d"),
        "--mirror",
        server.base_url,
        "--deadline",
        "1",
    )
    assert time.monotonic() - started < 5
    assert code == 1 and "deadline" in err, err
    one_error(err)
    part = env / "d" / (ORACLE + ".part")
    assert 0 < part.stat().st_size < len(DATA)
    server.trickle.clear()
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"), "--mirror", server.base_url)
    assert code == 0, err
    assert (
        (env / "d" / ORACLE).read_bytes() == DATA and server.requests[-1][1] == f"bytes={part.stat().st_size}-"
        if part.exists()
        else (env / "d" / ORACLE).read_bytes() == DATA
    )
    assert server.requests[-1][1] is not None  # resumed with a Range request


# --- 10: one writer; no checksum of an incomplete file -------------------------------------------
def test_a_second_data_get_on_the_same_folder_is_refused_while_the_first_runs(env, server, tmp_path):
    serve(server, ORACLE, DATA)
    server.trickle[ORACLE] = 0.02  # the first one takes a few seconds
    to = tmp_path / "d"
    cmd = [
        sys.executable,
        "-m",
        "chateval.cli",
        "data",
        "get",
        "longmemeval-oracle",
        "--to",
        str(to),
        "--mirror",
        server.base_url,
    ]
    env_vars = dict(os.environ, COLUMNS="300")
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_vars)
    try:
        deadline = time.monotonic() + 30
        while not (to / (ORACLE + ".part")).exists():
            assert time.monotonic() < deadline and first.poll() is None, "the first download never started"
            time.sleep(0.02)
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env_vars)
        out1, err1 = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    err2 = " ".join(second.stderr.split())
    assert second.returncode == 2 and "another `chateval data get` is writing this data folder" in err2, err2
    assert "Traceback" not in err2 and "sha256" not in err2
    assert first.returncode == 0, err1
    assert (to / ORACLE).read_bytes() == DATA and f"sha256 {sha(DATA)}" in " ".join(err1.split())


def test_a_held_lock_refuses_before_any_request(env, server, capsys, tmp_path):
    from filelock import FileLock

    serve(server, ORACLE, DATA)
    to = tmp_path / "d"
    to.mkdir()
    script = f"from filelock import FileLock; import time; lock = FileLock({str(to / LOCK)!r}); lock.acquire(); print('held', flush=True); time.sleep(30)"
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(to), "--mirror", server.base_url)
    finally:
        holder.kill()
        holder.communicate()
    assert code == 2 and "another `chateval data get`" in err and server.requests == []
    assert FileLock(str(to / LOCK)).acquire(timeout=5)  # released by the holder's death


def test_no_checksum_is_offered_for_pinning_when_completeness_is_unknown(env, server, capsys):
    serve(server, ORACLE, DATA)
    server.no_length.add(ORACLE)  # nothing says how long the file is: a cut connection looks the same
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"), "--mirror", server.base_url)
    assert code == 0, err
    assert sha(DATA) not in err and "sha256 not shown" in err


# --- 13: hostile options and folders --------------------------------------------------------------
@pytest.mark.parametrize(
    "mirror",
    [
        "not a url",
        "file:///etc",
        "ftp://example.org/data",
        "http://",
        "http://127.0.0.1:port/",
        "//127.0.0.1/x",
        "javascript:alert(1)",
        "http://[::1/x",
    ],
)
def test_a_mirror_that_is_not_an_http_url_is_refused(env, server, capsys, mirror):
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"), "--mirror", mirror)
    assert code == 2 and "--mirror" in err, err
    one_error(err)
    assert server.requests == [] and not (env / "d").exists()


def test_a_mirror_in_the_environment_is_checked_too(env, capsys, monkeypatch):
    monkeypatch.setenv("CHATEVAL_DATA_MIRROR", "file:///tmp")
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"))
    assert code == 2 and "$CHATEVAL_DATA_MIRROR" in err
    one_error(err)


@pytest.mark.parametrize("flag", ["--timeout", "--deadline", "--max-size"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_numeric_options_must_be_finite_and_positive(env, server, capsys, flag, value):
    code, _, err = run(
        capsys,
        "data",
        "get",
        "longmemeval-oracle",
        "--to",
        str(env / "d"),
        "--mirror",
        server.base_url,
        f"{flag}={value}",
    )
    assert code == 2 and flag in err, err
    one_error(err)
    assert server.requests == []


@pytest.mark.parametrize("where", ["family", "parent-of-to"])
def test_a_file_in_place_of_a_folder_is_one_error(env, server, capsys, where):
    serve(server, ORACLE, DATA)
    to = env / "d"
    to.mkdir()
    if where == "family":
        (to / "longmemeval").write_text("not a folder")
        target = to
    else:
        (to / "f").write_text("a file")
        target = to / "f" / "deeper"
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(target), "--mirror", server.base_url)
    assert code == 2, err
    one_error(err)
    assert server.requests == []


@pytest.mark.parametrize("validator", [b'"abc"\r\nX-Evil: 1', b"\xff\xfe\x00binary", b"x" * 5000, "dir"])
def test_a_hand_edited_validator_starts_the_download_over(env, server, capsys, validator):
    serve(server, ORACLE, DATA)
    part = env / "d" / (ORACLE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"garbage that is not a prefix")
    vfile = part.with_name(part.name + ".validator")
    if validator == "dir":
        vfile.mkdir()
    else:
        vfile.write_bytes(validator)
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"), "--mirror", server.base_url)
    assert "Traceback" not in err
    if validator == "dir":
        assert code == 2 and "in the way" in err, err
        one_error(err)
    else:
        assert code == 0, err
        assert (env / "d" / ORACLE).read_bytes() == DATA
        assert server.requests[-1][1] is None  # not spliced onto the old bytes
        assert all("X-Evil" not in h for h in server.headers)


def test_a_part_file_that_is_a_folder_is_one_error(env, server, capsys):
    serve(server, ORACLE, DATA)
    (env / "d" / (ORACLE + ".part")).mkdir(parents=True)
    code, _, err = run(capsys, "data", "get", "longmemeval-oracle", "--to", str(env / "d"), "--mirror", server.base_url)
    assert code == 2 and "in the way" in err, err
    one_error(err)


def test_catalog_sizes_fit_under_the_default_cap():
    from chateval.datasets.transfer import MAX_BYTES

    assert all(f.size is None or f.size < MAX_BYTES for d in catalog.CATALOG for f in d.files)
