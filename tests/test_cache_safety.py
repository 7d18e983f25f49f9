"""The on-disk caches hold data, never code: a pickle planted in a cache folder (the old diskcache
way, or inside the store itself) is never unpickled, and a folder that is not a cache of ours (old
format, random bytes) is one error naming it before any work (exit 2)."""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from chateval.cli import main
from chateval.memory.embeddings import make_embedder
from chateval.models import CompletionCache
from chateval.util.datastore import FILE, StoreError

from .conftest import EXAMPLES, REPO

MARKER_NAME = "gadget-ran"


class Gadget:
    """Unpickling this runs a shell command (as the report's os.system gadget did)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def evaluate(cache: Path, out: Path, capsys) -> tuple[int, str]:
    code = main(
        [
            "evaluate",
            str(EXAMPLES / "faireval_pairwise.jsonl"),
            "--model",
            "offline",
            "--agents",
            "2",
            "--turns",
            "1",
            "--limit",
            "2",
            "--cache-dir",
            str(cache),
            "--out",
            str(out),
        ]
    )
    return code, capsys.readouterr().err


def cache_keys(cache: Path) -> list[str]:
    if (cache / FILE).exists():
        with sqlite3.connect(cache / FILE) as db:
            return [k for (k,) in db.execute("SELECT key FROM entries")]
    import diskcache  # the old format (before the fix): its keys, to plant gadgets under

    with diskcache.Cache(str(cache)) as old:
        return list(old.iterkeys())


def test_a_pickle_planted_the_old_way_is_not_run(tmp_path, capsys):
    diskcache = pytest.importorskip("diskcache", reason="diskcache plants the old-format cache")
    cache, marker = tmp_path / "cache", tmp_path / MARKER_NAME
    assert evaluate(cache, tmp_path / "first", capsys)[0] == 0
    keys = cache_keys(cache)
    assert keys
    with diskcache.Cache(str(cache)) as old:  # every entry replaced by the gadget, as diskcache stores values
        for key in keys:
            old.set(key, Gadget(marker))
    code, err = evaluate(cache, tmp_path / "second", capsys)
    assert not marker.exists(), "a pickle read from the cache ran code"
    assert code == 2 and str(cache) in err and "old-format completion cache" in err and "delete or move" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "second" / "samples.jsonl").exists()


def test_a_pickle_inside_the_store_is_a_miss(tmp_path, capsys):
    cache, marker = tmp_path / "cache", tmp_path / MARKER_NAME
    assert evaluate(cache, tmp_path / "first", capsys)[0] == 0
    with sqlite3.connect(cache / FILE) as db:
        db.execute("UPDATE entries SET value = ?", (pickle.dumps(Gadget(marker)),))
    code, _ = evaluate(cache, tmp_path / "second", capsys)
    assert code == 0 and not marker.exists()
    summary = (tmp_path / "second" / "summary.json").read_text()
    assert '"cached_calls": 0' in summary  # each planted entry was a miss: the calls were made again
    code, _ = evaluate(cache, tmp_path / "third", capsys)  # and their replies cached again, as data
    assert code == 0 and '"calls": 0' in (tmp_path / "third" / "summary.json").read_text()


@pytest.mark.parametrize("where", [FILE, "cache.db"])
def test_a_corrupt_cache_is_one_error_up_front(tmp_path, capsys, where):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / where).write_bytes(os.urandom(8192))
    code, err = evaluate(cache, tmp_path / "run", capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(cache) in err, err
    assert "DatabaseError" not in err and not (tmp_path / "run" / "samples.jsonl").exists()


def test_the_completion_cache_round_trips_json_and_skips_foreign_entries(tmp_path):
    cache = CompletionCache(tmp_path / "c")
    assert not (tmp_path / "c").exists()  # opened on first use only
    cache.set("k", {"text": "hello", "prompt_tokens": 3, "completion_tokens": 1})
    assert cache.get("k")["text"] == "hello" and cache.get("other") is None
    with sqlite3.connect(tmp_path / "c" / FILE) as db:
        db.execute(
            "INSERT INTO entries VALUES ('bad1', ?), ('bad2', ?), ('bad3', ?)", (b"\xff\xfe", b'{"text": 5}', b"[1, 2]")
        )
    assert [cache.get(k) for k in ("bad1", "bad2", "bad3")] == [None, None, None]
    cache.close()
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        CompletionCache(tmp_path / "file")


def test_the_embedding_cache_holds_vectors_not_pickles(tmp_path):
    diskcache = pytest.importorskip("diskcache", reason="diskcache plants the old-format cache")
    emb = make_embedder("hash", cache_dir=tmp_path / "e")
    first = asyncio.run(emb.embed(["alpha beta", "gamma"]))
    emb._cache.close()
    with sqlite3.connect(tmp_path / "e" / FILE) as db:
        db.execute("UPDATE entries SET value = ?", (b"\x00" * 12,))  # the wrong size
    again = make_embedder("hash", cache_dir=tmp_path / "e")
    assert np.allclose(asyncio.run(again.embed(["alpha beta", "gamma"])), first) and again.computed == 2
    again._cache.close()
    third = make_embedder("hash", cache_dir=tmp_path / "e")
    asyncio.run(third.embed(["alpha beta"]))
    assert third.computed == 0  # vectors stored again, read back as data
    marker = tmp_path / MARKER_NAME
    with diskcache.Cache(str(tmp_path / "old")) as old:
        old.set("x", Gadget(marker))
    with pytest.raises(StoreError, match="old-format embedding cache"):
        make_embedder("hash", cache_dir=tmp_path / "old")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / FILE).write_bytes(os.urandom(4096))
    with pytest.raises(StoreError, match="not a chateval embedding cache"):
        make_embedder("hash", cache_dir=tmp_path / "junk")
    assert not marker.exists()


# Reading these from a file or socket runs code or builds arbitrary objects.
UNSAFE = re.compile(
    r"^\s*(import|from)\s+(pickle|cPickle|dill|shelve|marshal|diskcache|joblib|cloudpickle)\b"
    r"|allow_pickle\s*=\s*True|torch\.load\(|yaml\.load\(|yaml\.unsafe_load|jsonpickle|\beval\(|\bexec\(",
    re.M,
)
# Ray's cloudpickle carries a benchmark's function from the driver to its own actors in memory
# (chateval/bench/executor.py), never through a file.
ALLOWED = {("chateval/bench/executor.py", "from ray import cloudpickle")}


def test_no_module_reads_code_from_data():
    found = []
    for path in sorted((REPO / "chateval").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for line in path.read_text(encoding="utf-8").splitlines():
            if UNSAFE.search(line) and not any(rel == f and s in line for f, s in ALLOWED):
                found.append(f"{rel}: {line.strip()}")
    assert not found, found


def test_a_store_travels_to_another_process_as_its_folder(tmp_path):
    emb = make_embedder("hash", cache_dir=tmp_path / "e")
    asyncio.run(emb.embed(["alpha"]))
    copy = pickle.loads(pickle.dumps(emb))  # a Ray worker's copy: its own connection, the same rows
    before = copy.computed
    asyncio.run(copy.embed(["alpha"]))
    assert copy.computed == before and copy._cache is not emb._cache


def test_a_store_damaged_past_its_header_is_one_error_up_front(tmp_path, capsys):
    cache = tmp_path / "cache"
    assert evaluate(cache, tmp_path / "first", capsys)[0] == 0
    data = bytearray((cache / FILE).read_bytes())
    data[100:] = os.urandom(len(data) - 100)  # the header (and so its application id) intact
    (cache / FILE).write_bytes(bytes(data))
    code, err = evaluate(cache, tmp_path / "run", capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(cache / FILE) in err, err
    assert "malformed" in err and not (tmp_path / "run" / "samples.jsonl").exists()
