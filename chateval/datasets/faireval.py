"""FairEval (Wang et al. 2023): 80 Vicuna questions, ChatGPT vs Vicuna-13B answers, and the
annotators' majority label, one JSON object per line."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from .checks import UniqueIds, build
from .common import DatasetError, jsonl_objects

FILE = "faireval_gpt35_vs_vicuna13b.jsonl"
HUMAN = {"gpt35": "1", "vicuna": "2", "tie": "tie"}  # the file's label -> Assistant 1 / 2 / tie


class FairEvalRow(BaseModel):
    question_id: int
    category: str | None
    question: str
    answer_1: str  # ChatGPT (gpt-3.5-turbo)
    answer_2: str  # Vicuna-13B
    human: str  # "1", "2" or "tie"


def load_faireval(path: str | Path) -> list[FairEvalRow]:
    """Rows of faireval_gpt35_vs_vicuna13b.jsonl (or a folder holding it), validated line by line."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE
    items: list[FairEvalRow] = []
    ids = UniqueIds("question_id", "line")
    for no, row in jsonl_objects(path, "FairEval"):
        where = f"{path}:{no}"
        qid = row.get("question_id")
        if "question_id" not in row:
            raise DatasetError(f"{where}: field 'question_id': missing")
        if not isinstance(qid, int) or isinstance(qid, bool):
            raise DatasetError(f"{where}: field 'question_id': should be an integer, got {type(qid).__name__}")
        ids.add(str(qid), where, no)
        for f in ("question", "answer_gpt35", "answer_vicuna13b"):
            v = row.get(f)
            if f not in row:
                raise DatasetError(f"{where}: field '{f}': missing")
            if not isinstance(v, str):
                raise DatasetError(f"{where}: field '{f}': should be a string, got {type(v).__name__}")
            if not v.strip():
                raise DatasetError(f"{where}: field '{f}': empty")
        label = row.get("human_label")
        if not isinstance(label, str) or label not in HUMAN:
            got = "missing" if "human_label" not in row else repr(label)[:40]
            raise DatasetError(f"{where}: field 'human_label': expected gpt35, vicuna or tie, got {got}")
        category = row.get("category")
        if category is not None and not isinstance(category, str):
            raise DatasetError(f"{where}: field 'category': should be a string, got {type(category).__name__}")
        items.append(
            build(
                FairEvalRow,
                where,
                question_id=qid,
                category=category,
                question=row["question"],
                answer_1=row["answer_gpt35"],
                answer_2=row["answer_vicuna13b"],
                human=HUMAN[label],
            )
        )
    if not items:
        raise DatasetError(f"{path}: no FairEval rows")
    return items
