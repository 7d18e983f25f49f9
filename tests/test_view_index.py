"""A page built from byte offsets (chateval/view/index.py, issue 38 item 3): the same bytes as the
page built from every sample held whole, samples read back equal to load_run's, and read_run's
errors for a bad samples.jsonl."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from chateval.util.errors import InputError
from chateval.view import build_view, load_run
from chateval.view.build import load_rows
from chateval.view.index import Entry, Reader

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = FIXTURES / "runs_v0"


def _copy(name: str, tmp_path: Path) -> Path:
    run = tmp_path / name
    shutil.copytree(RUNS / name, run)
    for f in run.rglob("view*"):
        shutil.rmtree(f) if f.is_dir() else f.unlink()
    return run


@pytest.mark.parametrize("name", ["evaluate", "faireval", "longmemeval"])
def test_page_and_chunks_are_byte_for_byte_those_built_from_whole_samples(name, tmp_path):
    """digests.json: sha256 of each page and chunk file as main built them before this change
    (every sample held whole; the run's path replaced by RUN), one row per chunk with contexts
    capped, and 100 rows per chunk."""
    want = json.loads((FIXTURES / "view_pages" / "digests.json").read_text())
    run = _copy(name, tmp_path)
    got = {}
    for rows in (1, 100):
        page = build_view([run], tmp_path / f"p{rows}.html", chunk_rows=rows, context_chars=300 if rows == 1 else None)
        for f in [page, *sorted((tmp_path / f"p{rows}_data").glob("*.js"))]:
            text = f.read_text().replace(str(run), "RUN")
            got[f"{name}/{rows}/{f.name}"] = hashlib.sha256(text.encode()).hexdigest()
    assert got == {k: v for k, v in want.items() if k.startswith(f"{name}/")}
    assert any("chunk-" in k for k in got)  # the one-row pages have chunks beside them


@pytest.mark.parametrize("name", ["evaluate", "faireval", "longmemeval"])
def test_entries_hold_no_sample_and_read_back_as_load_run_reads_them(name, tmp_path):
    run = _copy(name, tmp_path)
    page = load_rows([run])
    entries = page.runs[0].entries
    whole = load_run(run).samples
    assert entries and all(isinstance(e, Entry) for e in entries) and not page.runs[0].samples
    assert not hasattr(entries[0], "debates") and not hasattr(entries[0], "inputs")
    with Reader() as reader:
        assert [reader.view(e).model_dump() for e in entries] == [s.model_dump() for s in whole]
    assert page.runs[0].n_samples == len(whole)


def _bad_run(tmp_path: Path, lines: list[bytes]) -> Path:
    run = _copy("evaluate", tmp_path)
    good = (run / "samples.jsonl").read_bytes().split(b"\n")[0]
    (run / "samples.jsonl").write_bytes(b"\n".join(good if x == b"GOOD" else x for x in lines))
    return run


def test_a_torn_last_line_is_skipped_as_read_run_skips_it(tmp_path):
    run = _bad_run(tmp_path, [b"GOOD", b'{"key": "torn'])
    page = load_rows([run])
    assert page.runs[0].n_records == 1 and len(page.rows) == 1


def test_a_line_that_is_not_json_is_refused_naming_it_before_a_bad_record(tmp_path):
    run = _bad_run(tmp_path, [b'{"status": "ok", "key": "k", "verdict": 5}', b"GOOD", b"not json", b"nor this", b""])
    with pytest.raises(InputError, match=r"samples\.jsonl:3: not valid JSON .*nor are 1 more line"):
        load_rows([run])


def test_a_bad_envelope_is_refused_before_a_bad_payload(tmp_path):
    run = _bad_run(tmp_path, [b'{"status": "ok", "key": "k", "verdict": 5}', b'{"status": 3, "key": "k2"}', b""])
    with pytest.raises(InputError, match=r"samples\.jsonl:2"):
        load_rows([run])


def test_a_bad_payload_is_refused_naming_its_line(tmp_path):
    run = _bad_run(tmp_path, [b"GOOD", b'{"status": "ok", "key": "k", "verdict": 5}', b""])
    with pytest.raises(InputError, match=r"samples\.jsonl:2"):
        load_rows([run])
    with pytest.raises(InputError, match=r"samples\.jsonl:2"):
        load_run(run)  # the same line the whole read names


def test_a_page_written_in_parts_is_the_page_rendered_whole(tmp_path, monkeypatch):
    from chateval.runs import files
    from chateval.view.build import page_parts, render_page

    assert list(files.grouped(["ab", "c", "defg", "h"], size=3)) == ["abc", "defg", "h"]
    run = _copy("longmemeval", tmp_path)
    page = load_rows([run])
    whole = render_page(page, chunk_rows=1)
    small = list(page_parts(page, chunk_rows=1))
    assert "".join(small) == whole
    monkeypatch.setattr(files.grouped, "__defaults__", (1000,))
    parts = list(page_parts(page, chunk_rows=1))
    assert len(parts) > 5 and "".join(parts) == whole
    out = build_view([run], tmp_path / "p.html", chunk_rows=1)
    assert out.read_text() == render_page(load_rows([run]), chunk_rows=1, source={"static": "p_data/chunk-"})


def test_write_json_writes_what_json_dumps_makes_in_parts_each_scrubbed(tmp_path, monkeypatch):
    from chateval.runs import files
    from chateval.util import secrets

    data = {"a": [{"k": i, "text": "x" * 50, "key": "sk-not-a-secret"} for i in range(200)], "b": None, "c": "é"}
    monkeypatch.setattr(files.grouped, "__defaults__", (300,))  # many parts
    files.write_json(tmp_path / "s.json", data)
    assert (tmp_path / "s.json").read_text(encoding="utf-8") == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    monkeypatch.setattr(secrets, "scrub", lambda t: t.replace("sk-not-a-secret", "***"))
    monkeypatch.setattr(files, "scrub", secrets.scrub)
    files.write_json(tmp_path / "t.json", data)
    text = (tmp_path / "t.json").read_text(encoding="utf-8")
    assert "sk-not" not in text and text.count("***") == 200
