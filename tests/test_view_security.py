"""`chateval view` from outside: the served viewer answers only loopback names (DNS rebinding),
sends the headers that keep its pages out of frames and sniffing, and no page reads a file that
a link leads out of the run folder (report.md, a plot, a run file, a sub-run, a run folder)."""

from __future__ import annotations

import base64
import http.client
import shutil
import threading
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.view import build_index, build_view
from chateval.view.runlist import list_runs
from chateval.view.server import ViewServer, host_allowed

from .view_fixtures import evaluate_run

SECRET = "TOP-SECRET-OUTSIDE-THE-RUN-7f2c"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return evaluate_run(tmp_path_factory.mktemp("made"))


@pytest.fixture
def root(made, tmp_path) -> Path:
    """runs/ev (a real run) and, outside runs/, a private file and a private folder."""
    (tmp_path / "runs").mkdir()
    shutil.copytree(made, tmp_path / "runs" / "ev")
    (tmp_path / "private.txt").write_text(SECRET)
    return tmp_path / "runs"


def serve(root: Path):
    srv = ViewServer(root, 0, poll_ms=200)
    thread = srv.start()
    stop = threading.Timer(60, srv.shutdown)
    stop.start()
    return srv, thread, stop


def stop_serving(srv, thread, stop) -> None:
    stop.cancel()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def request(srv: ViewServer, path: str, host: str | None) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


@pytest.fixture
def served(root):
    running = serve(root)
    yield running[0]
    stop_serving(*running)


def test_only_loopback_host_names_are_answered(served):
    port = served.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}", "localhost"):
        code, _, page = request(served, "/", host)
        assert code == 200 and 'data-rel="ev"' in page, host
    # DNS rebinding: a page on attacker.test, its name now pointing at 127.0.0.1, asks for the runs.
    for host in (
        f"attacker.test:{port}",
        "attacker.test",
        f"localhost.attacker.test:{port}",
        f"127.0.0.1.nip.io:{port}",
        f"localhost:{port + 1}",
        f"127.0.0.2:{port}",
        f"[::2]:{port}",
        "[::1]x",
        "",
        None,
    ):
        for path in ("/", "/api/runs", "/run/ev", "/api/run/ev"):
            code, _, page = request(served, path, host)
            assert 400 <= code < 500 and "ev" not in page.replace("viewer", ""), (host, path, code)


def test_host_names_parsed():
    assert host_allowed("127.0.0.1:80", 80) and host_allowed("[::1]", 5) and host_allowed(" localhost:5 ", 5)
    assert not host_allowed("localhost:6", 5) and not host_allowed("evil:5", 5) and not host_allowed("[::1:5", 5)


def test_pages_carry_security_headers(served):
    port = served.server_address[1]
    for path in ("/", "/run/ev", "/api/runs", "/nothing"):
        _, headers, _ = request(served, path, f"127.0.0.1:{port}")
        assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY", path
        csp = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp and "connect-src 'self'" in csp


def link_report_and_plot(run: Path, target: Path) -> None:
    (run / "report.md").unlink(missing_ok=True)
    (run / "report.md").symlink_to(target)
    (run / "plot.png").symlink_to(target)


def test_a_linked_report_or_plot_is_refused_in_the_written_page(root):
    run = root / "ev"
    assert SECRET not in build_view([run]).read_text()
    (run / "report.md").unlink(missing_ok=True)
    (run / "report.md").symlink_to(root.parent / "private.txt")
    with pytest.raises(Exception) as err:
        build_view([run])
    assert "report.md" in str(err.value) and "outside the run folder" in str(err.value)
    assert main(["view", str(run)]) == 2
    (run / "report.md").unlink()
    (run / "plot.png").symlink_to(root.parent / "private.txt")
    (run / "view.html").unlink()
    assert main(["view", str(run)]) == 2
    assert not (run / "view.html").exists()
    (run / "plot.png").unlink()
    # A run file linked from elsewhere, and a sub-run folder that is a link out.
    (root.parent / "elsewhere").mkdir()
    shutil.copy(run / "summary.json", root.parent / "elsewhere" / "summary.json")
    (run / "setting").symlink_to(root.parent / "elsewhere", target_is_directory=True)
    assert main(["view", str(run)]) == 2
    (run / "setting").unlink()
    # A link that stays inside the run is its own file: shown.
    (run / "report.md").write_text("# own report\n")
    (run / "copy.png").symlink_to(run / "report.md")
    page = build_view([run]).read_text()
    assert "own report" in page and base64.b64encode(b"# own report\n").decode() in page


def test_served_pages_refuse_linked_files_and_folders(root):
    link_report_and_plot(root / "ev", root.parent / "private.txt")
    # A run folder outside the served folder, linked into it.
    outside = root.parent / "outside"
    shutil.copytree(root / "ev", outside / "theirs", symlinks=True)
    (outside / "theirs" / "report.md").unlink()
    (outside / "theirs" / "plot.png").unlink()
    (outside / "theirs" / "report.md").write_text(SECRET)
    (root / "linked").symlink_to(outside / "theirs", target_is_directory=True)
    srv, thread, stop = serve(root)
    try:
        host = f"127.0.0.1:{srv.server_address[1]}"
        code, _, page = request(srv, "/run/ev", host)
        assert code == 409 and SECRET not in page and "outside the run folder" in page
        assert base64.b64encode(SECRET.encode()).decode() not in page
        code, _, listing = request(srv, "/", host)
        assert code == 200 and "linked" not in listing and SECRET not in listing
        for path in ("/run/linked", "/api/run/linked", "/compare?run=ev&run=linked"):
            code, _, page = request(srv, path, host)
            assert code in (400, 404) and SECRET not in page, path
    finally:
        stop_serving(srv, thread, stop)
    assert [e.rel for e in list_runs(root)] == ["ev"] and list_runs(root)[0].status == "unreadable"
    out = build_index(root)
    assert SECRET not in out.read_text() and not (root / "linked" / "view.html").exists()
