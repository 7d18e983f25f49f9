"""chateval rejudge: graded answer sets, the judges, their statistics, the CLI (offline: small
fixtures of our own; LLM judges against a fake server on 127.0.0.1)."""

import json
import shutil

import pytest
from sklearn.metrics import cohen_kappa_score

from chateval import read_rejudge, rejudge
from chateval.cli import main
from chateval.datasets.common import DatasetError
from chateval.rejudging import detect, load_set
from chateval.rejudging.judges import parse_judges, read_reply
from chateval.testing.fake_openai import FakeOpenAIServer
from chateval.util.errors import ConfigError

from .conftest import FIXTURES

FX = FIXTURES / "rejudge"
EVER, ZEP, WRONG = FX / "evermemos_tiny.json", FX / "zep_tiny.json", FX / "wrong_tiny.jsonl"
FAST = {"resamples": 200}


def test_each_format_is_detected_and_read():
    assert detect(EVER) == "evermemos" and detect(ZEP) == "zep" and detect(WRONG) == "jsonl"
    assert detect(FX / "lme_hyp.jsonl") == "longmemeval"
    assert detect(FIXTURES / "runs_v0" / "longmemeval") == "run"
    s = load_set(EVER)[0]
    assert len(s.items) == 7 and {it.conversation for it in s.items} == {"locomo_exp_user_0", "locomo_exp_user_1"}
    assert s.recorded_runs() == [("gpt-4o-mini", "1"), ("gpt-4o-mini", "2"), ("gpt-4o-mini", "3")]
    assert s.items[4].question_id == "locomo_1_qa0" and s.items[4].conversation_index == 1
    assert s.answer_model is None  # the fixture's metadata names only the judge
    z = load_set(ZEP)[0]
    assert [v.judge for v in z.items[0].verdicts] == ["zep-grader"] and z.items[5].conversation_index == 1
    lme = load_set(FX / "lme_hyp.jsonl", lme_data=str(FIXTURES / "lme_tiny.json"))[0]
    assert [it.id for it in lme.items] == ["t_job", "t_cat", "t_trip", "t_car_abs"]
    assert lme.items[2].gold == "Lisbon" and lme.items[2].verdicts[0].judge == "gpt-4o-2024-08-06"
    assert lme.items[3].abstention and lme.items[2].category == "temporal-reasoning"
    run = load_set(FIXTURES / "runs_v0" / "longmemeval")
    assert run[0].items and run[0].items[0].verdicts[0].judge == "single:official"


def test_recorded_verdicts_per_run_and_majority(tmp_path):
    s = rejudge(str(EVER), out=str(tmp_path / "o"), judges="recorded", **FAST).sets["evermemos_tiny"]
    r = s.scores["recorded"]
    # Runs by hand: 5/7, 4/7, 4/7 accepted; per item 3,1,1,2 | 3,0,3 of three.
    assert r.per_run == pytest.approx({"1": 5 / 7, "2": 4 / 7, "3": 4 / 7})
    assert r.mean == pytest.approx(13 / 21) and r.accuracy == pytest.approx(4 / 7)
    assert r.categories["2"].mean == pytest.approx(7 / 9) and r.categories["2"].accepted == 2
    assert r.categories["4"].mean == pytest.approx(1 / 3) and r.categories["4"].n == 2
    lo, hi = r.categories["2"].wilson95
    assert lo < 2 / 3 < hi
    # The fixture states 4/7 as its accuracy, which is the majority's, not the per-run mean: flagged.
    assert s.stated == {"accuracy": (pytest.approx(4 / 7), pytest.approx(13 / 21), False)}
    assert "stated rates that differ from ours" in (tmp_path / "o" / "report.md").read_text()


