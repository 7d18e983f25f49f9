"""What a calibration reads: an ``evaluate`` JSONL file with human labels (used as it is), or a
FairEval / Topical-Chat file or folder as shipped (read with their loaders and written once as
an evaluate-format file, ``OUT/input.jsonl``, which every setting's sub-run then reads).

The task of an evaluate file is inferred from its first record (answer_1/answer_2: pairwise; a
number or {aspect: number} label: score; a true/false label: correctness) unless given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bench.judge_meta.faireval import faireval_items
from ..bench.judge_meta.topical_samples import build_sample
from ..datasets.common import DatasetError
from ..datasets.faireval import FILE as FAIREVAL_FILE
from ..datasets.topical_chat import ASPECTS, UNIEVAL, USR, load_topical_chat
from ..runs.files import atomic_write
from ..stats.labels import normalise_label
from ..util.errors import ConfigError, InputError

CONVERTED = "input.jsonl"


@dataclass
class Source:
    path: Path  # the evaluate-format file every sub-run reads
    given: Path  # what the user gave
    format: str  # evaluate | faireval | topical-chat
    task: str
    defaults: dict[str, Any] = field(default_factory=dict)  # base settings the format implies
    text: str | None = None  # a converted dataset's evaluate-format lines, written by write()

    def write(self) -> None:
        """Write the converted input (once the whole calibration has been validated); unchanged
        content is left alone, so the sub-runs' input hash and --resume keep working."""
        if self.text is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.is_file() or self.path.read_text(encoding="utf-8") != self.text:
            atomic_write(self.path, self.text)


def detect(path: Path) -> str:
    if path.is_dir():
        if (path / FAIREVAL_FILE).is_file():
            return "faireval"
        if (path / UNIEVAL).is_file() or (path / USR).is_file():
            return "topical-chat"
        raise InputError(
            f"{path}: a folder, but neither FairEval ({FAIREVAL_FILE}) nor Topical-Chat ({UNIEVAL}, {USR}) is in it"
        )
    if not path.is_file():
        raise InputError(f"{path}: input file not found")
    if path.suffix == ".json":
        return "topical-chat"
    first = _first_record(path)
    if isinstance(first, dict) and "answer_gpt35" in first and "human_label" in first:
        return "faireval"
    return "evaluate"


def _first_record(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.strip():
                    return json.loads(line)
    except (OSError, ValueError):
        return None  # the evaluate loader reports it with its line number
    return None


def infer_task(path: Path) -> str:
    rec = _first_record(path)
    if not isinstance(rec, dict):
        return "pairwise"  # the loader reports what is wrong with the file
    if "answer_1" in rec or "answer_2" in rec:
        return "pairwise"
    label = rec.get("label")
    one = label[0] if isinstance(label, list) and label else label
    if isinstance(one, (int, float, dict)) and not isinstance(one, bool):
        return "score"
    if normalise_label("correctness", one) is not None:
        return "correctness"
    raise InputError(
        f"{path}:1: cannot tell the task from the first record (answer_1/answer_2 for pairwise; a "
        "number label for score; a true/false label for correctness); give --task"
    )


def prepare(given: str | Path, out: Path, *, fmt: str = "auto", task: str | None = None, write: bool = True) -> Source:
    """The source of a calibration; dataset formats are converted into ``out/input.jsonl``
    (written now, or by ``Source.write()`` when ``write`` is False)."""
    path = Path(given)
    fmt = detect(path) if fmt == "auto" else fmt
    if fmt == "evaluate":
        if path.is_dir() or not path.is_file():
            raise InputError(f"{path}: input file not found")
        return Source(path, path, fmt, task or infer_task(path))
    defaults: dict[str, Any]
    try:
        if fmt == "faireval":
            records = [it.sample.model_dump(exclude_none=True) for it in faireval_items(path)]
            want, defaults = "pairwise", {"swap": True}  # as `bench faireval`: both answer orders
        else:
            records = _topical_records(path)
            want, defaults = "score", {"aspects": list(ASPECTS)}
    except DatasetError as e:
        raise InputError(str(e)) from None
    if task and task != want:
        raise ConfigError(f"--task {task}: a {fmt} input is judged as {want}")
    text = "".join(json.dumps(_flat(r), ensure_ascii=False, sort_keys=True) + "\n" for r in records)
    source = Source(out / CONVERTED, path, fmt, want, defaults, text)
    if write:
        source.write()
    return source


def _flat(rec: dict[str, Any]) -> dict[str, Any]:
    """A Sample as an evaluate input line: its meta fields at the top level (kept as meta)."""
    meta = rec.pop("meta", None) or {}
    return {**{k: v for k, v in meta.items() if k not in rec}, **rec}


def _topical_records(path: Path) -> list[dict[str, Any]]:
    """The joint protocol of `bench topical-chat --aspect-mode joint` (every aspect 1-10 in one
    debate); the label is one {aspect: score} per annotator when the USR file gives them."""
    rows = load_topical_chat(path)
    out = []
    for r in rows:
        rec = build_sample(r, list(ASPECTS)).model_dump(exclude_none=True)
        rec["cluster"] = f"context-{r.context_index}"  # six responses to one context: not independent
        if r.annotators and all(a in r.annotators for a in ASPECTS):
            k = min(len(r.annotators[a]) for a in ASPECTS)
            rec["label"] = [{a: r.annotators[a][i] for a in ASPECTS} for i in range(k)]
        else:
            rec["label"] = {a: r.human[a] for a in ASPECTS}
        out.append(rec)
    return out
