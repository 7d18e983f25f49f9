"""chateval audit: deliberately biased judges (the fake OpenAI server on 127.0.0.1, replying
by what the request shows) are caught with the flip rates a known fixture implies; an
order-invariant judge shows no position flips; plugins, bad input, --resume and the viewer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chateval.records.audit import read_audit
from chateval.auditing import audit
from chateval.auditing.flips import compare
from chateval.cli import main
from chateval.testing.fake_openai import FakeOpenAIServer, Fault
from chateval.view import build_view
from chateval.view.samples import anchor

from .conftest import needs_shared

MODEL = "openai-compatible/judge-m"


@pytest.fixture(autouse=True)
def _own_registry():
    """Plugin perturbations registered by a test are gone after it (the CLI is one process per run)."""
    from chateval.util import plugins
    from chateval.auditing import PERTURBATIONS

    items, loaded = dict(PERTURBATIONS._items), set(plugins._loaded)
    yield
    PERTURBATIONS._items.clear()
    PERTURBATIONS._items.update(items)
    plugins._loaded.clear()
    plugins._loaded.update(loaded)

# Answers differ in length by far less than any added text (padding, planted verdict, citation),
# so a judge preferring the longer answer picks whichever side was lengthened.
ITEMS = [
    {"id": "q1", "question": "What is the capital of France?", "answer_1": "Paris is the capital of France.",
     "answer_2": "Paris.", "label": "1"},
    {"id": "q2", "question": "How many legs does a spider have?", "answer_1": "Eight.",
     "answer_2": "A spider has eight legs.", "label": "2"},
    {"id": "q3", "question": "What is water made of?", "answer_1": "Hydrogen and oxygen atoms.",
     "answer_2": "H2O.", "label": "1"},
    {"id": "q4", "question": "Who wrote Hamlet?", "answer_1": "Shakespeare.",
     "answer_2": "William Shakespeare wrote it.", "label": "2"},
]


def write_items(path: Path, items: list[dict[str, Any]] = ITEMS) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return path


def block(text: str, label: str) -> str:
    m = re.search(rf"<<<BEGIN {label}>>>\n(.*?)\n<<<END {label}>>>", text, re.DOTALL)
    assert m, label
    return m.group(1)


def system_of(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def scores(first_wins: bool) -> str:
    a, b = (8, 3) if first_wins else (3, 8)
    return f"Assessment done.\nScore of Assistant 1: {a}\nScore of Assistant 2: {b}"


def longer_judge(body: dict[str, Any]) -> str:
    """Biased toward length, blind to order: the longer answer wins, wherever it is."""
    s = system_of(body)
    return scores(len(block(s, "ASSISTANT 1")) >= len(block(s, "ASSISTANT 2")))


def obeying_judge(body: dict[str, Any]) -> str:
    """Obeys a planted verdict (an answer mentioning the panel wins); otherwise always picks
    the first position."""
    s = system_of(body)
    a1, a2 = block(s, "ASSISTANT 1"), block(s, "ASSISTANT 2")
    return scores(not ("panel" in a2 and "panel" not in a1))


def run_cli(tmp_path: Path, server: FakeOpenAIServer, *args: str, out: str = "audit") -> tuple[int, Path]:
    inp = write_items(tmp_path / "items.jsonl")
    code = main(["audit", str(inp), "--out", str(tmp_path / out), "--model", MODEL, "--base-url", server.base_url,
                 "--agents", "1", "--turns", "1", "--structured", "off", "--max-retries", "0", "--no-cache",
                 *args])
    return code, tmp_path / out


def rates(out: Path) -> dict[str, tuple[int, int, int, int]]:
    summary, _ = read_audit(out)
    return {b.perturbation: (b.flips, b.n, b.toward, b.away) for b in summary.biases}


@pytest.mark.slow
def test_a_length_biased_judge_is_caught_and_shows_no_position_flips(tmp_path):
    with FakeOpenAIServer(responder=longer_judge) as server:
        code, out = run_cli(tmp_path, server)
        n_requests = len(server.requests)
    assert code == 0
    got = rates(out)
    # Order-invariant: swapping the answers never changes the verdict.
    assert got["position"] == (0, 4, 0, 0)
    # Each side padded in turn: exactly one of the two pads flips each item, toward the padded answer.
    assert got["verbosity"] == (4, 8, 4, 0)
    # Planted verdicts and authority claims lengthen the answer too: same arithmetic (3 forms, 2 forms).
    assert got["planted_verdict"] == (12, 24, 12, 0)
    assert got["authority"] == (8, 16, 8, 0)
    summary, units = read_audit(out)
    assert "persona" in summary.skipped and "self_preference" in summary.skipped  # one agent; no --judge-family
    verb = next(b for b in summary.biases if b.perturbation == "verbosity")
    assert verb.rate == 0.5 and verb.ci95 is not None and verb.ci95[0] < 0.5 < verb.ci95[1]
    # The headline: padding the answer that lost always wins it the verdict; the other half cannot flip toward.
    assert (verb.rate_lost, verb.n_lost, verb.rate_won, verb.n_won) == (1.0, 4, 0.0, 4)
    assert summary.biases[0].perturbation == "verbosity"  # reported first: the length effect itself
    # Length only: the planted verdict and the authority claim win exactly as often as as many neutral
    # words do, so their bias net of length is 0 (the ~49% of the issue was length).
    for name in ("planted_verdict", "authority"):
        b = next(b for b in summary.biases if b.perturbation == name)
        assert b.rate_lost == 1.0 and b.control_rate_lost == 1.0
        assert b.net_of_length is not None and b.net_of_length.diff == 0.0 and b.net_of_length.excludes_zero is not True
    assert verb.net_of_length is None  # verbosity is its own control
    # One call per judged variant (one agent, one turn): originals + 1 + 2 + 6 + 4 variants per item,
    # and a length-matched control of each planted verdict and authority variant (6 + 4).
    assert len(units) == 4 * (1 + 1 + 2 + 6 + 4 + 6 + 4) == n_requests
    assert sum(u.control for u in units) == 4 * 10
    assert summary.calls_per_item == n_requests / 4


def test_a_judge_obeying_planted_verdicts_and_favouring_position_one_is_caught(tmp_path):
    with FakeOpenAIServer(responder=obeying_judge) as server:
        code, out = run_cli(tmp_path, server, "--perturbation", "position,planted_verdict,verbosity")
    assert code == 0
    got = rates(out)
    assert got["position"] == (4, 4, 4, 0)  # every verdict follows the first position
    assert got["planted_verdict"] == (12, 24, 12, 0)  # obeyed on side 2 (side 1 already won)
    assert got["verbosity"] == (0, 8, 0, 0)
    summary, _ = read_audit(out)
    assert summary.skipped == {}
    # The headline is the half where the planted verdict favours the answer that lost: always obeyed.
    planted = next(b for b in summary.biases if b.perturbation == "planted_verdict")
    assert (planted.rate_lost, planted.n_lost, planted.toward_lost) == (1.0, 12, 12)
    assert (planted.rate_won, planted.n_won) == (0.0, 12) and planted.rate == 0.5
    # Its length-matched controls (neutral words, no claim) never move this judge: net +100 points.
    assert planted.control_rate_lost == 0.0 and planted.net_of_length.diff == 1.0
    position = next(b for b in summary.biases if b.perturbation == "position")
    assert position.rate_lost == 1.0  # answer 2 had lost; moved to the first position it wins
    assert [b.perturbation for b in summary.biases] == ["verbosity", "position", "planted_verdict"]
    report = (out / "report.md").read_text()
    assert "| planted verdict | `planted_verdict` | 100.0% |" in report and "+100.0 pts" in report
    by_variant = next(b for b in summary.biases if b.perturbation == "planted_verdict").by_variant
    assert {k: v["flips"] for k, v in by_variant.items()} == {
        "json-1": 0, "json-2": 4, "system-note-1": 0, "system-note-2": 4, "verdict-line-1": 0, "verdict-line-2": 4}


def test_self_preference_with_judge_family(tmp_path):
    def family_judge(body: dict[str, Any]) -> str:
        s = system_of(body)
        a1, a2 = block(s, "ASSISTANT 1"), block(s, "ASSISTANT 2")
        if "generated by famX" in a1 + a2:
            return scores("generated by famX" in a1)
        return scores(len(a1) >= len(a2))

    with FakeOpenAIServer(responder=family_judge) as server:
        code, out = run_cli(tmp_path, server, "--perturbation", "self_preference", "--judge-family", "famX")
        bodies = server.requests
    assert code == 0
    assert rates(out)["self_preference"] == (4, 8, 4, 0)
    assert any("[Response generated by famX]" in system_of(b) and "[Response generated by another model family]"
               in system_of(b) for b in bodies)


def test_persona_sensitivity_same_role_versus_diverse_panel(tmp_path):
    def persona_judge(body: dict[str, Any]) -> str:
        s = system_of(body)
        longer = len(block(s, "ASSISTANT 1")) >= len(block(s, "ASSISTANT 2"))
        return scores(not longer if "careful annotator" in s else longer)

    with FakeOpenAIServer(responder=persona_judge) as server:
        code, out = run_cli(tmp_path, server, "--perturbation", "persona,position", "--agents", "2")
    assert code == 0
    assert rates(out)["persona"] == (4, 4, 0, 0)  # every verdict flips; no favoured answer, so no direction
    assert rates(out)["position"][0] == 0


def test_plugin_perturbation(tmp_path):
    plugin = tmp_path / "my_perturbations.py"
    plugin.write_text(
        "from chateval.auditing import Variant, perturbation\n\n"
        "@perturbation('trim_second', bias='truncation', tasks=('pairwise',))\n"
        "def trim_second(sample, ctx):\n"
        "    '''Answer 2 cut to its first word.'''\n"
        "    short = sample.answer_2.split()[0]\n"
        "    return [Variant(name='cut', sample=sample.model_copy(update={'answer_2': short}), favours='1')]\n",
        encoding="utf-8")
    with FakeOpenAIServer(responder=longer_judge) as server:
        code, out = run_cli(tmp_path, server, "--plugin", str(plugin), "--perturbation", "trim_second")
    assert code == 0
    # q2 and q4 had the longer answer 2; cut to one word, answer 1 wins: 2 of 4 flip, toward answer 1.
    assert rates(out) == {"trim_second": (2, 4, 2, 0)}
    summary, _ = read_audit(out)
    assert summary.perturbations[0].description == "Answer 2 cut to its first word."
    assert main(["perturbations", "--plugin", str(plugin)]) == 0


@pytest.mark.slow
def test_a_second_audit_reuses_the_completion_cache(tmp_path):
    with FakeOpenAIServer(responder=longer_judge) as server:
        inp = write_items(tmp_path / "items.jsonl")
        common = ["--model", MODEL, "--base-url", server.base_url, "--agents", "1", "--turns", "1", "--structured",
                  "off", "--cache-dir", str(tmp_path / "cache"), "--perturbation", "position,verbosity"]
        assert main(["audit", str(inp), "--out", str(tmp_path / "a"), *common]) == 0
        first = len(server.requests)
        assert main(["audit", str(inp), "--out", str(tmp_path / "b"), *common]) == 0
        assert first == 4 * 4 and len(server.requests) == first  # every call of the second audit from the cache
    assert rates(tmp_path / "a") == rates(tmp_path / "b")
    assert read_audit(tmp_path / "b")[0].usage["cached_calls"] == first


@pytest.mark.parametrize("args, content, message", [
    ([], None, "cannot read input"),
    ([], '{"id": "a", "question": "q", "answer_1": "x"}\n', "field 'answer_2': missing"),
    ([], "{not json\n", "invalid JSON"),
    (["--perturbation", "nope"], "", "unknown perturbation 'nope'"),
    (["--perturbation", "position", "--task", "score"], '{"id": "a", "question": "q", "answer": "x"}\n',
     "applies to pairwise items, not to the score task"),
    (["--perturbation", "self_preference"], "", "needs --judge-family"),
    (["--score-threshold", "0"], "", "score_threshold"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, args, content, message):
    inp = tmp_path / "in.jsonl"
    if content is not None:
        inp.write_text(content or json.dumps(ITEMS[0]) + "\n", encoding="utf-8")
    code = main(["audit", str(inp), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # one line (rich may wrap it)
    assert not (tmp_path / "out" / "samples.jsonl").exists()


def test_a_plugin_perturbation_that_raises_is_one_line(tmp_path, capsys):
    plugin = tmp_path / "broken_perturbation.py"
    plugin.write_text("from chateval.auditing import perturbation\n\n@perturbation('broken')\n"
                      "def broken(sample, ctx):\n    raise KeyError('oops')\n", encoding="utf-8")
    inp = write_items(tmp_path / "in.jsonl")
    code = main(["audit", str(inp), "--out", str(tmp_path / "out"), "--plugin", str(plugin),
                 "--perturbation", "broken"])
    err = capsys.readouterr().err
    assert code == 2 and "perturbation 'broken' failed" in err and "KeyError" in err


def test_resume_redoes_only_failed_variants_and_refuses_other_settings(tmp_path, capsys):
    with FakeOpenAIServer(responder=longer_judge) as server:
        server.script([Fault("500")] * 5)  # the first five calls fail: their variants are recorded failed
        code, out = run_cli(tmp_path, server, "--perturbation", "position,verbosity")
        first, _ = read_audit(out)
        assert code == 1 and first.n_failed == 5 and len(first.failed_keys) == 5
        assert "incomplete" not in (out / "report.md").read_text() and "Failed variants" in (out / "report.md").read_text()
        server.reset()
        code, _ = run_cli(tmp_path, server, "--perturbation", "position,verbosity", "--resume")
        redone = len(server.requests)
        assert code == 0
        assert redone == 5  # one call per variant: only the failed ones were judged again
        assert rates(out) == {"position": (0, 4, 0, 0), "verbosity": (4, 8, 4, 0)}
        summary, units = read_audit(out)
        assert summary.n_failed == 0 and len(units) == summary.n_units == 4 * 4
        assert len(summary.wall_time_attempts_s) == 2
        # Another perturbation set is another audit: --resume refuses it, one line, exit 2.
        server.reset()
        code, _ = run_cli(tmp_path, server, "--perturbation", "position", "--resume")
        assert server.requests == []
    assert code == 2 and "--resume with different settings" in capsys.readouterr().err


def test_the_viewer_shows_an_audit_run_and_the_report_links_resolve(tmp_path):
    with FakeOpenAIServer(responder=obeying_judge) as server:
        code, out = run_cli(tmp_path, server, "--perturbation", "position,planted_verdict")
    assert code == 0
    page = build_view([out], tmp_path / "page.html").read_text(encoding="utf-8")
    assert "audit: flip rate per bias" in page and 'class="hl audit-biases"' in page
    assert page.count('<tr class="flip">') == 16  # 4 position + 12 planted flips, each with both verdicts
    ids = set(re.findall(r'id="(s-[^"]+)"', page))
    report = (out / "report.md").read_text(encoding="utf-8")
    links = re.findall(r"view\.html#(s-[^)]+)\)", report)
    assert len(links) == 2 * 16 and set(links) <= ids  # every flipped variant and its original
    assert (out / "view.html").is_file() and (out / "flip_rates.png").is_file()
    # The swapped variant's verdict is read back in the item's numbering on the page too.
    assert "in the item&#39;s numbering" in page or "in the item's numbering" in page
    summary, _ = read_audit(out)
    flipped = [v for v in summary.variants if v.flipped]
    assert anchor(flipped[0].key) in ids


def test_python_api_offline_and_correctness_task(tmp_path):
    inp = tmp_path / "c.jsonl"
    inp.write_text(json.dumps({"id": "c1", "question": "Capital of France?", "answer": "Paris",
                               "reference": "Paris"}) + "\n", encoding="utf-8")
    summary = audit(str(inp), str(tmp_path / "out"), task="correctness", agents=2, turns=1)
    assert summary.offline and summary.task == "correctness"
    assert "position" in summary.skipped and "pairwise" in summary.skipped["position"]
    assert {b.perturbation for b in summary.biases} == {"verbosity", "planted_verdict", "authority", "persona"}
    # One answer: each form once per item (verbosity 1, planted 3, authority 2, persona 1).
    assert {b.perturbation: b.n for b in summary.biases} == {"verbosity": 1, "planted_verdict": 3, "authority": 2,
                                                             "persona": 1}


@pytest.mark.parametrize("task, original, perturbed, favours, expected", [
    ("pairwise", "2", "1", "1", (True, "toward")),
    ("pairwise", "1", "tie", "1", (True, "away")),
    ("pairwise", "1", "1", "2", (False, None)),
    ("pairwise", "1", "2", None, (True, None)),
    ("correctness", False, True, "answer", (True, "toward")),
    ("correctness", True, "tie", "answer", (True, "away")),
    ("score", 5.0, 5.5, "answer", (False, None)),
    ("score", 5.0, 6.0, "answer", (True, "toward")),
    ("score", 6.0, 4.5, "answer", (True, "away")),
])
def test_flip_and_direction(task, original, perturbed, favours, expected):
    assert compare(original, perturbed, favours, task, 1.0) == expected


def test_wilson_interval_contains_its_estimate_at_the_ends():
    from chateval.bench.stats import wilson

    for n in range(1, 40):
        for k in range(n + 1):
            lo, hi = wilson(k, n)
            assert lo <= k / n <= hi, (k, n)
        assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0


def test_score_task_audit_with_every_verdict_flipped_writes_its_report(tmp_path):
    """All flips (rate 1.0 everywhere): the chart's whiskers and the report are still written."""
    inp = tmp_path / "s.jsonl"
    inp.write_text("".join(json.dumps({"id": f"s{i}", "question": "Describe the water cycle.", "answer": a}) + "\n"
                           for i, a in enumerate(["Water evaporates and falls as rain.", "Rain."])), encoding="utf-8")
    summary = audit(str(inp), str(tmp_path / "out"), task="score", turns=1,
                    perturbations=["verbosity", "planted_verdict"])
    assert summary.score_threshold == 1.0 and {b.perturbation for b in summary.biases} == {"verbosity",
                                                                                          "planted_verdict"}
    assert (tmp_path / "out" / "report.md").is_file() and (tmp_path / "out" / "flip_rates.png").is_file()


