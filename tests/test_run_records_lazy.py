"""read_run's records are typed when first read (issue 38): what is still checked up front, what
on access, and the envelope's fast path agreeing with the model."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

import chateval
from chateval.records import JudgedRecord, SampleRecord
from chateval.records.lazy import ENVELOPE_FIELDS, FAST_TYPES, LazyRecords, check_envelope
from chateval.runs.envelope import check
from chateval.util.errors import InputError

OLD = Path(__file__).parent / "fixtures" / "runs_v0"


@pytest.fixture
def copy(tmp_path):
    out = tmp_path / "run"
    shutil.copytree(OLD / "evaluate", out)
    return out


def test_a_bad_payload_field_is_an_error_naming_the_line_when_the_record_is_read(copy):
    samples = copy / "samples.jsonl"
    good = samples.read_text().splitlines(keepends=True)
    samples.write_text(good[0] + json.dumps({**json.loads(good[1]), "transcript": "not a list"}) + "\n" + good[2])
    run = chateval.read_run(copy)  # the JSON and the envelopes are fine: read
    assert len(run.records) == 3 and run.records[0].transcript and run.records[2].id
    for read in (lambda: run.records[1], lambda: list(run.records), lambda: run.records[-2], lambda: run.records[:2]):
        with pytest.raises(InputError, match=rf"^{samples}:2: field 'transcript'") as err:
            read()
        assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=rf"^{samples}:2: field 'transcript'"):
        chateval.read_run(copy, lazy=False)  # every record now
    with pytest.raises(InputError, match=rf"^{samples}:2: field 'transcript'"):
        run.records.check_all()  # type: ignore[attr-defined]


def test_lazy_records_read_like_a_list(copy):
    lines = [json.loads(x) for x in (copy / "samples.jsonl").read_text().splitlines()]
    run = chateval.read_run(copy)
    records = run.records
    assert isinstance(records, LazyRecords) and len(records) == 3
    assert records[0] is records[0] and records[-1] is records[2]  # validated once, kept
    assert [r.id for r in records] == [x["id"] for x in lines] == [r.id for r in records[0:3]]
    assert records == chateval.read_run(copy, lazy=False).records == [check(JudgedRecord, x, "-") for x in lines]
    assert records != records[:2] and records.line_of(1) == 2
    with pytest.raises(IndexError):
        records[3]
    assert all(r.data() == x for r, x in zip(records, lines))  # keys in the file's order, as before


def test_release_yields_each_record_once_and_keeps_none(copy):
    """The viewer reads each record once: release() gives what iterating gives, validated, and
    holds neither the parsed line nor the model afterwards (issue 38 item 3)."""
    whole = list(chateval.read_run(copy).records)
    records = chateval.read_run(copy).records
    assert isinstance(records, LazyRecords) and len(records) == 3
    out = []
    for i, rec in enumerate(records.release()):
        assert records._done[i] is None and records._raw[i] is None  # let go as soon as it is given
        out.append(rec)
    assert out == whole and len(records) == 3
    with pytest.raises(AssertionError):
        records[0]  # released: not readable again


def test_the_envelope_fast_path_agrees_with_the_model():
    assert set(ENVELOPE_FIELDS) == {"format_version", *FAST_TYPES}  # else the fast path is off
    values = [None, 0, 1, 2, -1, 1.0, 1.5, True, "", "ok", "1", [], {}, {"a": 1}, float("nan")]
    for field, value in itertools.product(ENVELOPE_FIELDS, values):
        record = {"status": "ok", field: value}
        try:
            SampleRecord.model_validate(record)
            valid = True
        except ValidationError:
            valid = False
        try:
            check_envelope({**record, "payload": [1, 2]}, "samples.jsonl:7")
            passed = True
        except InputError as e:
            assert str(e).startswith(f"samples.jsonl:7: field '{field}'")
            passed = False
        assert passed == valid, (field, value)


def test_a_run_dumps_its_records_as_a_list(copy):
    run = chateval.read_run(copy)
    dumped = run.model_dump()["records"]
    # as the declared list[SampleRecord] always dumped: the envelope's fields of each record
    assert isinstance(dumped, list) and len(dumped) == 3
    assert [r["status"] for r in dumped] == [r.status for r in run.records] and dumped[0]["usage"]
    assert json.loads(run.model_dump_json())["records"] == json.loads(json.dumps(dumped, default=str))
