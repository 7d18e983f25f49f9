"""`chateval data get` for the public graded LoCoMo answer sets (issue 36): locomo-audit's errata,
its wrong-answer and full-context sets, Zep's grades. Downloads run against the local file server
with small fixtures of our own (never the real files): the entries' pins are checked, and the
fixtures, pinned in a copy of the entry, land where the loaders read them."""

from __future__ import annotations

import hashlib
import json
import re
from urllib.parse import urlsplit

import pytest

from chateval.cli import main
from chateval.datasets.catalog import find
from chateval.datasets.download import get
from chateval.datasets.errata import load_errata
from chateval.testing.file_server import FileServer

from .conftest import FIXTURES, SHARED, needs_shared

NAMES = ("locomo-audit", "locomo-audit-wrong", "locomo-audit-fc", "zep-locomo")
# Small files of the entries' formats, written for these tests.
EVERMEMOS = json.dumps(
    {
        "total_questions": 1,
        "correct": 0,
        "accuracy": 0.0,
        "detailed_results": {
            "locomo_exp_user_0": [
                {
                    "question_id": "locomo_0_qa0",
                    "question": "Q?",
                    "golden_answer": "A",
                    "generated_answer": "B",
                    "llm_judgments": {"judgment_1": False},
                    "category": "4",
                }
            ]
        },
    }
).encode()
ZEP = json.dumps(
    {
        "locomo_experiment_user_0": [
            {"question": "Q?", "answer": "B", "golden_answer": "A", "grade": False, "category": 4}
        ]
    }
).encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.delenv("CHATEVAL_DATA_DIR", raising=False)
    monkeypatch.delenv("CHATEVAL_DATA_MIRROR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "srv").mkdir()
    with FileServer(tmp_path / "srv") as server:
        yield tmp_path, server


def test_entries_are_pinned_to_a_commit_with_licences():
    for name in NAMES:
        ds = find(name)
        assert ds is not None, name
        assert "CC BY-NC 4.0" in ds.licence or "Apache-2.0" in ds.licence
        for f in ds.files:
            assert f.path.startswith("locomo_judged/") and f.path in ds.reads
            assert f.sha256 and len(f.sha256) == 64 and f.size and f.size > 100_000
            u = urlsplit(f.url)
            assert u.netloc == "raw.githubusercontent.com"
            assert re.fullmatch(r"/(dial481/locomo-audit|getzep/zep-papers)/[0-9a-f]{40}/.+\.json", u.path), f.url
    assert find("zep-locomo").licence.startswith("Apache-2.0")
    assert find("locomo-audit").files[0].url.endswith("/9493fb4b4af4256ed17a18e8fd0b3cfdeec29539/errors.json")


@needs_shared("locomo_judged", "locomo_audit_errors.json")
def test_pins_are_those_of_the_shared_copies():
    for name in NAMES:
        for f in find(name).files:
            data = (SHARED / f.path).read_bytes()
            assert (sha(data), len(data)) == (f.sha256, f.size), f.path


def test_the_pinned_entry_refuses_other_bytes(env, capsys):
    tmp, server = env
    (server.root / "locomo_judged").mkdir()
    ours = (FIXTURES / "rejudge" / "errata_tiny.json").read_bytes()
    target = server.root / "locomo_judged" / "locomo_audit_errors.json"
    target.write_bytes(ours)
    code = main(["data", "get", "locomo-audit", "--to", str(tmp / "d"), "--mirror", server.base_url])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 3 and "150,552" in err and "removed" in err  # the wrong size
    target.write_bytes(ours + b" " * (150552 - len(ours)))  # the right size, other bytes
    code = main(["data", "get", "locomo-audit", "--to", str(tmp / "d"), "--mirror", server.base_url])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 3 and "does not match the catalog's f298ef46" in err
    assert not (tmp / "d" / "locomo_judged" / "locomo_audit_errors.json").exists()


@pytest.mark.parametrize(
    "name, bodies",
    [
        ("locomo-audit", {"locomo_audit_errors.json": (FIXTURES / "rejudge" / "errata_tiny.json").read_bytes()}),
        ("locomo-audit-wrong", {"ap_v1_specific_wrong.json": EVERMEMOS}),
        (
            "locomo-audit-fc",
            {"fc_gpt-4o-mini_cot.json": EVERMEMOS, "fc_gpt-4o-mini_memos.json": EVERMEMOS[:-1] + b" }"},
        ),
        ("zep-locomo", {"zep_locomo_grades.json": ZEP, "zep_locomo_responses.json": ZEP + b"\n"}),
    ],
)
def test_get_puts_the_files_where_the_loaders_read_them(env, name, bodies):
    tmp, server = env
    (server.root / "locomo_judged").mkdir()
    for fname, body in bodies.items():
        (server.root / "locomo_judged" / fname).write_bytes(body)
    real = find(name)
    # The same entry, pinned to our fixtures' bytes.
    ds = real.model_copy(
        update={
            "files": tuple(
                f.model_copy(
                    update={"sha256": sha(bodies[f.path.split("/")[1]]), "size": len(bodies[f.path.split("/")[1]])}
                )
                for f in real.files
            )
        }
    )
    get(ds, tmp / "d", mirror=server.base_url)
    for f in real.files:
        assert (tmp / "d" / f.path).read_bytes() == bodies[f.path.split("/")[1]]
    assert sorted(p for p, _ in server.requests) == sorted(f"/{f.path}" for f in real.files)
    if name == "locomo-audit":
        assert len(load_errata(tmp / "d" / "locomo_judged" / "locomo_audit_errors.json").wrong_gold) == 2


def test_list_shows_the_new_entries(env, capsys):
    tmp, _ = env
    assert main(["data", "list", "--to", str(tmp / "d")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in NAMES:
        assert name in out
