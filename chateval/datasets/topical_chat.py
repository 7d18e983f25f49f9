"""USR Topical-Chat (Mehri & Eskenazi 2020): 60 contexts x 6 responses with per-annotator
aspect ratings, read from UniEval's file, USR's file, or a folder holding both (cross-checked)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checks import UniqueIds
from .common import DatasetError, read_json

UNIEVAL = "topical_chat_unieval.json"
USR = "tc_usr_data.json"
ASPECTS = ("naturalness", "coherence", "engagingness", "groundedness")
OTHER_SCORES = ("understandability", "overall")
USR_FIELDS = {
    "naturalness": "Natural",
    "coherence": "Maintains Context",
    "engagingness": "Engaging",
    "groundedness": "Uses Knowledge",
    "understandability": "Understandable",
    "overall": "Overall",
}
SCALES = {
    "naturalness": "1-3",
    "coherence": "1-3",
    "engagingness": "1-3",
    "groundedness": "0-1",
    "understandability": "0-1",
    "overall": "1-5",
}
# The same scales as (lowest, highest) integers, for judges asked to rate on them.
SCALE_RANGES: dict[str, tuple[int, int]] = {a: (int(v.split("-")[0]), int(v.split("-")[1])) for a, v in SCALES.items()}
GROUND_TRUTH = "Original Ground Truth"
NEW_HUMAN = "New Human Generated"
SHORT = {
    "naturalness": "nat",
    "coherence": "coh",
    "engagingness": "eng",
    "groundedness": "gro",
    "understandability": "und",
    "overall": "ovr",
}


@dataclass
class TCRow:
    key: str
    context_index: int
    system: str
    history: list[str]
    fact: str
    response: str
    human: dict[str, float]
    annotators: dict[str, list[float]] | None = None
    reference: str | None = None  # filled by assign_references
    meta: dict[str, Any] = field(default_factory=dict)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _turns(history: str) -> list[str]:
    return [t.strip() for t in history.split("\n") if t.strip()]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _string(entry: dict[str, Any], key: str, where: str) -> str:
    if key not in entry:
        raise DatasetError(f"{where}: field '{key}': missing")
    if not isinstance(entry[key], str):
        raise DatasetError(f"{where}: field '{key}': should be a string, got {type(entry[key]).__name__}")
    return entry[key]


def _load_unieval(path: Path) -> list[TCRow]:
    data = read_json(path, "Topical-Chat (UniEval)")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of rows, got {type(data).__name__}")
    rows: list[TCRow] = []
    contexts: dict[str, int] = {}
    keys = UniqueIds("response (context and system_id)")  # the row key is the unit key
    for i, e in enumerate(data):
        where = f"{path}: entry {i}"
        if not isinstance(e, dict):
            raise DatasetError(f"{where}: expected an object, got {type(e).__name__}")
        source, fact = _string(e, "source", where), _string(e, "context", where)
        response, system = _string(e, "system_output", where), _string(e, "system_id", where)
        scores = e.get("scores")
        if not isinstance(scores, dict):
            raise DatasetError(
                f"{where}: field 'scores': " + ("missing" if "scores" not in e else "should be an object")
            )
        human = {}
        for a in ASPECTS + OTHER_SCORES:
            if a not in scores:
                if a in ASPECTS:
                    raise DatasetError(f"{where}: field 'scores.{a}': missing")
                continue
            if not _number(scores[a]):
                raise DatasetError(f"{where}: field 'scores.{a}': should be a number, got {type(scores[a]).__name__}")
            human[a] = float(scores[a])
        idx = contexts.setdefault(source, len(contexts))
        keys.add(f"c{idx:02d}-{_slug(system)}", where, i)
        rows.append(
            TCRow(
                key=f"c{idx:02d}-{_slug(system)}",
                context_index=idx,
                system=system,
                history=_turns(source),
                fact=fact.strip(),
                response=response.strip(),
                human=human,
            )
        )
    return rows


def _load_usr(path: Path) -> list[TCRow]:
    data = read_json(path, "Topical-Chat (USR)")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of contexts, got {type(data).__name__}")
    rows = []
    for i, e in enumerate(data):
        where = f"{path}: entry {i}"
        if not isinstance(e, dict):
            raise DatasetError(f"{where}: expected an object, got {type(e).__name__}")
        history, fact = _string(e, "context", where), _string(e, "fact", where)
        responses = e.get("responses")
        if not isinstance(responses, list):
            raise DatasetError(
                f"{where}: field 'responses': " + ("missing" if "responses" not in e else "should be a list")
            )
        keys = UniqueIds("response (model)", "")  # the row key (context, model) is the unit key
        for j, r in enumerate(responses):
            rw = f"{where}: responses[{j}]"
            if not isinstance(r, dict):
                raise DatasetError(f"{rw}: expected an object, got {type(r).__name__}")
            response, system = _string(r, "response", rw), _string(r, "model", rw)
            keys.add(f"c{i:02d}-{_slug(system)}", rw, f"responses[{j}]")
            human, annotators = {}, {}
            for a, f in USR_FIELDS.items():
                vals = r.get(f)
                if vals is None and a not in ASPECTS:
                    continue
                if not isinstance(vals, list) or not vals or not all(_number(v) for v in vals):
                    got = "missing" if f not in r else "should be a non-empty list of numbers"
                    raise DatasetError(f"{rw}: field '{f}': {got}")
                annotators[a] = [float(v) for v in vals]
                human[a] = sum(annotators[a]) / len(annotators[a])
            rows.append(
                TCRow(
                    key=f"c{i:02d}-{_slug(system)}",
                    context_index=i,
                    system=system,
                    history=_turns(history),
                    fact=fact.strip(),
                    response=response.strip(),
                    human=human,
                    annotators=annotators,
                )
            )
    return rows


def _cross_check(main: list[TCRow], usr: list[TCRow], main_path: Path, usr_path: Path) -> None:
    """The two files hold the same 360 ratings (means of the USR annotators): check, then keep
    the per-annotator scores."""
    if len(main) != len(usr):
        raise DatasetError(f"{usr_path}: {len(usr)} responses, but {main_path} has {len(main)}")
    for i, (a, b) in enumerate(zip(main, usr)):
        if a.response != b.response or a.system != b.system:
            raise DatasetError(f"{usr_path}: response {i} ({b.key}) differs from {main_path} entry {i}")
        for asp, v in a.human.items():
            if asp in b.human and abs(v - b.human[asp]) > 1e-6:
                raise DatasetError(
                    f"{main_path}: entry {i}: field 'scores.{asp}': {v} is not the mean of "
                    f"{usr_path}'s annotators ({b.human[asp]:.6f})"
                )
        a.annotators = b.annotators


def load_topical_chat(path: str | Path) -> list[TCRow]:
    """360 rows from the folder (both files, cross-checked) or from either file alone."""
    path = Path(path)
    if path.is_dir():
        main_path, usr_path = path / UNIEVAL, path / USR
        if main_path.is_file():
            rows = _load_unieval(main_path)
            if usr_path.is_file():
                _cross_check(rows, _load_usr(usr_path), main_path, usr_path)
        elif usr_path.is_file():
            rows = _load_usr(usr_path)
        else:
            raise DatasetError(f"{path}: neither {UNIEVAL} nor {USR} in this folder")
    else:
        data = read_json(path, "Topical-Chat")
        first = data[0] if isinstance(data, list) and data else None
        if isinstance(first, dict) and "responses" in first:
            rows = _load_usr(path)
        elif isinstance(first, dict) and "system_output" in first:
            rows = _load_unieval(path)
        else:
            raise DatasetError(
                f"{path}: not a Topical-Chat file (expected UniEval rows with 'system_output' "
                "or USR contexts with 'responses')"
            )
    if not rows:
        raise DatasetError(f"{path}: no Topical-Chat rows")
    seen: dict[str, int] = {}
    for i, r in enumerate(rows):
        if r.key in seen:
            raise DatasetError(
                f"{path}: two '{r.system}' responses for context {r.context_index} (rows {seen[r.key]} and {i})"
            )
        seen[r.key] = i
    return rows
