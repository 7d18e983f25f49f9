"""answer_check's settings: its fields are the command's options (``chateval bench answer_check --help``)."""

from __future__ import annotations

from chateval.bench import BenchConfig
from chateval.util.options import opt

DESCRIPTION = "judge each answer of a correctness file against its reference; agreement with its labels"


class Config(BenchConfig):
    data: str = opt(..., "a JSONL file of correctness items (question, answer, reference, optional label)")
    model: str = opt("offline", "the judge's model spec")
    preset: str = opt("single", "the judge: a strategies/ preset name or a YAML file")
