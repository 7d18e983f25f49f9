"""The run viewer on real runs of each command (offline model): content, escaping, comparison,
errors, and the evaluate report."""

from __future__ import annotations

import json
import re

import pytest

from chateval.util.errors import InputError
from chateval.evaluation.report import label_agreement
from chateval.view import NotARunDir, build_view, load_run

from .conftest import SHARED, read_jsonl
from .view_fixtures import SCRIPT, evaluate_run, faireval_run, head2head_run, longmemeval_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("view")
    return {"ev": evaluate_run(tmp), "fe": faireval_run(tmp), "lme": longmemeval_run(tmp), "h2h": head2head_run(tmp),
            "tmp": tmp}


def page(path) -> str:
    text = path.read_text()
    assert "://" not in text  # self-contained: no URL of any scheme, so nothing is fetched
    return text


@pytest.mark.slow
def test_evaluate_records_inputs_and_transcript(runs):
    rec = read_jsonl(runs["ev"] / "samples.jsonl")[0]
    assert rec["inputs"]["question"] and SCRIPT in rec["inputs"]["answer_2"]
    kinds = {(t["order"], t["kind"]) for t in rec["transcript"]}
    assert {("original", "debate"), ("original", "summary"), ("swapped", "debate")} <= kinds


def test_evaluate_view_shows_the_debate_in_order_and_escapes_text(runs):
    out = build_view([runs["ev"]])
    assert out == runs["ev"] / "view.html"
    text = page(out)
    assert SCRIPT not in text and "&lt;script&gt;document.title=" in text
    rec = read_jsonl(runs["ev"] / "samples.jsonl")[0]
    # the first sample's original-order turns appear in the recorded order
    block = text[text.index(f'data-key="{rec["id"]}"'):]
    block = block[:block.index('data-order="swapped"')]
    speakers = re.findall(r'class="turn (\w+)" data-speaker="([^"]+)" data-round="(\d+)"', block)
    want = [(t["kind"], t["speaker"], str(t["round"])) for t in rec["transcript"] if t["order"] == "original"]
    assert speakers == want and any(k == "summary" for k, _, _ in speakers)
    assert "summarizer</span>" in block
    assert 'data-flag="order"' in text and 'data-flag="disagrees"' in text
    # persona names and colours, the aggregated verdict next to the human label
    assert "General Public" in text and "--c:#1f77b4" in text and "human label: <b>" in text


def test_view_flags_match_the_records(runs):
    view = load_run(runs["ev"])
    recs = {r["id"]: r for r in read_jsonl(runs["ev"] / "samples.jsonl")}
    for s in view.samples:
        r = recs[s.key]
        assert s.disagrees == (r["label"] != r["verdict"]["winner"])
        assert s.order_disagreement == bool(r["order_disagreement"])
        assert s.split == (len({a["winner"] for a in r["agents"]}) > 1)


def test_faireval_view_reads_the_sub_runs_and_inlines_plots(runs):
    view = load_run(runs["fe"])
    assert {s.setting for s in view.samples} == {"single", "multi"}
    assert {s.category for s in view.samples} == {"generic", "coding"}
    assert view.plots and all(name.endswith(".png") for name, _ in view.plots)
    text = page(build_view([runs["fe"]]))
    assert text.count("data:image/png;base64,") == len(view.plots)
    assert '<option>coding</option>' in text
    from chateval.view.build import settings
    assert set(settings(view)["panels"]) == {"single", "multi"}  # each setting's panel in the header


