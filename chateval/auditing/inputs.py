"""The items an audit perturbs: an ``evaluate`` JSONL file, or the FairEval file as it is."""

from __future__ import annotations

import json
from pathlib import Path

from ..bench.judge_meta.faireval import faireval_items
from ..datasets.faireval import FILE as FAIREVAL_FILE
from ..debate.samples import Sample
from ..evaluation.inputs import load_samples
from ..util.errors import ConfigError


def is_faireval(path: Path) -> bool:
    """The FairEval folder or file (its own field names), not an evaluate JSONL file."""
    if path.is_dir():
        return (path / FAIREVAL_FILE).is_file()
    if path.name == FAIREVAL_FILE:
        return True
    try:
        with open(path, "rb") as f:
            first = next((line for line in f if line.strip()), b"")
        record = json.loads(first)
    except (OSError, ValueError):
        return False  # the evaluate loader reports what is wrong with it
    return isinstance(record, dict) and "answer_gpt35" in record


def load_items(path: str | Path, task: str) -> tuple[list[Sample], str]:
    """(samples, format): 'faireval' or 'jsonl'. Bad input: a one-line InputError."""
    path = Path(path)
    if is_faireval(path):
        if task != "pairwise":
            raise ConfigError(f"{path}: FairEval items are pairwise; --task {task} does not apply")
        return [it.sample for it in faireval_items(path)], "faireval"
    if path.is_dir():
        raise ConfigError(f"{path}: a folder; give the JSONL file to audit")
    return load_samples(path, task)[0], "jsonl"
