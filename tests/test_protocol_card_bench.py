"""The protocol card of real bench runs (offline model): `bench locomo` and `bench longmemeval`
write it to summary.json and report.md; --strict-categories refuses a subset before any work."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from chateval.cli import main
from chateval.records.protocol_card import read_card

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOCOMO, LME = FIXTURES / "locomo_tiny.json", FIXTURES / "lme_tiny.json"
OFFLINE = ["--answer-model", "offline", "--embedder", "hash"]
REPO = Path(__file__).resolve().parent.parent


def _locomo(out: Path, *extra: str) -> int:
    return main(
        [
            "bench",
            "locomo",
            "--data",
            str(LOCOMO),
            "--systems",
            "full_context,retrieval",
            *OFFLINE,
            "--out",
            str(out),
            *extra,
        ]
    )


def test_locomo_card(tmp_path, capsys):
    out = tmp_path / "run"
    assert _locomo(out) == 0
    summary = json.loads((out / "summary.json").read_text())
    card = read_card(summary["protocol_card"])
    assert card is not None and card.benchmark == "locomo"
    assert card.data_sha256 == hashlib.sha256(LOCOMO.read_bytes()).hexdigest()
    # the fixture's six QA: categories 4, 4, 2, 1, 3, 5, against the full file's published counts
    assert {c.category: (c.found, c.selected, c.upstream) for c in card.categories} == {
        "1": (1, 1, 282),
        "2": (1, 1, 321),
        "3": (1, 1, 96),
        "4": (2, 2, 841),
        "5": (1, 1, 446),
    }
    assert card.counts_match is False and card.n_scored == 6
    assert "category 5 (adversarial) scored" in card.unanswerable_policy
    assert (card.answer_model, card.judge_model) == ("offline", "offline")
    assert [j.judge for j in card.judges] == ["single (chateval)"]  # LoCoMo's default judge protocol
    assert len(card.judges[0].sha256) == 64 and card.judges[0].parts == ["bench/lme_judge.j2", "rules"]
    tops = {t.system: t for t in card.top_k}
    assert tops["full_context"].k is None
    assert (
        tops["retrieval"].k,
        tops["retrieval"].histories,
        tops["retrieval"].sessions_max,
        tops["retrieval"].covered,
    ) == (6, 1, 3, 1)
    assert card.versions["chateval"] and card.versions["python"]
    warnings = summary["warnings"]
    assert any("a subset of the published file?" in w for w in warnings)
    assert any(w.startswith("retrieval: top-k 6 (k) is at least the number of sessions in 1 of 1") for w in warnings)
    report = (out / "report.md").read_text()
    assert (
        "## Protocol card" in report and card.data_sha256 in report and "**Warning:** category counts differ" in report
    )
    printed = capsys.readouterr()
    assert "retrieval is bypassed" in printed.out + printed.err  # the CLI prints the card's warnings


def test_locomo_card_follows_the_judge_prompt_in_use(tmp_path):
    assert (
        main(
            [
                "bench",
                "locomo",
                "--data",
                str(LOCOMO),
                "--systems",
                "full_context",
                *OFFLINE,
                "--categories",
                "1,2,3,4",
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 0
    )
    prompts = tmp_path / "prompts" / "bench"
    prompts.mkdir(parents=True)
    src = (REPO / "prompts" / "bench" / "lme_judge.j2").read_text()
    (prompts / "lme_judge.j2").write_text(src + "\n{# our own wording #}\n")
    assert (
        main(
            [
                "bench",
                "locomo",
                "--data",
                str(LOCOMO),
                "--systems",
                "full_context",
                *OFFLINE,
                "--categories",
                "1,2,3,4",
                "--prompt-dir",
                str(tmp_path / "prompts"),
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 0
    )
    a, b = (read_card(json.loads((tmp_path / x / "summary.json").read_text())["protocol_card"]) for x in "ab")
    assert a.judges[0].sha256 != b.judges[0].sha256
    assert a.unanswerable_policy == "category 5 (adversarial) left out (--categories)"
    assert {c.category: c.selected for c in a.categories}["5"] == 0


def test_locomo_strict_refuses_a_subset_before_any_work(tmp_path, capsys):
    out = tmp_path / "strict"
    assert _locomo(out, "--strict-categories") == 2
    err = capsys.readouterr().err
    assert "category counts differ from LoCoMo's locomo10.json" in err and "--strict-categories" in err
    assert not (out / "samples.jsonl").exists()


def test_longmemeval_card(tmp_path):
    out = tmp_path / "lme"
    assert (
        main(["bench", "longmemeval", "--data", str(LME), "--systems", "full_context", *OFFLINE, "--out", str(out)])
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    card = read_card(summary["protocol_card"])
    assert card.benchmark == "longmemeval"
    found = {c.category: (c.found, c.upstream) for c in card.categories if c.found}
    assert found == {"single-session-user": (3, 70), "temporal-reasoning": (1, 133), "multi-session": (1, 133)}
    assert card.counts_match is False and card.n_scored == 5
    assert card.unanswerable_policy.startswith("abstention (_abs) questions: 1 selected, of 1 in the file")
    assert card.judges and card.judges[0].judge == "single (official)"
    assert card.top_k[0].system == "full_context" and card.top_k[0].sessions_max == 4
    assert "## Protocol card" in (out / "report.md").read_text()
    assert (
        main(
            [
                "bench",
                "longmemeval",
                "--data",
                str(LME),
                "--systems",
                "full_context",
                *OFFLINE,
                "--strict-categories",
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 2
    )


def test_view_flags_runs_whose_cards_differ(tmp_path, capsys):
    import re

    from chateval.view.build import build_view

    def run(name: str, *extra: str) -> Path:
        out = tmp_path / name
        assert (
            main(
                [
                    "bench",
                    "locomo",
                    "--data",
                    str(LOCOMO),
                    "--systems",
                    "full_context",
                    *OFFLINE,
                    "--out",
                    str(out),
                    *extra,
                ]
            )
            == 0
        )
        return out

    a, b, c = run("a"), run("b", "--categories", "1,2,3,4"), run("c")
    text = build_view([a, b], out=tmp_path / "ab.html").read_text()
    table = text[text.index('<table class="hl cards-diff">') :]
    table = table[: table.index("</table>")]
    rows = {m[0]: m[1:] for m in (re.findall(r"<td>(.*?)</td>", r) for r in table.split("<tr>")[2:])}
    assert "protocol cards differ" in text
    assert rows["unanswerable questions"][1] == "category 5 (adversarial) left out (--categories)"
    assert "denominator" in rows and "data sha256" not in rows and "versions" not in rows
    same = build_view([a, c], out=tmp_path / "ac.html").read_text()
    assert "protocol cards differ" not in same and "protocol cards: the same" in same
    alone = build_view([a]).read_text()  # a run's own page shows its card and its warnings
    assert 'class="protocol-card" open' in alone and "category counts differ from LoCoMo" in alone
    assert "<td>data sha256</td>" in alone
    capsys.readouterr()
    assert main(["view", str(a), str(b), "--out", str(tmp_path / "cli.html")]) == 0
    printed = capsys.readouterr()
    assert "protocol cards differ (categories, unanswerable questions, denominator)" in " ".join(
        (printed.out + printed.err).split()
    )
    assert main(["view", str(a), str(c), "--out", str(tmp_path / "cli2.html")]) == 0
    printed = capsys.readouterr()
    assert "protocol cards differ" not in printed.out + printed.err


def test_longmemeval_retrieval_only_card_uses_the_recall_depth(tmp_path):
    out = tmp_path / "ret"
    assert (
        main(
            [
                "bench",
                "longmemeval",
                "--data",
                str(LME),
                "--systems",
                "retrieval",
                "--retrieval-only",
                "--recall-depth",
                "4",
                *OFFLINE,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    card = read_card(json.loads((out / "summary.json").read_text())["protocol_card"])
    (top,) = card.top_k
    assert (top.system, top.k, top.setting, top.covered, top.histories) == ("retrieval", 4, "--recall-depth", 5, 5)
    assert card.judges == [] and card.judge_model is None and card.denominator.startswith("no QA score")
    assert any("retrieval is bypassed" in w for w in card.warnings)


def test_judge_prompts_of_both_judges(tmp_path):
    from chateval.bench.protocol import judge_prompts
    from chateval.bench.locomo.settings import LoCoMoConfig
    from chateval.bench.setup import MemoryBench

    def prompts(**kw):
        cfg = LoCoMoConfig(
            data=str(LOCOMO),
            systems=["full_context"],
            answer_model="offline",
            embedder="hash",
            out=str(tmp_path / "x"),
            **kw,
        )
        return judge_prompts(MemoryBench(cfg))

    single, debate = prompts(judge="both")
    assert single.judge == "single (chateval)" and debate.judge == "debate (chateval_default)"
    assert "personas" in debate.parts and any(p.endswith(".j2") for p in debate.parts)
    (official,) = prompts(judge="single", judge_protocol="official")
    assert official.parts == ["bench/lme_judge_official.j2", "rules"] and official.sha256 != single.sha256
    assert prompts(judge="debate", judge_preset="chateval_default")[0].sha256 == debate.sha256