def test_memory_views_show_answer_context_gold_and_judges(runs):
    recs = read_jsonl(runs["lme"] / "samples.jsonl")
    view = load_run(runs["lme"])
    assert {s.system for s in view.samples} == {"full_context", "retrieval"}
    by_key = {s.key: s for s in view.samples}
    for rec in recs:
        s = by_key[rec["key"]]
        assert s.qid == rec["question_id"] and s.category == rec["question_type"]
        assert s.memory["answer"] == rec["answer"] and s.inputs["gold"] == rec["gold"]
        assert "\n".join(line for line, _ in s.context_gold) == rec["context"]
        assert s.single_judge == rec["judge"]["single"]
        [debate] = s.debates  # the debate judge, read from the record's own transcript
        assert [t["text"] for t in debate.order_turns["original"]] == [t["text"] for t in rec["judge"]["debate"]["transcript"]]
    # the retrieval system's ranking with the gold session (answer_*) marked, and only it
    ret = next(s for s in view.samples if s.system == "retrieval" and s.qid == "q-city")
    ranked = {r.level: r for r in ret.rankings}
    assert [i for i, gold in ranked["session"].items if gold] == ["answer_q-city"]
    assert ranked["turn"].gold and all(i.startswith("answer_q-city") for i, g in ranked["turn"].items if g)
    # the full-context system names sessions in its context: the gold session's block is marked
    full = next(s for s in view.samples if s.system == "full_context" and s.qid == "q-city")
    marked = [line for line, gold in full.context_gold if gold]
    assert marked and any("Lisbon" in line for line in marked) and not any("pasta" in line for line in marked)
    text = page(build_view([runs["lme"]]))
    assert "exactly what the system gave the model" in text and '<span class="rank gold">' in text
    assert text.count('class="row"') == 2  # one row per question, the two systems side by side in it
    # offline answers cost $0 for every system: the cost plot would be a degenerate axis, so the
    # report says why it is missing instead of drawing it
    report = (runs["lme"] / "report.md").read_text()
    assert "*Plot `accuracy_vs_cost.png` not drawn: every system has the same known answer cost (0)" in report
    assert not (runs["lme"] / "accuracy_vs_cost.png").exists() and (runs["lme"] / "qa_by_type.png").exists()
    h2h = load_run(runs["h2h"])
    assert h2h.samples and all(s.debates for s in h2h.samples)
    assert h2h.samples[0].system == "full_context vs retrieval"
    # each system's context, exactly as given to the model, is in the record and on the page
    rec = read_jsonl(runs["h2h"] / "samples.jsonl")[0]
    contexts = h2h.samples[0].memory["contexts"]
    assert set(contexts) == {"A", "B"} and contexts == rec["contexts"] and "## Session" in contexts["A"]
    text = page(build_view([runs["h2h"]], out=runs["tmp"] / "h2h.html", context_chars=50))
    assert "more characters not shown (--context-chars)" in text


def test_context_cap_counts_what_it_leaves_off(runs, tmp_path):
    from chateval.view.build import cap_context
    full = next(s for s in load_run(runs["lme"]).samples if s.system == "full_context")
    context = "\n".join(line for line, _ in full.context_gold)
    cap_context(full, 200)
    kept = "\n".join(line for line, _ in full.context_gold)
    assert len(kept) <= 200 and context.startswith(kept) and full.context_cut == len(context) - len(kept) - 1
    text = page(build_view([runs["lme"]], out=tmp_path / "cap.html", context_chars=200))
    assert f"… {full.context_cut} more characters not shown" in text


def test_two_runs_side_by_side(runs):
    other = evaluate_run(runs["tmp"], "ev_one", "--agents", "1", "--strategy", "one_by_one")
    text = page(build_view([runs["ev"], other], out=runs["tmp"] / "cmp.html"))
    ids = [r["id"] for r in read_jsonl(runs["ev"] / "samples.jsonl")]
    assert text.count('class="row"') == len(ids)  # one row per shared sample, a cell per run
    assert "grid-template-columns:repeat(2," in text and ">ev_one</b>" in text


