"""A dead HTTP agent stops the run before any unit (as a dead model endpoint does), and
--dry-run estimates the other systems when `http` is among them."""

from __future__ import annotations

import socket

import pytest

from chateval.cli import main
from chateval.memory.systems.http_agent import HttpSettings
from chateval.memory.systems.http_reach import check_reachable
from chateval.util.errors import EndpointUnreachable

from .conftest import FIXTURES

LME = FIXTURES / "lme_tiny.json"


def refused_port() -> int:
    """A loopback port nothing listens on (bound and released: refused until someone takes it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_check_reachable_accepts_a_listener_and_refuses_a_dead_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_reachable(HttpSettings(url=f"http://127.0.0.1:{server.getsockname()[1]}"))  # no error
    with pytest.raises(EndpointUnreachable, match="connection refused"):
        check_reachable(HttpSettings(url=f"http://127.0.0.1:{refused_port()}"))


def test_a_dead_agent_stops_the_run_before_any_unit(tmp_path, capsys):
    url = f"http://agent-user:s3cret-pw@127.0.0.1:{refused_port()}/v1?token=tok-xyz"
    out = tmp_path / "run"
    code = main(
        [
            "bench",
            "longmemeval",
            "--data",
            str(LME),
            "--systems",
            "http,full_context",
            "--set",
            f"http.url={url}",
            "--answer-model",
            "offline",
            "--no-cache",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "http agent http://***@127.0.0.1:" in err and "cannot be reached (connection refused)" in err
    assert "s3cret-pw" not in err and "tok-xyz" not in err and "agent-user" not in err
    assert not out.exists()  # stopped before the run directory was made


def test_dry_run_estimates_the_rest_and_names_http(tmp_path, capsys):
    url = f"http://127.0.0.1:{refused_port()}"  # never called: the dry run leaves the agent out
    code = main(
        [
            "bench",
            "longmemeval",
            "--data",
            str(LME),
            "--systems",
            "http,full_context",
            "--set",
            f"http.url={url}",
            "--answer-model",
            "offline",
            "--out",
            str(tmp_path / "o"),
            "--dry-run",
        ]
    )
    text = capsys.readouterr()
    assert code == 0, text.err
    printed = text.out + text.err
    assert "not estimated: the 'http' system" in printed and "5 units" in printed
    assert not (tmp_path / "o").exists()
