"""The rejudge directory as a run `chateval view` reads: ``config.json`` (what was scored, under
which judges; its hash) and ``samples.jsonl`` (one line per set and item, the sets of one
question side by side as systems, with the item's verdict under every judge)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..datasets.errata import Errata
from ..evaluation.config import config_hash
from ..runs.files import atomic_write, write_json
from ..util.jsonl import dumps_line
from .config import RejudgeConfig
from .records import RejudgeSummary
from .score import Column
from .sets import GradedSet


def rows_of(s: GradedSet, cols: dict[str, Column]) -> list[dict[str, Any]]:
    return [
        {
            "key": f"{s.label}::{it.id}",
            "status": "ok",
            "system": s.label,  # the viewer shows the sets' answers to one question side by side
            "question_id": it.id,
            "set": s.label,
            "id": it.id,
            "conversation": it.conversation,
            "category": it.category,
            "words": it.words,
            "question": it.question,
            "gold": it.gold,
            "answer": it.answer,
            "verdicts": {name: col[it.id].accepted for name, col in cols.items() if it.id in col},
            "correct": next((col[it.id].accepted for col in cols.values() if it.id in col), None),
        }
        for it in s.items
    ]


def write_items(
    out: Path,
    cfg: RejudgeConfig,
    sets: list[GradedSet],
    errata: Errata | None,
    summary: RejudgeSummary,
    rows: list[dict[str, Any]],
) -> None:
    judging = {
        "judges": summary.judges,
        "model": summary.model,
        "sets": {s.label: {"path": s.path, "format": s.format, "sha256": s.sha256, "wrong": s.is_wrong} for s in sets},
        "errata": errata.path if errata else None,  # the file read (a data set's name: its data-folder copy)
        "errata_sha256": errata.sha256 if errata else None,
        "f1_threshold": cfg.f1_threshold,
        "limit": cfg.limit,
    }
    write_json(out / "config.json", {"kind": "rejudge", "judging": judging, "config_hash": config_hash(judging)})
    atomic_write(out / "samples.jsonl", "".join(dumps_line(r) for r in rows))