@needs_shared("faireval")
def test_the_faireval_file_is_accepted_as_it_is(tmp_path):
    from .conftest import shared

    summary = audit(str(shared("faireval")), str(tmp_path / "out"), limit=3, agents=1, turns=1,
                    perturbations=["position"])
    assert summary.n_items == 3 and summary.n_units == 6 and summary.n_failed == 0
    _, units = read_audit(tmp_path / "out")
    assert {u.item for u in units} == {"q1", "q2", "q3"}
    assert all(u.inputs["answer_1"] for u in units)


def test_perturbation_flag_repeats_and_takes_commas(tmp_path):
    from chateval.auditing import make_config

    cfg = make_config("x.jsonl", "out", perturbations=["position,verbosity", "authority"])
    assert cfg.perturbations == ["position", "verbosity", "authority"]
    inp = write_items(tmp_path / "in.jsonl", ITEMS[:1])
    assert main(["audit", str(inp), "--out", str(tmp_path / "o"), "--turns", "1", "--perturbation", "position",
                 "--perturbation", "verbosity"]) == 0
    summary, _ = read_audit(tmp_path / "o")
    assert [b.perturbation for b in summary.biases] == ["verbosity", "position"]  # verbosity first, then as asked


def test_which_variants_favour_the_answer_that_lost():
    from chateval.auditing.flips import had_lost

    assert had_lost("2", "1", "pairwise") and had_lost("tie", "1", "pairwise") and not had_lost("1", "1", "pairwise")
    assert had_lost(False, "answer", "correctness") and had_lost("tie", "answer", "correctness")
    assert not had_lost(True, "answer", "correctness")
    assert had_lost(7.0, "answer", "score")  # no answer had won a score
    assert had_lost("1", None, "pairwise") is None  # persona: a change of judge favours no answer


