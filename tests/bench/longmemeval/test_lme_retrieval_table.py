"""benchmarks/lme_retrieval_table.py: the design-table rows and each row's paired difference from
the hybrid baseline, computed from run directories' samples.jsonl."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "lme_retrieval_table.py"


def load():
    spec = importlib.util.spec_from_file_location("lme_retrieval_table", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rec(qid: str, method: str, s: float, t: float, evaluable: bool = True) -> dict:
    m = lambda v: {f"{n}@{k}": v for n in ("recall_any", "recall_all", "ndcg_any") for k in (5, 10)}  # noqa: E731
    return {"question_id": qid, "question_type": "multi-session", "method": method, "status": "ok",
            "retrieval": {"evaluable": True, "session": m(s), "turn": m(t)} if evaluable else {"evaluable": False}}


def write(run: Path, records: list[dict]) -> Path:
    run.mkdir()
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


@pytest.mark.slow
def test_paired_differences_from_the_hybrid_per_question(tmp_path, capsys):
    mod = load()
    # Run 1: the baselines and the default row; run 2: another setting (its own run, no baselines).
    # Session recall_all@5 per question q1..q4: hybrid 1,0,0,1; default 1,1,1,1; other 0,1,0,1.
    # q5 is evaluable for the hybrid only: it is left out of the paired comparisons.
    base = [rec("q1", "hybrid", 1, 1), rec("q2", "hybrid", 0, 0), rec("q3", "hybrid", 0, 0), rec("q4", "hybrid", 1, 0),
            rec("q5", "hybrid", 1, 1)]
    sys1 = [rec("q1", "longmemeval_rag", 1, 1), rec("q2", "longmemeval_rag", 1, 0), rec("q3", "longmemeval_rag", 1, 1),
            rec("q4", "longmemeval_rag", 1, 0), rec("q5", "longmemeval_rag", 0, 0, evaluable=False)]
    sys2 = [rec(q, "longmemeval_rag", s, s) for q, s in (("q1", 0), ("q2", 1), ("q3", 0), ("q4", 1))]
    r1 = write(tmp_path / "a", base + sys1)
    r2 = write(tmp_path / "b", sys2)
    by_row = mod.rows([("default", r1), ("other", r2)])
    assert list(by_row) == ["hybrid", "default", "other"]
    s = mod.paired(by_row, "hybrid", "session")
    assert (s["default"].n, s["default"].value_a, s["default"].value_b) == (4, 1.0, 0.5)
    assert s["default"].diff == pytest.approx(0.5) and s["other"].diff == pytest.approx(0.0)
    assert s["default"].test == "mcnemar_exact" and s["default"].p_value == pytest.approx(0.5)  # 2 discordant, both one way
    t = mod.paired(by_row, "hybrid", "turn")
    assert t["default"].diff == pytest.approx((2 - 1) / 4)  # turn: default 1,0,1,0 vs hybrid 1,0,0,0
    mod.main(["--baseline", "hybrid", f"default={r1}", f"other={r2}"])
    out = capsys.readouterr().out
    assert "| default | 4 | 1.000 | +0.500 [" in out and "p 0.500" in out
    with pytest.raises(SystemExit, match="no such row"):
        mod.main(["--baseline", "bm25", f"default={r1}"])
