"""Reports and plots are written for any mix of ok and failed units, in every benchmark and in
``evaluate``: every unit failed, and half of them failed (then the plots are drawn too)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer

from .conftest import read_jsonl, write_jsonl

FIX = Path(__file__).parent / "fixtures"

FAILING = '''
import itertools
from chateval.memory import MemorySystem, memory_system

_calls = itertools.count()


@memory_system("{name}", replace=True)
class Failing(MemorySystem):
    description = "fails every {every}th answer"

    async def _ingest(self, session):
        pass

    async def context(self, question, now, items):
        return ""

    def item_count(self):
        return 0

    def _reset(self):
        pass

    async def respond(self, query, now):
        if next(_calls) % {every} == 0:
            raise RuntimeError("planned failure")
        return await super().respond(query, now)
'''

MEMORY = [("longmemeval", "lme_tiny.json", "{s}"), ("locomo", "locomo_tiny.json", "{s}"),
          ("head2head", "lme_tiny.json", "{s},full_context"), ("teafarm", "locomo_tiny.json", "{s}"),
          ("msc-response", "msc_release_tiny.jsonl", "{s},full_context")]  # pairwise helpfulness: two systems


def pngs(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob("*.png"))


def check_report(out: Path, *, failed: bool = True) -> str:
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["n_failed"] >= 1) is failed
    report = (out / "report.md").read_text()
    for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report):  # every linked figure exists
        assert (out / img).is_file(), img
    return report


@pytest.mark.slow
@pytest.mark.parametrize("bench,data,systems", MEMORY)
@pytest.mark.parametrize("every", [1, 2], ids=["all-failed", "half-failed"])
def test_memory_benchmark_reports_with_failed_units(tmp_path, capsys, bench, data, systems, every):
    name = f"failing_{every}_{bench.replace('-', '_')}"
    plugin = tmp_path / f"{name}.py"
    plugin.write_text(FAILING.format(name=name, every=every))
    out = tmp_path / "run"
    code = main(["bench", bench, "--data", str(FIX / data), "--systems", systems.format(s=name), "--out", str(out),
                 "--embedder", "hash", "--no-cache", "--plugin", str(plugin), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "not drawn: drawing failed" not in err, err
    report = check_report(out)
    if bench == "msc-response":  # a pairwise judgement without its response fails and is listed
        assert "no response of" in report
    if every == 2 and bench != "msc-response":  # msc-response's report has tables only
        assert pngs(out), "a half-failed run still gets its plots"


def judged_server(fail: float, seed: int = 5) -> FakeOpenAIServer:
    return FakeOpenAIServer(faults={"500": fail}, seed=seed) if fail < 1 else FakeOpenAIServer(faults={"500": 1.0})


@pytest.mark.slow
@pytest.mark.parametrize("bench,data", [("faireval", "faireval_tiny.jsonl"), ("topical-chat", "topical_chat_tiny.json")])
@pytest.mark.parametrize("fail", [1.0, 0.5], ids=["all-failed", "half-failed"])
def test_judge_benchmark_reports_with_failed_units(tmp_path, capsys, bench, data, fail):
    out = tmp_path / "run"
    with judged_server(fail) as server:
        code = main(["bench", bench, "--data", str(FIX / data), "--out", str(out), "--model", "openai-compatible/m",
                     "--base-url", server.base_url, "--no-cache", "--max-retries", "0", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "not drawn: drawing failed" not in err, err
    check_report(out)
    if fail < 1:
        assert pngs(out), "a half-failed run still gets its plots"


@pytest.mark.parametrize("fail", [1.0, 0.5], ids=["all-failed", "half-failed"])
def test_evaluate_reports_with_failed_samples(tmp_path, capsys, fail):
    data = write_jsonl(tmp_path / "pairs.jsonl", [{"id": f"s{i}", "question": f"Q{i}?", "answer_1": "a", "answer_2": "b",
                                                   "label": "1"} for i in range(8)])
    out = tmp_path / "run"
    with judged_server(fail) as server:
        code = main(["evaluate", str(data), "--out", str(out), "--model", "openai-compatible/m",
                     "--base-url", server.base_url, "--no-cache", "--max-retries", "0"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    check_report(out)
    assert len(read_jsonl(out / "samples.jsonl")) == 8


# --- LongMemEval: answers given, judged by an endpoint; half the judgements fail -------------------
def judge(body: dict) -> str:
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "UNREADABLE" in text:
        return "no verdict here"  # unreadable, also after the re-ask: the unit fails
    return json.dumps({"correct": True, "reason": "matches"})


def lme_with_hypotheses(tmp_path: Path, n: int = 12) -> tuple[Path, Path]:
    base = json.loads((FIX / "lme_tiny.json").read_text())
    qs = [dict(base[i % len(base)], question_id=f"q{i:02d}", question_type="single-session-user") for i in range(n)]
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(qs))
    hyp = write_jsonl(tmp_path / "h.jsonl", [{"question_id": q["question_id"],
                                              "hypothesis": "UNREADABLE" if i % 2 else "An answer."}
                                             for i, q in enumerate(qs)])
    return data, hyp


def test_longmemeval_half_failed_at_100_percent_writes_report_and_plots(tmp_path, capsys):
    """6 ok units all judged correct: the 95% Wilson interval's upper end is 1 - 1e-16 in floating
    point, which made the whisker negative and matplotlib refuse the plot (no report.md)."""
    data, hyp = lme_with_hypotheses(tmp_path)
    out = tmp_path / "run"
    with FakeOpenAIServer(responder=judge) as server:
        args = ["bench", "longmemeval", "--data", str(data), "--hypotheses", str(hyp), "--judge", "single",
                "--out", str(out), "--judge-model", "openai-compatible/m", "--base-url", server.base_url,
                "--no-cache", "--max-retries", "0", "--judge-protocol", "chateval"]  # the JSON judge can fail
        code = main(args)
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err, err
        summary = json.loads((out / "summary.json").read_text())
        assert summary["n_failed"] == 6 and summary["methods"]["hypotheses"]["qa"]["single"]["overall"] == 1.0
        check_report(out)
        assert "qa_by_type.png" in pngs(out)
        # and again on --resume while the units still fail
        (out / "report.md").unlink()
        assert main([*args, "--resume"]) == 1
        check_report(out)
        # item 15: nothing ran offline (the unused answer model defaults to `offline`)
        err = capsys.readouterr().err
    assert "offline" not in err.lower(), err
    assert summary["offline"] is False and "offline" not in (summary.get("note") or "")
    assert "offline" not in (out / "report.md").read_text().lower()


# --- text from the data is escaped in every report ------------------------------------------------
HOSTILE = "<svg onload=alert(1)>|x\ny`[a](javascript:b)"


def assert_inert(report: str) -> None:
    """No markup from the data: no tag, no link, and every table keeps its column count."""
    assert "<svg" not in report and "<script" not in report, report
    assert not re.search(r"(?<!\\)\]\(javascript", report), report  # an escaped \] is no link
    table: list[int] = []
    for line in report.splitlines() + [""]:
        if line.startswith("|"):
            table.append(len(re.findall(r"(?<!\\)\|", line)))
        elif table:
            assert len(set(table)) == 1, (table, report)
            table = []


def test_longmemeval_question_type_and_errors_are_escaped(tmp_path, capsys):
    data, hyp = lme_with_hypotheses(tmp_path, n=4)
    qs = json.loads(data.read_text())
    qs[0]["question_type"] = HOSTILE
    data.write_text(json.dumps(qs))
    out = tmp_path / "run"

    def hostile_judge(body: dict) -> str:  # the unreadable reply is quoted in the unit's error
        text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        return "<script>x</script>|\nno" if "UNREADABLE" in text else judge(body)

    with FakeOpenAIServer(responder=hostile_judge) as server:
        assert main(["bench", "longmemeval", "--data", str(data), "--hypotheses", str(hyp), "--judge", "single",
                     "--out", str(out), "--judge-model", "openai-compatible/m", "--base-url", server.base_url,
                     "--no-cache", "--max-retries", "0", "--judge-protocol", "chateval"]) == 1
    report = check_report(out)
    assert "&lt;svg onload=alert(1)&gt;\\|x y" in report  # the type is there, escaped
    assert "&lt;script&gt;" in report  # so is the error
    assert_inert(report)


def test_head2head_and_plugin_errors_are_escaped(tmp_path, capsys):
    data = json.loads((FIX / "lme_tiny.json").read_text())
    data[0]["question_type"] = HOSTILE
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    plugin = tmp_path / "hostile_sys.py"
    plugin.write_text(FAILING.format(name="hostile_sys", every=2).replace(
        'RuntimeError("planned failure")', 'RuntimeError("<script>alert(1)</script> | `x`")'))
    for bench, out in (("head2head", tmp_path / "h2h"), ("longmemeval", tmp_path / "lme")):
        code = main(["bench", bench, "--data", str(path), "--systems",
                     "hostile_sys,full_context" if bench == "head2head" else "hostile_sys", "--out", str(out),
                     "--embedder", "hash", "--no-cache", "--plugin", str(plugin), "--workers", "1"])
        assert code == 1, capsys.readouterr().err
        report = check_report(out)
        assert "&lt;script&gt;" in report or bench == "head2head"  # head2head lists counts, not errors
        assert_inert(report)


def test_evaluate_and_faireval_reports_escape_ids_and_errors(tmp_path, capsys):
    data = write_jsonl(tmp_path / "pairs.jsonl", [{"id": f"<b>s{i}|</b>", "question": "Q?", "answer_1": "a",
                                                   "answer_2": "b", "label": "1"} for i in range(3)])
    with FakeOpenAIServer(responder=lambda body: "<svg onload=alert(1)>|\nno scores") as server:
        assert main(["evaluate", str(data), "--out", str(tmp_path / "ev"), "--model", "openai-compatible/m",
                     "--base-url", server.base_url, "--no-cache", "--max-retries", "0"]) == 1
        report = check_report(tmp_path / "ev")
        assert "&lt;b&gt;s0\\|&lt;/b&gt;" in report
        assert_inert(report)
        out = tmp_path / "fe"
        assert main(["bench", "faireval", "--data", str(FIX / "faireval_tiny.jsonl"), "--out", str(out),
                     "--model", "openai-compatible/m", "--base-url", server.base_url, "--no-cache",
                     "--max-retries", "0"]) == 1
    reports = [p.read_text() for p in out.rglob("report.md")]
    assert len(reports) >= 2 and any("## Failed units" in r for r in reports)
    for r in reports:
        assert_inert(r)


def test_a_figure_that_fails_to_draw_costs_neither_the_report_nor_a_dead_link(tmp_path, capsys, monkeypatch):
    """A plotting bug (here: every bar chart raises) is reported on stderr and in report.md, and
    report.md and summary.json are written all the same."""
    from chateval.bench import plots

    def broken(*args, **kwargs):
        raise ValueError("'yerr' must not contain negative values")

    monkeypatch.setattr(plots.plt.Axes, "bar", broken)
    out = tmp_path / "run"
    assert main(["bench", "longmemeval", "--data", str(FIX / "lme_tiny.json"), "--systems", "full_context",
                 "--out", str(out), "--embedder", "hash", "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "plot qa_by_type.png not drawn: drawing failed (ValueError" in err and "Traceback" not in err, err
    report = check_report(out, failed=False)  # every linked image exists
    assert "*Plot `qa_by_type.png` not drawn: drawing failed" in report
    assert json.loads((out / "summary.json").read_text())["n_units"] == 5