def test_known_wrong_set_gives_false_acceptance(tmp_path):
    s = rejudge(f"{WRONG}:wrong", out=str(tmp_path / "o"), judges="recorded", **FAST).sets["wrong_tiny"]
    assert s.wrong and s.scores["recorded"].false_acceptance
    # Runs: 2/4 and 1/4 accepted (mean 37.5%); majority with a 1-1 tie counted as not accepted: 1/4.
    assert s.scores["recorded"].mean == pytest.approx(0.375) and s.scores["recorded"].accuracy == pytest.approx(0.25)
    assert s.scores["recorded"].categories["4"].mean == pytest.approx(0.75)


def test_errata_ceiling_and_credits_from_a_wrong_gold(tmp_path):
    summ = rejudge(
        str(EVER), str(ZEP), out=str(tmp_path / "o"), judges="recorded,f1", errata=str(FX / "errata_tiny.json"), **FAST
    )
    for label in ("evermemos_tiny", "zep_tiny"):  # by id, and (Zep) by the question's text in its conversation
        e = summ.sets[label].errata
        assert e.matched == 3 and e.wrong_gold == 2 and e.ceiling == pytest.approx(5 / 7)
    e = summ.sets["evermemos_tiny"].errata
    # Wrong gold: qa2 (majority: not accepted) and locomo_1_qa0 (accepted; its answer says May, the
    # corrected gold June): one credit, and it does not match the corrected gold.
    assert e.credits_on_wrong_gold == {"recorded": 1} and e.credits_only_from_wrong_gold == {"recorded": 1}
    f1 = summ.sets["evermemos_tiny"].scores["f1"]
    assert f1.corrected is not None and f1.corrected.mean != f1.mean  # "Counselling" now matches its gold
    rec = summ.sets["evermemos_tiny"].scores["recorded"].corrected
    assert rec.n == 5 and "gold stands" in rec.note


def test_pairs_kappa_and_difference_match_direct_computation(tmp_path):
    out = tmp_path / "o"
    s = rejudge(str(EVER), out=str(out), judges="recorded,f1", f1_threshold=0.5, **FAST).sets["evermemos_tiny"]
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    a = [r["verdicts"]["recorded"] for r in rows]
    b = [r["verdicts"]["f1"] for r in rows]
    (p,) = s.pairs
    assert p.kappa.value == pytest.approx(cohen_kappa_score(a, b))
    assert p.difference["diff"] == pytest.approx(sum(a) / 7 - sum(b) / 7) and p.difference["n_clusters"] == 2
    assert set(s.length) == {"recorded", "f1"} and sum(x.n for x in s.length["f1"].bins.values()) == 7


def test_ranks_and_rank_agreement_across_sets(tmp_path):
    summ = rejudge(str(EVER), str(ZEP), f"{WRONG}:wrong", out=str(tmp_path / "o"), judges="recorded,f1", **FAST)
    assert [r.judge for r in summ.ranks] == ["recorded", "f1"]
    assert set(summ.ranks[0].ranks) == {"evermemos_tiny", "zep_tiny"}  # the known-wrong set is not ranked
    # Zep's grade is the first run: 5/7 against the majority's 4/7.
    assert summ.ranks[0].ranks == {"zep_tiny": 1, "evermemos_tiny": 2}
    assert summ.rank_agreement[0].a == "recorded" and summ.rank_agreement[0].n_sets == 2
    assert read_rejudge(tmp_path / "o").sets.keys() == summ.sets.keys()


def test_bad_inputs_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "a"}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:1: field 'gold' missing"):
        load_set(bad)
    other = tmp_path / "other.json"
    other.write_text('{"x": 1}')
    with pytest.raises(DatasetError, match="not a graded answer set"):
        load_set(other)
    ever = json.loads(EVER.read_text())
    del ever["detailed_results"]["locomo_exp_user_1"][0]["llm_judgments"]
    (tmp_path / "e.json").write_text(json.dumps(ever))
    with pytest.raises(DatasetError, match=r"detailed_results.locomo_exp_user_1\[0\]: field 'llm_judgments' missing"):
        load_set(tmp_path / "e.json")
    with pytest.raises(DatasetError, match="--lme-data"):
        load_set(FX / "lme_hyp.jsonl")
    with pytest.raises(ConfigError, match="unknown judge 'gpt'"):
        parse_judges(["recorded,gpt"])
    with pytest.raises(ConfigError, match="no verdicts of 'nobody'"):
        rejudge(str(EVER), out=str(tmp_path / "o"), judges="recorded:nobody")
    assert main(["rejudge", str(other), "--out", str(tmp_path / "o2")]) == 2
    assert not (tmp_path / "o2").exists()  # nothing written


