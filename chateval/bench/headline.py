"""The numbers a run is read by, one row per system (or setting): n, the benchmark's main score,
recall_all@5 where retrieval is scored, failed units and cost. Printed at the end of every
``chateval bench`` run and kept under ``headline`` in summary.json."""

from __future__ import annotations

from typing import Any


def _cost(*usages: dict[str, Any] | None) -> float | None:
    costs = [(u or {}).get("cost_usd") for u in usages if u]
    return None if not costs or any(c is None for c in costs) else sum(costs)


def _memory_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for m, e in (summary.get("methods") or {}).items():
        qa = (e.get("qa") or {})
        judges = [j for j in ("single", "debate") if qa.get(j)]
        ret = (e.get("retrieval") or {}).get("session") or {}
        # The metric names its judge; with --judge both the other judge's accuracy is a column too.
        row: dict[str, Any] = {"system": m, "n": e.get("n"),
                               "metric": f"accuracy ({judges[0]} judge)" if judges else "accuracy",
                               "value": qa[judges[0]].get("overall") if judges else None}
        for j in judges[1:]:
            row[f"accuracy ({j} judge)"] = qa[j].get("overall")
        rows.append(row | {"recall_all@5": ret.get("recall_all@5"), "failed": e.get("n_failed"),
                           "cost_usd": _cost(e.get("answer_usage"), e.get("judge_usage"))})
    return rows


def _per_system(summary: dict[str, Any], metric: str, pick: Any, extra: Any = None) -> list[dict[str, Any]]:
    """``extra(e)``: further labelled numbers of a system's row (LoCoMo's evidence recall, which
    is not LongMemEval's recall_all@5 and is not shown under that name)."""
    rows = []
    for name, e in (summary.get("systems") or {}).items():
        value, n, failed, cost = pick(e)
        rows.append({"system": name, "n": n, "metric": metric, "value": value, **(extra(e) if extra else {}),
                     "recall_all@5": None, "failed": failed, "cost_usd": cost})
    return rows


def _judge_meta_rows(summary: dict[str, Any], metric: str, pick: Any) -> list[dict[str, Any]]:
    rows = []
    for name, s in (summary.get("settings") or {}).items():
        rows.append({"system": name, "n": s.get("n_units"), "metric": metric, "value": pick(s.get("metrics") or {}),
                     "recall_all@5": None, "failed": s.get("n_failed"), "cost_usd": (s.get("usage") or {}).get("cost_usd")})
    return rows


def headline(name: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    if name == "longmemeval":
        return _memory_rows(summary)
    if name == "locomo":
        return _per_system(summary, "F1", lambda e: (
            (e.get("overall") or {}).get("f1"), e.get("n_qa"), e.get("n_qa_failed"),
            _cost(e.get("answer_usage"), e.get("judge_usage"))),
            lambda e: {"evidence recall": (e.get("overall") or {}).get("evidence_recall")})
    if name == "teafarm":
        return _per_system(summary, "success rate", lambda e: (
            e.get("success_rate"), e.get("n_units"), e.get("n_failed"),
            _cost(e.get("answer_usage"), e.get("judge_usage"))))
    if name == "msc-response":
        return _per_system(summary, "ROUGE-L", lambda e: (
            ((e.get("metrics") or {}).get("rouge_l") or {}).get("mean"), e.get("n_units"), e.get("n_failed"),
            _cost(e.get("answer_usage"), e.get("judge_usage"))))
    if name == "head2head" and summary.get("ranking") is not None:
        return [{"system": r["system"], "n": summary.get("n"), "metric": "P(beats average), Bradley–Terry",
                 "value": r["win_prob_vs_average"], "recall_all@5": None, "failed": summary.get("n_failed"),
                 "cost_usd": ((summary.get("usage") or {}).get(r["system"]) or {}).get("cost_usd")}
                for r in summary["ranking"]]
    if name == "head2head":
        sides = summary.get("systems") or {}
        # A's wins, ties and A's losses (B's wins), with which system is A.
        return [{"system": f"A={sides.get('A')} vs B={sides.get('B')}", "n": summary.get("n"), "metric": "A wins",
                 "value": (summary.get("wins") or {}).get("rate"), "ties": (summary.get("ties") or {}).get("rate"),
                 "A losses": (summary.get("losses") or {}).get("rate"), "recall_all@5": None,
                 "failed": summary.get("n_failed"), "cost_usd": ((summary.get("usage") or {}).get("total") or {}).get("cost_usd")}]
    if name == "faireval":
        return _judge_meta_rows(summary, "accuracy", lambda m: (m.get("accuracy") or {}).get("value"))
    if name == "topical-chat":
        return _judge_meta_rows(summary, "mean Spearman", lambda m: ((m.get("judge") or m).get("avg") or {}).get("spearman"))
    return [{"system": name, "n": summary.get("n_units"), "metric": None, "value": None, "recall_all@5": None,
             "failed": summary.get("n_failed"), "cost_usd": None}]


# --- --fail-under: the metrics a benchmark's gates can name ---------------------------------------
# The first is the headline's main number; LongMemEval's session-level recall at any k it reports.
GATE_METRICS = {"longmemeval": ["accuracy", "recall_all@K", "recall_any@K"], "locomo": ["f1", "evidence_recall"],
                "teafarm": ["success_rate"], "msc-response": ["rouge_l"], "head2head": ["win_rate"],
                "faireval": ["accuracy"], "topical-chat": ["spearman"]}


def gate_metrics(name: str) -> list[str]:
    return GATE_METRICS.get(name, ["value"])  # a plugin benchmark: its headline value


def gate_measures(name: str, summary: dict[str, Any], baselines: list[str] = ()) -> dict[str, dict[Any, Any]]:  # type: ignore[assignment]
    """{metric: {system: value}} for ``chateval.runs.gates.check``. ``baselines`` (LongMemEval's
    retrieval-only rankers) are left out: gates are about the systems under test."""
    rows = [r for r in (summary.get("headline") or headline(name, summary)) if r.get("system") not in baselines]
    out: dict[str, dict[Any, Any]] = {gate_metrics(name)[0]: {r["system"]: r.get("value") for r in rows}}
    if name == "locomo":
        out["evidence_recall"] = {r["system"]: r.get("evidence recall") for r in rows}
    if name == "longmemeval":
        for m, e in (summary.get("methods") or {}).items():
            session = ((e.get("retrieval") or {}).get("session") or {}) if e.get("retrieval") else {}
            for k, v in session.items():
                if k.startswith("recall_") and m not in baselines:
                    out.setdefault(k, {})[m] = v
    return out
