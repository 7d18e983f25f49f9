"""A page that loads its rows in chunks (issue 38 item 5): the chunk files written beside a page,
and the local server's chunk endpoint (runs of the list only, loopback names only, versions)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import threading
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.view import build_view
from chateval.view.paging import chunk_script, data_dir, write_chunks
from chateval.view.server import ViewServer

from .conftest import read_jsonl, write_jsonl
from .view_fixtures import SCRIPT, evaluate_run


@pytest.fixture(scope="module")
def ev(tmp_path_factory) -> Path:
    """An evaluate run of 4 questions (one candidate carries a <script> tag)."""
    return evaluate_run(tmp_path_factory.mktemp("paging"))


def chunk_json(path: Path) -> dict:
    """The JSON a written chunk hands to the page (the one statement's argument)."""
    m = re.fullmatch(r"window\.chatevalChunk\((\d+),(\{.*\})\);\n", path.read_text(encoding="utf-8"), re.S)
    assert m, path.read_text()[:200]
    data = json.loads(m.group(2))
    assert data["n"] == int(m.group(1))
    return data


def test_a_page_writes_its_later_chunks_beside_it(ev, tmp_path):
    recs = read_jsonl(ev / "samples.jsonl")
    page = build_view([ev], out=tmp_path / "p.html", chunk_rows=1)
    files = sorted(data_dir(page).iterdir())
    assert [f.name for f in files] == ["chunk-00001.js", "chunk-00002.js", "chunk-00003.js"]
    html = page.read_text(encoding="utf-8")
    # The page: every question in the list, the first one's row, the others' chunks pending.
    assert [m for m in re.findall(r'data-row="(row-\d+)" data-chunk="(\d+)"', html)] == [
        (f"row-{i + 1}", str(i)) for i in range(4)
    ]
    assert html.count('class="row"') == 1 and f'data-key="{recs[0]["id"]}"' in html
    assert html.count('class="chunk pending"') == 3 and "p_data/chunk-" in html
    assert "script-src 'unsafe-inline' 'self' file:" in html  # the chunks may load; nothing else is allowed
    for i, f in enumerate(files, 1):
        data = chunk_json(f)
        assert f'id="row-{i + 1}"' in data["html"] and f'data-key="{recs[i]["id"]}"' in data["html"]
    # The record's <script> is escaped in the row's HTML, and no "<" is in the chunk file at all.
    first = build_view([ev], out=tmp_path / "q.html", chunk_rows=1).read_text(encoding="utf-8")
    assert SCRIPT not in first and "&lt;script&gt;" in first
    assert all("<script" not in chunk_json(f)["html"] for f in files)  # rows hold no script element
    # Rewritten with larger chunks: the chunk files no longer named are removed, other files kept.
    (data_dir(page) / "notes.txt").write_text("mine")
    build_view([ev], out=page, chunk_rows=2)
    assert sorted(f.name for f in data_dir(page).iterdir()) == ["chunk-00001.js", "notes.txt"]
    # One chunk holds the whole run: one whole page, no folder left behind (none of its files are ours).
    (data_dir(page) / "notes.txt").unlink()
    whole = build_view([ev], out=page).read_text(encoding="utf-8")
    assert not data_dir(page).exists() and whole.count('class="row"') == 4 and "'self' file:" not in whole


def test_a_chunk_file_is_one_call_with_a_json_literal():
    text = chunk_script(3, '</script>"); alert(1); ("\u2028\u2029 é')
    assert text.startswith('window.chatevalChunk(3,{"n":3,"html":"') and text.count("\n") == 1
    assert "\u2028" not in text and "\u2029" not in text  # line breaks to pre-2019 JavaScript
    m = re.fullmatch(r"window\.chatevalChunk\(3,(\{.*\})\);\n", text, re.S)
    assert m and json.loads(m.group(1))["html"] == '</script>"); alert(1); ("\u2028\u2029 é'


def test_write_chunks_touches_only_chunk_files(tmp_path):
    page = tmp_path / "v.html"
    assert [p.name for p in write_chunks(page, ["a", "b"])] == ["chunk-00001.js", "chunk-00002.js"]
    (data_dir(page) / "chunk-1.js").write_text("not ours: not a chunk's name")
    write_chunks(page, [])
    assert [p.name for p in data_dir(page).iterdir()] == ["chunk-1.js"]


def test_write_chunks_takes_a_generator_rendering_one_chunk_at_a_time(tmp_path):
    page, rendered = tmp_path / "v.html", []

    def chunks():
        for html in ("a", "b", "c"):
            rendered.append(html)
            # the chunks before this one are on disk already: none waits in memory for the rest
            assert len(list(data_dir(page).glob("chunk-*.js"))) == len(rendered) - 1
            yield html

    assert [p.name for p in write_chunks(page, chunks())] == ["chunk-00001.js", "chunk-00002.js", "chunk-00003.js"]
    assert '"html":"c"' in (data_dir(page) / "chunk-00003.js").read_text()
    assert write_chunks(page, iter([])) == [] and not data_dir(page).exists()  # none: stale ones and the folder go


def test_chunk_size_option(ev, tmp_path, capsys):
    assert main(["view", str(ev), "--out", str(tmp_path / "v.html"), "--chunk-size", "3"]) == 0
    assert [p.name for p in (tmp_path / "v_data").iterdir()] == ["chunk-00001.js"]
    for bad in ("0", "-2"):
        assert main(["view", str(ev), "--out", str(tmp_path / "w.html"), "--chunk-size", bad]) == 2
        assert "--chunk-size must be 1 to" in capsys.readouterr().err
    assert not (tmp_path / "w.html").exists()


@pytest.fixture
def served(ev, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ev, root / "ev")
    (tmp_path / "secret").mkdir()
    shutil.copytree(ev, tmp_path / "secret" / "other")  # a run outside the served folder
    srv = ViewServer(root, 0, poll_ms=200, chunk_rows=1)
    thread = srv.start()
    stop = threading.Timer(60, srv.shutdown)
    stop.start()
    yield srv, root
    stop.cancel()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def request(srv: ViewServer, path: str, host: str | None = "", **headers: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:  # None: no Host header at all
            conn.putheader("Host", f"127.0.0.1:{srv.server_address[1]}" if host == "" else host)
        for k, v in headers.items():
            conn.putheader(k.replace("_", "-"), v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def chunk_url(page: str) -> str:
    """The chunk endpoint a served page asks (from its paging JSON)."""
    raw = re.search(r'<script type="application/json" id="paging">(.*?)</script>', page, re.S)
    assert raw
    return json.loads(raw.group(1))["url"]


def test_the_server_sends_a_pages_chunks(served):
    srv, root = served
    recs = read_jsonl(root / "ev" / "samples.jsonl")
    code, page = request(srv, "/run/ev")
    assert code == 200 and page.count('class="row"') == 1 and page.count('class="chunk pending"') == 3
    url = chunk_url(page)
    assert url.startswith("/api/chunk?run=ev&v=")
    for n in (1, 3):
        code, body = request(srv, url + f"&n={n}", Sec_Fetch_Site="same-origin")
        data = json.loads(body)
        assert code == 200 and data["n"] == n and f'data-key="{recs[n]["id"]}"' in data["html"]
    assert SCRIPT not in request(srv, url + "&n=0")[1]  # the record's <script> arrives escaped
    # Unknown chunks, malformed numbers, too many fields: refused, nothing rendered.
    assert request(srv, url + "&n=4")[0] == 404
    for bad in ("&n=-1", "&n=x", "&n=%C2%B2", "&n=99999999", "", "&n=1" + "&run=ev" * 40):
        assert request(srv, url + bad)[0] == 400, bad
    # A page of an older version of the run: 409 (the page reloads), not rows that moved.
    with open(root / "ev" / "samples.jsonl", "a") as f:
        f.write(json.dumps(recs[0] | {"id": "appended"}) + "\n")
    assert request(srv, url + "&n=1")[0] == 409
    new = chunk_url(request(srv, "/run/ev")[1])
    assert new != url and "appended" in json.loads(request(srv, new + "&n=4")[1])["html"]


def test_the_chunk_endpoint_reads_only_the_listed_runs_for_local_pages(served):
    srv, root = served
    url = chunk_url(request(srv, "/run/ev")[1])
    version = url.rsplit("v=", 1)[1]
    for rel in ("../secret/other", "..%2Fsecret%2Fother", "/etc", "ev/../../secret/other", "%2E%2E", "nope"):
        code, body = request(srv, f"/api/chunk?run={rel}&v={version}&n=0")
        assert code == 404 and "data-key" not in body, rel
    # Another host name (DNS rebinding), or a request a page elsewhere made: no rows.
    port = srv.server_address[1]
    for host in (f"attacker.test:{port}", f"localhost:{port + 1}", None):
        code, body = request(srv, url + "&n=1", host=host)
        assert code == 421 if host else 400 <= code < 500
        assert "data-key" not in body
    for site in ("cross-site", "same-site"):
        code, body = request(srv, url + "&n=1", Sec_Fetch_Site=site)
        assert code == 403 and "data-key" not in body
    assert request(srv, url + "&n=1", host=f"localhost:{port}")[0] == 200


def test_compared_pages_are_paged_too(served):
    srv, root = served
    shutil.copytree(root / "ev", root / "ev2")
    code, page = request(srv, "/compare?run=ev&run=ev2")
    url = chunk_url(page)
    assert code == 200 and url.startswith("/api/chunk?run=ev&run=ev2&v=")
    cells = json.loads(request(srv, url + "&n=2")[1])["html"]
    assert cells.count('class="cell"') == 2


def test_a_run_of_many_records_is_split(tmp_path):
    """250 records at the default chunk size: three chunks, the page holds the list of all 250."""
    rows = read_jsonl(Path(__file__).resolve().parent.parent / "examples" / "faireval_pairwise.jsonl")[:1]
    data = write_jsonl(tmp_path / "one.jsonl", rows)
    assert main(["evaluate", str(data), "--model", "offline", "--out", str(tmp_path / "seed"), "--no-cache"]) == 0
    rec = read_jsonl(tmp_path / "seed" / "samples.jsonl")[0]
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "summary.json"):
        shutil.copy(tmp_path / "seed" / name, run / name)
    write_jsonl(run / "samples.jsonl", [rec | {"id": f"c{i}"} for i in range(250)])
    page = build_view([run])
    html = page.read_text(encoding="utf-8")
    assert html.count('class="item"') == 250 and html.count('class="row"') == 100
    assert sorted(p.name for p in data_dir(page).iterdir()) == ["chunk-00001.js", "chunk-00002.js"]
    assert chunk_json(data_dir(page) / "chunk-00002.js")["html"].count('class="row"') == 50


def test_a_folder_of_runs_writes_each_runs_chunks(ev, tmp_path, capsys):
    from chateval.view import build_index

    root = tmp_path / "runs"
    shutil.copytree(ev, root / "a" / "ev")
    index = build_index(root, chunk_rows=2)
    page = root / "a" / "ev" / "view.html"
    assert index.is_file() and page.is_file()
    assert [p.name for p in data_dir(page).iterdir()] == ["chunk-00001.js"]
    assert main(["view", str(root), "--chunk-size", "0"]) == 2 and "--chunk-size" in capsys.readouterr().err