def test_a_set_without_recorded_verdicts_is_noted(tmp_path):
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"question": "Who?", "gold": "Ana", "answer": "Ana", "category": 4}\n')
    summ = rejudge(str(plain), out=str(tmp_path / "o"), judges="recorded,f1", **FAST)
    assert list(summ.sets["plain"].scores) == ["f1"] and summ.sets["plain"].scores["f1"].accuracy == 1.0
    assert summ.notes == ["plain: no recorded verdicts in the set (no `recorded` column for it)"]
    assert "Note: plain: no recorded verdicts" in (tmp_path / "o" / "report.md").read_text()


def test_read_reply():
    assert read_reply('{"label": "CORRECT"}') is True and read_reply('{"label": "WRONG"}') is False
    assert read_reply("Incorrect: the date differs.") is False and read_reply("yes") is True
    assert read_reply("I cannot tell") is None


def test_cli_llm_judges_offline_resume_and_gates(tmp_path, capsys):
    out = tmp_path / "o"
    args = [
        "rejudge",
        str(EVER),
        f"{WRONG}:w:wrong",
        "--judges",
        "recorded,f1,official,panel",
        "--out",
        str(out),
        "--errata",
        str(FX / "errata_tiny.json"),
        "--resamples",
        "200",
    ]
    assert main(args) == 0
    assert {p.name for p in out.iterdir()} >= {
        "summary.json",
        "report.md",
        "samples.jsonl",
        "config.json",
        "evermemos_tiny",
        "w",
    }
    recs = [json.loads(x) for x in (out / "evermemos_tiny" / "official" / "samples.jsonl").read_text().splitlines()]
    assert len(recs) == 7 + 2  # every item, and the two whose gold the errata correct
    summ = read_rejudge(out)
    assert summ.sets["w"].scores["official"].false_acceptance and summ.model == "offline"
    assert "## w — known wrong" in (out / "report.md").read_text()
    # The viewer reads it as a run: the report, and each question with every set's answer and verdicts.
    assert main(["view", str(out)]) == 0
    page = (out / "view.html").read_text()
    assert "Judges against each other" in page and "When did Ben move?" in page and "a 10k race" in page
    # A second run refuses the folder; --resume keeps every judgement (nothing new is judged).
    assert main(args) == 2
    assert main([*args, "--resume"]) == 0
    assert len((out / "evermemos_tiny" / "official" / "samples.jsonl").read_text().splitlines()) == 9
    assert main([*args, "--overwrite", "--fail-under", "accuracy:evermemos_tiny/recorded=0.9"]) == 4
    assert main([*args, "--overwrite", "--fail-under", "true_rejection:w/recorded=0.7"]) == 0


def test_template_judge_sends_the_users_prompt(tmp_path):
    tpl = tmp_path / "vendor.j2"
    tpl.write_text("MY-JUDGE Q={{ question }} GOLD={{ gold }} ANSWER={{ response }}\nSay CORRECT or WRONG.")

    def responder(req):
        text = req["messages"][-1]["content"]
        return "CORRECT" if "ANSWER=Pepper" in text else "WRONG"

    with FakeOpenAIServer(responder=responder) as server:
        summ = rejudge(
            str(EVER),
            out=str(tmp_path / "o"),
            judges=f"recorded,template:{tpl}",
            model="openai-compatible/m",
            base_url=server.base_url,
            cache=False,
            max_retries=0,
            **FAST,
        )
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert len(prompts) == 7 and all(p.startswith("MY-JUDGE Q=") for p in prompts)
    assert any("GOLD=Pepper ANSWER=Pepper" in p for p in prompts)
    s = summ.sets["evermemos_tiny"].scores["template:vendor"]
    assert s.accuracy == pytest.approx(1 / 7) and not s.offline
    cfg = json.loads((tmp_path / "o" / "evermemos_tiny" / "template_vendor" / "config.json").read_text())
    assert len(cfg["judging"]["judge"]["template_sha256"]) == 64


