"""Graded sets from chateval's own ``bench locomo`` / ``bench longmemeval`` run directories (read
with ``read_run``): one set per system, the run's judges (single, debate) as recorded verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..datasets.common import DatasetError
from ..records.run import read_run
from .sets import GradedItem, GradedSet, Verdict


def _verdicts(judge: Any, run: str) -> list[Verdict]:
    out = []
    for name in ("single", "debate"):
        v = (judge or {}).get(name) if isinstance(judge, dict) else None
        if isinstance(v, dict) and isinstance(v.get("correct"), bool):
            proto = v.get("protocol")
            out.append(Verdict(judge=f"{name}:{proto}" if proto else name, run=run, accepted=v["correct"]))
    return out


def load_run(path: Path, label: str) -> list[GradedSet]:
    run = read_run(path, subruns=False)
    if run.kind not in ("locomo", "longmemeval"):
        raise DatasetError(f"{path}: a '{run.kind}' run; rejudge reads bench locomo and bench longmemeval runs")
    tag = path.name
    by_system: dict[str, list[GradedItem]] = {}
    for rec in run.records:
        data = rec.data() if hasattr(rec, "data") else rec.model_dump()
        if data.get("status") != "ok":
            continue
        system = str(data.get("method") or "system")
        if run.kind == "locomo":
            conv = str(data.get("conversation") or data.get("key"))
            for i, qa in enumerate(data.get("qa") or []):
                if not isinstance(qa, dict) or qa.get("status", "ok") != "ok" or qa.get("prediction") is None:
                    continue
                index = qa.get("qa_index", i)
                by_system.setdefault(system, []).append(
                    GradedItem(
                        id=f"{conv}#{index}",
                        question=str(qa.get("question", "")),
                        gold=str(qa.get("gold") or ""),
                        answer=str(qa["prediction"]),
                        category=None if qa.get("category") is None else str(qa["category"]),
                        conversation=conv,
                        verdicts=_verdicts(qa.get("judge"), tag),
                    )
                )
        else:
            qid = str(data.get("question_id"))
            by_system.setdefault(system, []).append(
                GradedItem(
                    id=qid,
                    question=str(data.get("question") or ""),
                    gold=str(data.get("gold") or ""),
                    answer=str(data.get("answer") or ""),
                    category=data.get("question_type"),
                    conversation=qid,
                    verdicts=_verdicts(data.get("judge"), tag),
                    question_id=qid,
                    question_type=data.get("question_type"),
                    abstention=bool(data.get("abstention", False)),
                )
            )
    if not by_system:
        raise DatasetError(f"{path}: the run holds no answered questions")
    many = len(by_system) > 1
    return [
        GradedSet(
            label=f"{label}/{system}" if many else label,
            path=str(path),
            format="run",
            sha256=None,
            items=items,
        )
        for system, items in by_system.items()
    ]