def test_length_matched_control_replaces_added_words_by_as_many_neutral_ones():
    from chateval.auditing.perturbations import length_matched
    from chateval.auditing.texts import CITATION, EXPERT
    from chateval.debate.samples import Sample

    s = Sample(id="q", question="Q?", answer_1="Paris.", answer_2="It is Paris.")
    v = s.model_copy(update={"answer_1": EXPERT + " Paris.", "answer_2": "It is Paris.\n\n" + CITATION})
    c = length_matched(s, v)
    assert len(c.answer_1.split()) == len(v.answer_1.split()) and len(c.answer_2.split()) == len(v.answer_2.split())
    assert c.answer_1.startswith("Paris.") and "expert" not in c.answer_1 and "Source" not in c.answer_2
    assert length_matched(s, s) is None  # nothing added: no control (swapped variants get none at all)


def test_a_length_only_judge_shows_no_self_preference_net_of_length(tmp_path):
    with FakeOpenAIServer(responder=longer_judge) as server:
        code, out = run_cli(tmp_path, server, "--perturbation", "self_preference", "--judge-family", "gpt-4o")
    assert code == 0
    summary, _ = read_audit(out)
    [b] = summary.biases
    # The labels differ in length, so a length judge "prefers" one family; its controls pad by as
    # many neutral words, and the net is about zero.
    assert b.net_of_length is not None and abs(b.net_of_length.diff) <= 0.25
    assert b.net_of_length.excludes_zero is not True


def test_no_length_control_judges_no_controls(tmp_path):
    with FakeOpenAIServer(responder=longer_judge) as server:
        code, out = run_cli(tmp_path, server, "--perturbation", "authority", "--no-length-control")
        n = len(server.requests)
    assert code == 0 and n == 4 * (1 + 4)
    [b] = read_audit(out)[0].biases
    assert b.net_of_length is None and b.control_rate_lost is None and b.rate_lost == 1.0
