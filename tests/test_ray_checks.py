"""--executor ray's options are checked before Ray starts (a local instance takes many seconds
to start): these tests fail if ray.init is reached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'chateval[ray]')")

from chateval.cli import main  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def no_ray_start(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("ray.init was called")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--ray-workers", str((os.cpu_count() or 1) + 1)], f"a local Ray instance here has {os.cpu_count()} CPU(s)"),
        (["--ray-address", "http://head"], "--ray-address 'http://head': expected auto, local, HOST:PORT"),
        (["--ray-cache-dir", "FILE"], "not a directory"),
    ],
)
def test_ray_options_refused_before_ray_starts(tmp_path, capsys, no_ray_start, extra, needle):
    (tmp_path / "FILE").write_text("x")
    extra = [str(tmp_path / "FILE") if a == "FILE" else a for a in extra]
    out = tmp_path / "o"
    argv = ["bench", "longmemeval", "--systems", "retrieval", "--executor", "ray", *extra]
    code = main([*argv, "--data", str(FIXTURES / "lme_tiny.json"), "--out", str(out), "--embedder", "hash"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and needle in err and len(err.splitlines()) == 1 and not out.exists()


def test_a_cluster_address_is_not_checked_against_this_machine():
    from chateval.bench.executor import Execution, check

    many = (os.cpu_count() or 1) + 8
    check(Execution("ray", "ray://head:10001", many, None), local=False)  # the cluster's CPUs are checked after joining
    check(Execution("ray", "10.0.0.5:6379", 1, None), local=True)