def test_view_command_prints_the_page_and_refuses_bad_dirs(runs, tmp_path, capsys):
    from chateval.cli import main
    out = tmp_path / "page.html"
    assert main(["view", str(runs["ev"]), str(runs["fe"]), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.is_file()
    assert main(["view", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "no such run directory" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "samples.jsonl").write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    assert main(["view", str(bad)]) == 2
    assert f"{bad / 'samples.jsonl'}:2: not valid JSON" in capsys.readouterr().err.replace("\n", "")


def test_a_comparison_never_replaces_a_runs_own_page(runs, tmp_path, monkeypatch, capsys):
    from chateval.cli import main
    other = evaluate_run(runs["tmp"], "ev_cmp", "--agents", "1", "--strategy", "one_by_one")
    assert main(["view", str(runs["ev"])]) == 0
    own = runs["ev"] / "view.html"
    before = own.read_bytes()
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert main(["view", str(runs["ev"]), str(other)]) == 0
    assert capsys.readouterr().out.strip() == "compare.html" and (tmp_path / "compare.html").is_file()
    assert own.read_bytes() == before and not (other / "view.html").exists()
    # --out naming a run's own page is refused (one line, exit 2) and the page is left as it was.
    assert main(["view", str(runs["ev"]), str(other), "--out", str(own)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "a comparison of 2 runs goes to a file of its own" in err
    assert own.read_bytes() == before


def test_a_comparison_tables_the_settings_that_differ(runs, tmp_path):
    other = evaluate_run(runs["tmp"], "ev_cmp2", "--agents", "1", "--strategy", "one_by_one")
    text = page(build_view([runs["ev"], other, runs["fe"]], out=tmp_path / "c.html"))
    table = text[text.index('<table class="hl settings-diff">'):]
    table = table[:table.index("</table>")]
    rows = {m[0]: m[1:] for m in (re.findall(r"<td>(.*?)</td>", r) for r in table.split("<tr>")[2:])}
    assert rows["strategy"] == ["simultaneous_summarizer", "one_by_one", "–"]
    assert rows["agents"] == ["2", "1", "–"]
    # A benchmark's per-setting panels: one row per setting, not one JSON blob.
    assert rows["panels.multi.agents"] == ["–", "–", "2"] and rows["panels.single.strategy"] == ["–", "–", "one_by_one"]
    assert "model" not in rows  # the same in every run: listed once under the shared settings
    shared = text[text.index('class="settings-same"'):]
    assert "<td>model</td><td>offline</td>" in shared[:shared.index("</details>")]
    assert "&#34;panels&#34;" not in text.split("full config and summary")[0]  # no JSON blob in the header
    alone = page(build_view([runs["fe"]], out=tmp_path / "fe.html"))  # a run's own page: the same rows
    assert "<td>panels.multi.agents</td><td>2</td>" in alone and "&#34;multi&#34;" not in alone.split("full config")[0]


def test_not_a_run_dir_is_a_one_line_input_error(tmp_path):
    with pytest.raises(NotARunDir, match="no such run directory"):
        build_view([tmp_path / "missing"])
    with pytest.raises(NotARunDir, match="not a run directory"):
        build_view([tmp_path])
    assert issubclass(NotARunDir, InputError) and NotARunDir.exit_code == 2


@pytest.mark.slow
@pytest.mark.parametrize("bench", ["topical_chat", "locomo", "theanine"])
def test_shared_data_runs_render(tmp_path, bench):
    from chateval.cli import main
    data = {"topical_chat": SHARED / "topical_chat", "locomo": SHARED / "locomo" / "locomo_dev2.json",
            "theanine": SHARED / "theanine" / "sample_dialogue.json"}[bench]
    if not data.exists():
        pytest.skip(f"{data} not available")
    args = {"topical_chat": ["topical-chat", "--limit", "6", "--model", "offline"],
            "locomo": ["locomo", "--systems", "full_context", "--answer-model", "offline", "--embedder", "hash",
                       "--limit", "2"],
            "theanine": ["teafarm", "--systems", "retrieval", "--answer-model", "offline", "--embedder", "hash",
                         "--judge", "both"]}[bench]
    assert main(["bench", *args, "--data", str(data), "--out", str(tmp_path / "r")]) == 0
    view = load_run(tmp_path / "r")
    recs = read_jsonl(tmp_path / "r" / "samples.jsonl") if bench != "topical_chat" else []
    if bench == "locomo":  # one sample per question, with the gold evidence marked among the retrieved ids
        assert len(view.samples) == sum(len(r["qa"]) for r in recs)
        qa = recs[0]["qa"][0]
        s = next(s for s in view.samples if s.key == f"{recs[0]['key']}#{qa['qa_index']}")
        assert s.category == qa["category_name"] and s.memory["prediction"] == qa["prediction"]
    if bench == "topical_chat":  # calls summed over the sub-runs' records, each counted once
        assert view.usage["calls"] == sum(s["usage"]["calls"] for s in view.summary["settings"].values()) > 0
        assert all(s.debates and all(d.order_turns for d in s.debates) for s in view.samples if s.setting != "baselines")
    if bench == "theanine":  # the debate judge's transcript is in the record and on the page, beside the single judge
        assert all(len(s.debates) == 1 and s.debates[0].order_turns and s.single_judge for s in view.samples)
    assert view.samples
    page(build_view([tmp_path / "r"]))


# --- the evaluate report ---------------------------------------------------------------------
def test_evaluate_writes_a_report_with_agreement(runs):
    report = (runs["ev"] / "report.md").read_text()
    summary = json.loads((runs["ev"] / "summary.json").read_text())
    recs = read_jsonl(runs["ev"] / "samples.jsonl")
    hits = sum(r["label"] == r["verdict"]["winner"] for r in recs)
    assert summary["agreement"]["accuracy"]["value"] == pytest.approx(hits / len(recs))
    assert f"accuracy: {100 * hits / len(recs):.1f}% (n={len(recs)})" in report
    assert "Cohen's kappa" in report and "order disagreement" in report and "parse failures" in report
    ci = summary["agreement"]["kappa_ci95"]
    assert ci is None or f"95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" in report
    assert f"chateval view {runs['ev']}" in report


def test_correctness_labels_are_compared_as_verdicts(tmp_path):
    from chateval.cli import main
    from .conftest import EXAMPLES
    assert main(["evaluate", str(EXAMPLES / "correctness.jsonl"), "--task", "correctness", "--model", "offline",
                 "--out", str(tmp_path / "c"), "--no-cache"]) == 0
    recs = {r["id"]: r for r in read_jsonl(tmp_path / "c" / "samples.jsonl")}
    for s in load_run(tmp_path / "c").samples:  # "correct" / "incorrect" against True / False
        assert s.disagrees == ((recs[s.key]["label"] == "correct") != recs[s.key]["verdict"]["correct"])


def test_score_report_has_aspect_means_and_correlations(tmp_path):
    from chateval.cli import main
    from .conftest import EXAMPLES, write_jsonl
    rows = read_jsonl(EXAMPLES / "score.jsonl")
    rows = [dict(r, aspects=["naturalness", "coherence"], label={"naturalness": i % 3 + 1, "coherence": 3 - i % 2})
            for i, r in enumerate(rows * 2)]
    rows = [dict(r, id=f"s-{i}") for i, r in enumerate(rows)]
    data = write_jsonl(tmp_path / "score.jsonl", rows)
    assert main(["evaluate", str(data), "--task", "score", "--model", "offline", "--agents", "1", "--turns", "1",
                 "--out", str(tmp_path / "sc"), "--no-cache"]) == 0
    report = (tmp_path / "sc" / "report.md").read_text()
    agr = json.loads((tmp_path / "sc" / "summary.json").read_text())["agreement"]
    assert set(agr["aspect_means"]) == {"naturalness", "coherence"}
    assert "| aspect | panel mean | Spearman | Kendall |" in report
    for a, m in agr["aspect_means"].items():
        sp = agr["aspects"][a]["spearman"]
        cell = f"undefined ({sp['reason']}; n={sp['n']})" if sp["value"] is None else f"{sp['value']:.3f} (n={sp['n']})"
        assert f"| {a} | {m:.2f} | {cell} |" in report


def test_label_agreement_hand_computed():
    def rec(label, winner):
        return {"status": "ok", "label": label, "verdict": {"winner": winner}}
    a = label_agreement([rec("1", "1"), rec("2", "2"), rec("tie", "1"), rec("1", "1")], "pairwise")
    # po = 3/4; gold (1:2, 2:1, tie:1), pred (1:3, 2:1): pe = (2*3 + 1*1)/16 = 7/16; kappa = (12/16-7/16)/(9/16) = 5/9
    assert a["accuracy"]["value"] == pytest.approx(0.75) and a["kappa"]["value"] == pytest.approx(5 / 9)
    # The bootstrap interval, drawn in sample-id order: the same whatever order the records finished in.
    many = [dict(rec(lab, win), id=f"s{i:02d}") for i, (lab, win) in enumerate(
        [("1", "1"), ("2", "2"), ("tie", "1"), ("1", "1"), ("2", "tie"), ("tie", "tie"), ("2", "2"), ("1", "2")] * 2)]
    b = label_agreement(many, "pairwise")
    lo, hi = b["kappa_ci95"]
    assert lo <= b["kappa"]["value"] <= hi and b["kappa_bootstrap"]["used"] > 900
    assert label_agreement(many[::-1], "pairwise") == b
    scores = [{"status": "ok", "label": {"fluency": h}, "verdict": {"score": p, "scores": {"fluency": p}}}
              for p, h in [(1, 1), (2, 3), (3, 2), (4, 4)]]
    s = label_agreement(scores, "score")
    assert s["aspect_means"]["fluency"] == pytest.approx(2.5)
    assert s["aspects"]["fluency"]["spearman"]["value"] == pytest.approx(0.8)  # d = 0,1,1,0: 1 - 6*2/60
    assert label_agreement([rec(None, "1")], "pairwise") == {}


def test_label_agreement_has_its_baselines_beside_it(tmp_path, capsys, monkeypatch):
    def rec(label, winner):
        return {"status": "ok", "label": label, "verdict": {"winner": winner}}
    a = label_agreement([rec("1", "1"), rec("2", "2"), rec("tie", "1"), rec("1", "1")], "pairwise")
    # gold 1:2, 2:1, tie:1 -> always "1" agrees 2/4; chance = (2*3 + 1*1 + 1*0)/16 = 7/16; 1/k = 1/3
    assert a["majority_baseline"] == {"label": "1", "value": 0.5, "n": 4}
    assert a["chance"]["value"] == pytest.approx(7 / 16) and a["chance"]["uniform"] == pytest.approx(1 / 3)
    # On a real run: in the console table and in report.md, next to the agreement.
    from chateval.cli import main
    from .conftest import EXAMPLES, write_jsonl
    rows = read_jsonl(EXAMPLES / "correctness.jsonl")
    rows = [dict(rows[i % 2], id=f"c{i}", label="correct") for i in range(4)] + [dict(rows[1], id="c4")]
    out = tmp_path / "c"
    monkeypatch.setenv("COLUMNS", "300")  # the console table on one line per row
    assert main(["evaluate", str(write_jsonl(tmp_path / "in.jsonl", rows)), "--task", "correctness",
                 "--model", "offline", "--out", str(out), "--no-cache"]) == 0
    agr = json.loads((out / "summary.json").read_text())["agreement"]
    assert agr["majority_baseline"] == {"label": True, "value": 0.8, "n": 5}
    recs = read_jsonl(out / "samples.jsonl")
    said_correct = sum(r["verdict"]["correct"] is True for r in recs) / 5
    assert agr["chance"]["value"] == pytest.approx(0.8 * said_correct + 0.2 * (1 - said_correct))
    base = (f"always answering the majority label 'correct': 80.0%; chance agreement "
            f"{100 * agr['chance']['value']:.1f}% (verdict and label mixes independent; 1/2 = 50.0%)")
    assert f"  - read against: {base}" in (out / "report.md").read_text()
    captured = capsys.readouterr()
    line = next(ln for ln in (captured.out + captured.err).splitlines() if "agreement with labels" in ln)
    assert f"of 5 ({base})" in line


def test_msc_response_run_shows_responses_and_the_helpfulness_debate(tmp_path):
    """msc-response (THEANINE's evaluation): per turn and system, the generated response beside
    the gold one, and the helpfulness panel's debate as a transcript."""
    from chateval.cli import main

    from .conftest import FIXTURES

    out = tmp_path / "msc"
    assert main(["bench", "msc-response", "--data", str(FIXTURES / "msc_release_tiny.jsonl"), "--systems",
                 "retrieval,full_context", "--embedder", "hash", "--answer-model", "offline", "--no-bertscore",
                 "--out", str(out)]) == 0
    recs = read_jsonl(out / "samples.jsonl")
    view = load_run(out)
    assert len(view.samples) == len(recs) > 0
    for s in view.samples:
        rec = next(r for r in recs if r["key"] == s.key)
        assert s.qid == f"{rec['episode']}::t{rec['turn']}"  # both systems' answers to a turn share a row
        if rec.get("kind") == "helpfulness_pair":  # the pairwise helpfulness debate on retrieved memories
            assert s.system == "retrieval vs full_context" and s.memory["memories"] == rec["memories"]
            assert len(s.debates) == 1 and s.debates[0].order_turns  # the panel's turns, in order
            continue
        assert s.system == rec["system"] and s.memory["response"] == rec["response"]
        assert s.inputs["last_turn"] == rec["last_turn"] and s.inputs["gold"] == rec["gold"]
    assert {s.qid for s in view.samples if s.system == "retrieval"} == {s.qid for s in view.samples
                                                                        if s.system == "full_context"} \
        == {s.qid for s in view.samples if s.system == "retrieval vs full_context"}
    html = build_view([out]).read_text()
    assert recs[0]["response"].split()[1] in html
