"""`chateval view DIR` over a folder of runs (the run list) and `chateval view DIR --serve` (the
local server): real runs made by the commands with the offline model."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from chateval.cli import main
from chateval.view import build_index
from chateval.view.runlist import list_runs
from chateval.view.server import ViewServer

from .conftest import read_jsonl
from .view_fixtures import evaluate_run, faireval_run


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """An evaluate run two folders down, a benchmark run with sub-runs, and a copy of the evaluate
    run killed before its summary (incomplete)."""
    tmp = tmp_path_factory.mktemp("runs")
    top = tmp / "runs"
    (top / "2026" / "judges").mkdir(parents=True)
    ev = evaluate_run(tmp)
    shutil.move(str(ev), top / "2026" / "judges" / "ev")
    shutil.move(str(faireval_run(tmp)), top / "fe")
    killed = top / "killed"
    shutil.copytree(top / "2026" / "judges" / "ev", killed)
    (killed / "summary.json").unlink()
    lines = (killed / "samples.jsonl").read_text().splitlines(keepends=True)
    (killed / "samples.jsonl").write_text("".join(lines[:2]))
    return top


def rows(html: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r'<tr class="run" data-rel="([^"]+)".*?</tr>', html, re.S)}


def cells(row: str) -> list[str]:
    return [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


@pytest.mark.slow
def test_the_run_list_of_a_folder(root):
    out = build_index(root)
    assert out == root / "index.html"
    html = out.read_text()
    assert "://" not in html  # written to disk: self-contained, nothing fetched
    listed = rows(html)
    # Runs at any depth; a benchmark's settings (fe/single, fe/multi) are its sub-runs, not runs of the list.
    assert set(listed) == {"2026/judges/ev", "fe", "killed"}
    ev_summary = json.loads((root / "2026/judges/ev/summary.json").read_text())
    acc = ev_summary["agreement"]["accuracy"]["value"]
    kappa = ev_summary["agreement"]["kappa"]["value"]
    ev = cells(listed["2026/judges/ev"])
    # checkbox, run, kind, data, model, systems or panel, headline, cost, status, date
    assert ev[1:5] == ["2026/judges/ev", "evaluate", "ev.jsonl", "offline"]
    assert ev[5].startswith("panel: simultaneous_summarizer · 2 agents · 2 turns")
    assert ev[6] == f"accuracy {100 * acc:.1f}%, kappa {kappa:.3f}"  # as the terminal prints them
    assert ev[7] == "$0.0000" and ev[8].startswith("complete 4 records")
    fe_summary = json.loads((root / "fe/summary.json").read_text())
    fe = cells(listed["fe"])
    assert fe[2] == "bench faireval" and fe[5] == "panels: single, multi"
    want = ", ".join(f"{r['system']} {100 * r['value']:.1f}%" for r in fe_summary["headline"])
    assert fe[6] == f"accuracy: {want}"
    killed = cells(listed["killed"])
    assert killed[8].startswith("incomplete 2 records") and "no summary.json" in killed[8]
    # Every run's own page is written, and linked relative to the list.
    for rel in listed:
        assert (root / rel / "view.html").is_file() and f'href="{rel}/view.html"' in listed[rel]
    assert "{" not in "".join(ev + fe)  # no raw JSON in the list


def test_statuses_running_and_failed(root, tmp_path):
    run = tmp_path / "ev"
    shutil.copytree(root / "2026" / "judges" / "ev", run)
    (run / ".chateval.pid").write_text(str(os.getpid()))  # a live process holds the run
    assert [e.status for e in list_runs(tmp_path)] == ["running"]
    (run / ".chateval.pid").write_text("999999999")  # a killed holder's pid file is left behind: not running
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps(summary | {"n_failed": 1}))
    [entry] = list_runs(tmp_path)
    assert (entry.status, entry.detail) == ("failed", "1 of 4 failed")
    (run / "summary.json").write_text("{not json")  # one broken run is listed as such, not fatal
    [entry] = list_runs(tmp_path)
    assert entry.status == "unreadable" and "summary.json: not readable JSON" in entry.detail


def test_view_command_on_a_folder(root, tmp_path, capsys):
    assert main(["view", str(root), "--out", str(tmp_path / "list.html")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "list.html")
    assert 'data-rel="fe"' in (tmp_path / "list.html").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["view", str(empty)]) == 2
    assert "holds no run" in capsys.readouterr().err
    assert main(["view", str(root), "--port", "9"]) == 2
    assert "--port is for --serve" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "nope"), "--serve", "--port", "0"]) == 2
    assert "nope: no such folder" in capsys.readouterr().err
    assert main(["view", str(root), str(root / "fe"), "--serve", "--port", "0"]) == 2
    assert "--serve takes one folder" in capsys.readouterr().err


def test_a_run_page_shows_numbers_as_the_terminal_does(root):
    ev = root / "2026" / "judges" / "ev"
    summary = json.loads((ev / "summary.json").read_text())
    from chateval.view import build_view
    html = build_view([ev], out=ev / "page.html").read_text()
    header = html[:html.index("full config and summary")]
    verdicts = ", ".join(f"{k}: {v}" for k, v in summary["verdicts"].items())
    assert f"<td>verdicts</td><td>{verdicts}</td>" in header and "&#34;tie&#34;" not in header
    assert f"<td>accuracy</td><td>{100 * summary['agreement']['accuracy']['value']:.1f}%</td>" in header
    assert f"<td>kappa</td><td>{summary['agreement']['kappa']['value']:.3f}</td>" in header
    # Each sample's other recorded fields (usage, latency) as a table, not a JSON dict.
    extras = re.findall(r'<details class="extra">(.*?)</details>', html, re.S)
    assert len(extras) == 4 and all("<td>usage</td><td>calls: " in x and "&#34;" not in x for x in extras)
    fe = build_view([root / "fe"], out=root / "fe" / "page.html").read_text()
    table = fe[fe.index('<table class="hl headline">'):]
    table = table[:table.index("</table>")]
    assert "<th>accuracy</th>" in table and "<th>cost</th>" in table and "$0.0000" in table
    assert re.search(r"<td>\d+\.\d%</td>", table)


@pytest.fixture
def server(root):
    srv = ViewServer(root, 0, poll_ms=200)
    thread = srv.start()
    stop = threading.Timer(60, srv.shutdown)  # a test that hangs still stops the server
    stop.start()
    yield srv
    stop.cancel()
    srv.shutdown()
    srv.server_close()
    thread.join(5)
    assert not thread.is_alive()


def get(srv: ViewServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(srv.url.rstrip("/") + path, timeout=10) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


def test_the_server_lists_serves_and_follows_a_growing_run(server, root, tmp_path):
    assert server.server_address[0] == "127.0.0.1" and server.server_address[1] > 0
    code, html = get(server, "/")
    assert code == 200 and set(rows(html)) == {"2026/judges/ev", "fe", "killed"}
    assert 'href="run/2026/judges/ev"' in html and "connect-src 'self'" in html
    code, page = get(server, "/run/2026/judges/ev")
    assert code == 200 and "<h2>ev</h2>" in page and '"/api/run/2026/judges/ev"' in page
    assert 'href="/">all runs</a>' in page
    # A run that grows: the next poll says so (the page reloads on a changed signature).
    run = root / "killed"
    code, before = get(server, "/api/run/killed")
    before = json.loads(before)
    assert code == 200 and before["status"] == "incomplete" and before["n_records"] == 2
    extra = read_jsonl(root / "2026/judges/ev/samples.jsonl")[2]
    with open(run / "samples.jsonl", "a") as f:
        f.write(json.dumps(extra) + "\n")
    after = json.loads(get(server, "/api/run/killed")[1])
    assert after["n_records"] == 3 and after["signature"] != before["signature"]
    assert "3 records" in rows(get(server, "/")[1])["killed"]
    assert get(server, "/run/killed")[1].count('class="sample"') == 3  # the page is rendered from the files now
    listing = json.loads(get(server, "/api/runs")[1])
    assert {r["rel"]: r["n_records"] for r in listing["runs"]}["killed"] == 3
    # Side by side: the settings that differ.
    code, cmp = get(server, "/compare?run=2026/judges/ev&run=fe")
    assert code == 200 and '<table class="hl settings-diff">' in cmp
    # Only the runs listed are served: no path outside the folder.
    assert get(server, "/run/../../etc")[0] == 404 and get(server, "/run/fe/single")[0] == 404
    assert get(server, "/compare?run=fe")[0] == 400
    assert get(server, "/nothing")[0] == 404


def test_serve_refuses_a_taken_port(root, capsys):
    with ViewServer(root, 0) as busy:
        port = busy.server_address[1]
        assert main(["view", str(root), "--serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and len(err.strip().splitlines()) == 1


def test_serve_command_serves_until_interrupted(root):
    """The command itself: prints its address, serves a run folder given alone, stops on Ctrl-C with 0."""
    import signal
    import subprocess
    import sys

    run = root / "fe"
    proc = subprocess.Popen([sys.executable, "-m", "chateval.cli", "view", str(run), "--serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        served = urlsplit(url)
        assert (served.scheme, served.hostname, served.path) == ("http", "127.0.0.1", "/") and served.port, \
            (url, proc.stderr.read() if proc.poll() else "")
        with urllib.request.urlopen(url, timeout=10) as r:
            html = r.read().decode()
        assert set(rows(html)) == {"."}
        with urllib.request.urlopen(url + "run/", timeout=10) as r:  # how a browser asks for "run/."
            assert "<h2>fe</h2>" in r.read().decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_served_pages_scrub_configured_secrets(root, tmp_path, monkeypatch):
    """A served page quotes answers and errors as a written one does: configured secrets are masked."""
    import chateval.util.secrets as secrets

    monkeypatch.setattr(secrets, "_secrets", set())
    monkeypatch.setattr(secrets, "_forms", ())
    run = tmp_path / "ev"
    shutil.copytree(root / "2026" / "judges" / "ev", run)
    canary = "sk-canary-view-5f3a91"
    recs = read_jsonl(run / "samples.jsonl")
    recs[0]["error"] = f"401 from the endpoint: bad key {canary}"
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    secrets.register(canary)
    srv = ViewServer(tmp_path, 0)
    srv.start()
    try:
        code, page = get(srv, "/run/ev")
    finally:
        srv.shutdown()
        srv.server_close()
    assert code == 200 and "bad key ***" in page and canary not in page


def test_record_counts_follow_appends_and_rewrites(tmp_path):
    from chateval.view.runlist import _lines

    f = tmp_path / "samples.jsonl"
    f.write_text('{"id": 1}\n{"id": 2}\n')
    assert _lines(f) == 2
    with open(f, "a") as fh:
        fh.write('{"id": 3}\n')
    assert _lines(f) == 3
    tmp = tmp_path / "new"
    tmp.write_text('{"id": 1}\n' * 5)
    os.replace(tmp, f)  # how a --resume rewrites it (atomic_write): another file, maybe longer
    assert _lines(f) == 5
    f.write_text('{"id": 1}\n')  # cut in place
    assert _lines(f) == 1