def test_dry_run_sends_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "o"
    code = main(
        [
            "rejudge",
            str(EVER),
            "--judges",
            "recorded,official",
            "--model",
            "openai/gpt-4o-mini",
            "--out",
            str(out),
            "--dry-run",
            "--json",
        ]
    )
    assert code == 0 and not out.exists()
    est = json.loads(capsys.readouterr().out)
    assert est["units"] == 7


def test_a_chateval_bench_run_is_a_set(tmp_path):
    run = tmp_path / "lme"
    shutil.copytree(FIXTURES / "runs_v0" / "longmemeval", run)
    summ = rejudge(f"{run}:mine", out=str(tmp_path / "o"), judges="recorded,f1", **FAST)
    (label,) = summ.sets
    assert label.startswith("mine") and "recorded" in summ.sets[label].scores


def test_llm_judges_travel_to_ray_workers(tmp_path):
    """--executor ray sends each judge to the workers by pickling: a template judge carries its
    text (the file need not exist there) and judges as before."""
    import asyncio
    import pickle

    from chateval.rejudging.judges import parse_judge
    from chateval.rejudging.judging import LLMJudge

    tpl = tmp_path / "t.j2"
    tpl.write_text("Q={{ question }} G={{ gold }} A={{ response }}: yes or no?")
    judge = LLMJudge(parse_judge(f"template:{tpl}"), {"model": "offline"})
    tpl.unlink()
    again = pickle.loads(pickle.dumps(judge))
    item = load_set(EVER)[0].items[3]
    assert asyncio.run(again.judge(item, item.gold))["accepted"] is True
    assert (
        again.prompts.template("rejudge/user_template.j2").render(question="q", gold="g", response="r")
        == "Q=q G=g A=r: yes or no?"
    )


def test_max_cost_stops_and_resume_finishes(tmp_path, capsys):
    """--max-cost: no new judgement once the cap is spent (exit 3, finished ones kept); --resume
    with a higher cap judges only the rest."""
    model = "cap-rejudge-model"
    with FakeOpenAIServer(responder=lambda req: "yes") as server:
        base = [
            "rejudge",
            str(EVER),
            "--judges",
            "recorded,official",
            "--model",
            f"openai-compatible/{model}",
            f"--base-url={server.base_url}",
            "--price",
            f"{model}=1000,1000",
            "--max-connections",
            "1",
            "--workers",
            "1",
            "--no-cache",
            "--max-retries",
            "0",
            "--resamples",
            "200",
            "--out",
            str(tmp_path / "o"),
        ]
        assert main([*base, "--max-cost", "0.05"]) == 3
        first = len(server.requests)
        assert 0 < first < 7
        assert "--resume" in capsys.readouterr().err
        assert main([*base, "--resume", "--max-cost", "1000"]) == 0
        assert len(server.requests) == 7
    assert read_rejudge(tmp_path / "o").sets["evermemos_tiny"].scores["official"].n == 7


def test_evermemos_variants_are_read(tmp_path):
    """Files of the same family written by other evaluations: `answer` for the answer, the runs
    as a list; the same verdicts come out."""
    data = json.loads(EVER.read_text())
    for rows in data["detailed_results"].values():
        for r in rows:
            r["answer"] = r.pop("generated_answer")
            r["llm_judgments"] = list(r["llm_judgments"].values())
    (tmp_path / "v.json").write_text(json.dumps(data))
    a, b = load_set(tmp_path / "v.json")[0], load_set(EVER)[0]
    assert [(it.answer, it.verdicts) for it in a.items] == [(it.answer, it.verdicts) for it in b.items]
