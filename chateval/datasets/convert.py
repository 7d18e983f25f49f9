"""Conversions from a data set's published files to the files our loaders read, run by
``chateval data get`` after the downloads are verified. Each takes the data folder and returns
the files it wrote; it writes each through a temporary file so a failure leaves no half file."""

from __future__ import annotations

import json
import os
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

from ..util.jsonl import split_lines
from .common import DatasetError, jsonl_objects

Conversion = Callable[[Path], list[Path]]
CONVERSIONS: dict[str, Conversion] = {}


def conversion(name: str) -> Callable[[Conversion], Conversion]:
    def deco(fn: Conversion) -> Conversion:
        CONVERSIONS[name] = fn
        return fn

    return deco


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# FairEval's review file: one label per question, in question order.
_FAIREVAL_LABELS = {"CHATGPT": "gpt35", "VICUNA13B": "vicuna", "TIE": "tie"}


@conversion("faireval-merge")
def faireval_merge(root: Path) -> list[Path]:
    """question.jsonl + the two answer files + the human review file -> one row per question:
    question_id, category, question, answer_gpt35, answer_vicuna13b, human_label (gpt35 /
    vicuna / tie) and human_label_raw, in question order."""
    raw = root / "faireval" / "raw"
    questions = [row for _, row in jsonl_objects(raw / "question.jsonl", "FairEval questions")]
    answers = {}
    for model, file in (("gpt35", "answer_gpt35.jsonl"), ("vicuna13b", "answer_vicuna-13b.jsonl")):
        path = raw / "answer" / file
        answers[model] = {row.get("question_id"): row.get("text") for _, row in jsonl_objects(path, "FairEval answers")}
    review = raw / "review" / "review_gpt35_vicuna-13b_human.txt"
    # One label a line, split at \n only (as every JSONL reader here: chateval.util.jsonl.split_lines).
    labels = [line.decode("utf-8").strip() for _, line in split_lines(review.read_bytes())]
    if len(labels) != len(questions):
        raise DatasetError(f"{review}: {len(labels)} labels for {len(questions)} questions")
    lines = []
    for no, (q, label) in enumerate(zip(questions, labels), 1):
        if label not in _FAIREVAL_LABELS:
            raise DatasetError(f"{review}:{no}: unknown label {label!r} (expected CHATGPT, VICUNA13B or TIE)")
        qid = q.get("question_id")
        for model, by_qid in answers.items():
            if not isinstance(by_qid.get(qid), str):
                raise DatasetError(f"{raw / 'answer'}: no {model} answer for question_id {qid}")
        row = {
            "question_id": qid,
            "category": q.get("category"),
            "question": q.get("text"),
            "answer_gpt35": answers["gpt35"][qid],
            "answer_vicuna13b": answers["vicuna13b"][qid],
            "human_label": _FAIREVAL_LABELS[label],
            "human_label_raw": label,
        }
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    out = root / "faireval" / "faireval_gpt35_vs_vicuna13b.jsonl"
    _write_atomic(out, "".join(lines).encode("utf-8"))
    return [out]


_MSC_MEMBER = re.compile(r"(?:^|/)msc_dialogue/session_(\d+)/(train|valid|test)\.txt$")


@conversion("msc-tarball")
def msc_tarball(root: Path) -> list[Path]:
    """Each ``msc_dialogue/session_N/SPLIT.txt`` of ParlAI's MSC tarball (already one JSON object
    per line) -> ``msc/msc_sessionN_SPLIT.jsonl``, unchanged. msc-response reads session 3 valid by
    default and the test split of sessions 3-5 with ``--protocol paper``."""
    folder = root / "msc"
    tarball = folder / "msc_v0.1.tar.gz"
    written = []
    try:
        with tarfile.open(tarball, "r:*") as tar:
            for member in tar:
                m = _MSC_MEMBER.search(member.name)
                if not m or not member.isfile():
                    continue
                src = tar.extractfile(member)
                if src is None:
                    continue
                out = folder / f"msc_session{m.group(1)}_{m.group(2)}.jsonl"
                _write_atomic(out, src.read())
                written.append(out)
    except (tarfile.TarError, EOFError, OSError) as e:
        raise DatasetError(f"{tarball}: cannot read the MSC tarball ({e})") from None
    if not written:
        raise DatasetError(f"{tarball}: no msc_dialogue/session_N/SPLIT.txt in this tarball")
    return sorted(written)
