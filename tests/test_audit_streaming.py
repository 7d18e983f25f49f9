"""The audit's summary is built from one pass over samples.jsonl, each variant kept without its
debate (issue 38 item 3): the summary and report are the same as when every record was held whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chateval.auditing import run as audit_run
from chateval.cli import main
from chateval.models import UsageTotals
from chateval.records.audit import AuditUnit, KeptUnit
from chateval.runs.directory import RunDir
from chateval.testing.fake_openai import FakeOpenAIServer, Fault

from .test_audit import MODEL, longer_judge, write_items

# Varying with the run, not with how it was summarised (the config hash holds the fake server's port).
TIMING = {"wall_time_s", "wall_time_attempts_s", "mean_latency_s", "latency_s", "created", "finished", "config_hash"}


HELD_WHOLE_ONLY = {"transcript", "agents", "inputs", "usage", "orders", "usage_by_endpoint"}


def held_whole(run: RunDir, wanted: set[str]) -> tuple[list[AuditUnit], UsageTotals | None]:
    """The summary's input before: every record validated and held with its debate, usage summed
    by ``summarize`` itself."""
    return [AuditUnit.model_validate(r) for r in run.records() if r.get("key") in wanted], None


def audit_once(tmp_path: Path, sub: str) -> Path:
    """An audit into SUB/audit: the same folder name, so two reports can be compared line by line."""
    inp = write_items(tmp_path / "items.jsonl")
    out = tmp_path / sub / "audit"
    with FakeOpenAIServer(responder=longer_judge) as server:
        server.script([Fault("500")] * 3)  # three variants fail: failed keys and counts in the summary
        code = main(["audit", str(inp), "--out", str(out), "--model", MODEL, "--base-url",
                     server.base_url, "--agents", "2", "--turns", "1", "--structured", "off", "--max-retries", "0",
                     "--no-cache", "--workers", "1"])  # fmt: skip
    assert code == 1  # some variants failed
    return out


def untimed(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: untimed(x) for k, x in v.items() if k not in TIMING}
    if isinstance(v, list):
        return [untimed(x) for x in v]
    return v


def test_the_streamed_summary_equals_the_one_from_records_held_whole(tmp_path, monkeypatch):
    streamed = audit_once(tmp_path, "streamed")
    monkeypatch.setattr(audit_run, "read_units", held_whole)
    whole = audit_once(tmp_path, "whole")
    a = json.loads((streamed / "summary.json").read_text(encoding="utf-8"))
    b = json.loads((whole / "summary.json").read_text(encoding="utf-8"))
    assert a["n_failed"] == 3 and a["usage"]["calls"] > 0 and a["variants"]  # the oracle compares something
    assert untimed(a) == untimed(b)
    assert report_of(streamed) == report_of(whole)


def report_of(out: Path) -> list[str]:
    """report.md's lines, the run's folder and wall time left out."""
    text = (out / "report.md").read_text(encoding="utf-8").replace(str(out.parent), "")
    return [line for line in text.splitlines() if "wall time" not in line.lower()]


def test_read_units_keeps_no_debate_and_sums_the_usage(tmp_path):
    out = audit_once(tmp_path, "run")
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    with RunDir(out, config, resume=True, key="key") as run:
        lines = run.records()
        wanted = {r["key"] for r in lines[1:]}  # one left out
        units, usage = audit_run.read_units(run, wanted)
    assert any(r["transcript"] for r in lines)  # there were debates to drop
    assert [u.key for u in units] == [r["key"] for r in lines[1:]]
    # What the summary reads, and nothing else: no debate, inputs or usage.
    assert all(isinstance(u, KeptUnit) and set(u._fields).isdisjoint(HELD_WHOLE_ONLY) for u in units)
    whole = [AuditUnit.model_validate(r) for r in lines[1:]]
    assert [u.verdict and (u.verdict.winner, u.verdict.correct, u.verdict.score) for u in units] == [
        w.verdict and (w.verdict.winner, w.verdict.correct, w.verdict.score) for w in whole
    ]
    assert any(u.verdict for u in units)  # the verdicts compared are there
    same = ("key", "item", "perturbation", "variant", "favours", "swapped", "control", "status")
    assert [[getattr(u, k) for k in same] for u in units] == [[getattr(w, k) for k in same] for w in whole]
    expected = UsageTotals()
    for r in lines[1:]:
        expected.merge(AuditUnit.model_validate(r).usage)
    assert usage == expected and usage.calls > 0


def test_the_returned_summary_keeps_every_variant_while_the_page_is_built_without_them(tmp_path):
    """The page is built with the summary's variant models let go (issue 38 item 3); the summary
    the Python API returns still holds every variant, the same as summary.json's."""
    from chateval.auditing.api import audit
    from chateval.records.audit import read_summary

    inp = write_items(tmp_path / "items.jsonl")
    out = tmp_path / "audit"
    summary = audit(str(inp), str(out), model="offline", agents=2, turns=1, cache=False)
    assert summary.variants and (out / "view.html").is_file()
    assert summary.variants == read_summary(out).variants
