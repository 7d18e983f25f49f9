"""Read a run directory (and the sub-runs a benchmark writes) into what the viewer shows.

Only the run directory is read: config.json, samples.jsonl, summary.json, report.md and the PNG
plots. Records differ per run kind, so a sample is read by the fields it has (a debate is any
object with a ``transcript``), not by the command that wrote it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..errors import InputError

RUN_FILES = ("summary.json", "samples.jsonl", "config.json")


class NotARunDir(InputError):
    """The path is missing or holds none of a run's files."""


class Debate(BaseModel):
    """One judged item with a transcript: an evaluate record or a judge inside a benchmark record."""

    title: str
    order_turns: dict[str, list[dict[str, Any]]]  # "original" / "swapped" -> turns in recorded order
    agents: list[dict[str, Any]] = Field(default_factory=list)
    verdict: dict[str, Any] | None = None
    orders: dict[str, Any] | None = None
    error: str | None = None


class SampleView(BaseModel):
    key: str
    setting: str = ""  # the sub-run a benchmark wrote it in ("" for the run itself)
    system: str = ""
    category: str = ""
    status: str = "ok"
    failed: bool = False
    split: bool = False
    disagrees: bool | None = None  # verdict vs human label; None where there is no comparable label
    order_disagreement: bool = False
    label: Any = None
    pred: Any = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    debates: list[Debate] = Field(default_factory=list)
    memory: dict[str, Any] = Field(default_factory=dict)  # answer, context, retrieved items, gold
    extra: dict[str, Any] = Field(default_factory=dict)  # every other recorded field, shown as is


class RunView(BaseModel):
    path: str
    name: str
    config: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(default_factory=dict)
    reports: dict[str, str] = Field(default_factory=dict)  # setting -> report.md text
    plots: list[tuple[str, str]] = Field(default_factory=list)  # (relative name, base64 PNG)
    samples: list[SampleView] = Field(default_factory=list)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not readable JSON ({e})") from None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(path.read_text(encoding="utf-8").splitlines()):
                continue  # a torn last line of a killed run: the run writer skips it too
            raise InputError(f"{path}:{i}: not valid JSON") from None
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _is_run(path: Path) -> bool:
    return any((path / f).is_file() for f in RUN_FILES)


def _debates(rec: Any, title: str = "debate") -> list[Debate]:
    """Every object with a transcript inside a record, outermost first."""
    found: list[Debate] = []
    if isinstance(rec, dict):
        if isinstance(rec.get("transcript"), list):
            turns: dict[str, list[dict[str, Any]]] = {}
            for t in rec["transcript"]:
                turns.setdefault(t.get("order", "original"), []).append(t)
            verdict = rec.get("verdict")
            if not isinstance(verdict, dict):  # head-to-head records the winner and the panel apart
                verdict = rec["panel"] if isinstance(rec.get("panel"), dict) else {"winner": verdict}
            found.append(Debate(title=title, order_turns=turns, agents=rec.get("agents") or [],
                                verdict=verdict, orders=rec.get("orders"), error=rec.get("error")))
        for k, v in rec.items():
            if k != "transcript":
                found += _debates(v, k if title == "debate" else f"{title} / {k}")
    elif isinstance(rec, list):
        for i, v in enumerate(rec):
            found += _debates(v, f"{title}[{i}]")
    return found


def _split(agents: list[dict[str, Any]]) -> bool:
    winners = {a.get("winner") for a in agents if not a.get("parse_error") and a.get("winner") is not None}
    correct = {a.get("correct") for a in agents if not a.get("parse_error") and a.get("correct") is not None}
    return len(winners) > 1 or len(correct) > 1


def _pred(rec: dict[str, Any]) -> Any:
    if "pred" in rec:
        return rec["pred"]
    v = rec.get("verdict") or {}
    if not isinstance(v, dict):
        return v
    return v.get("winner") if v.get("winner") is not None else v.get("correct", v.get("score"))


# What a memory benchmark records per question and system, in the order the viewer shows it.
MEMORY_FIELDS = ("answer", "answers", "gold", "correct", "judge", "context", "context_tokens", "retrieved", "evidence",
                 "retrieval", "qa")
SHOWN = {"id", "key", "task", "status", "verdict", "agents", "transcript", "orders", "order_disagreement",
         "label", "human", "pred", "inputs", "error", "system", "systems", "panel", "method", "category", "question_type", "setting"}


def sample_view(rec: dict[str, Any], setting: str = "") -> SampleView:
    debates = _debates(rec)
    label = rec.get("human", rec.get("label"))
    pred = _pred(rec)
    comparable = isinstance(label, (str, bool, int)) and isinstance(pred, (str, bool, int)) and not isinstance(pred, float)
    inputs = dict(rec.get("inputs") or {})
    for k in ("question", "answer_1", "answer_2", "reference", "question_date"):
        if k in rec and k not in inputs and not isinstance(rec[k], (dict, list)):
            inputs[k] = rec[k]
    memory = {k: rec[k] for k in MEMORY_FIELDS if k in rec}
    return SampleView(
        key=str(rec.get("key", rec.get("id", ""))),
        setting=setting,
        system=str(rec.get("system") or rec.get("method") or " vs ".join((rec.get("systems") or {}).values())),
        category=str(rec.get("category") or rec.get("question_type") or (inputs.get("meta") or {}).get("category") or ""),
        status=str(rec.get("status", "ok")),
        failed=rec.get("status") == "failed" or bool(rec.get("error")) or any(d.error for d in debates),
        split=any(_split(d.agents) for d in debates),
        disagrees=(str(label) != str(pred)) if comparable and label is not None else None,
        order_disagreement=bool(rec.get("order_disagreement")) or any(
            (d.orders or {}).get("original") and (d.orders or {}).get("swapped")
            and d.orders["original"].get("winner") != d.orders["swapped"].get("winner") for d in debates),
        label=label, pred=pred, inputs=inputs, debates=debates, memory=memory,
        extra={k: v for k, v in rec.items() if k not in SHOWN and k not in memory and k not in inputs},
    )


def load_run(path: Path) -> RunView:
    """A run directory, its benchmark sub-runs (one level down) and their plots."""
    path = Path(path)
    if not path.is_dir():
        raise NotARunDir(f"{path}: no such run directory")
    if not _is_run(path):
        raise NotARunDir(f"{path}: not a run directory (none of {', '.join(RUN_FILES)})")
    view = RunView(path=str(path), name=path.name or str(path))
    if (path / "config.json").is_file():
        view.config = _json(path / "config.json")
    if (path / "summary.json").is_file():
        view.summary = _json(path / "summary.json")
    subs = [("", path)] + [(p.name, p) for p in sorted(path.iterdir()) if p.is_dir() and _is_run(p)]
    for setting, d in subs:
        if (d / "report.md").is_file():
            view.reports[setting] = (d / "report.md").read_text(encoding="utf-8")
        for png in sorted(d.glob("*.png")):
            name = f"{setting}/{png.name}" if setting else png.name
            view.plots.append((name, base64.b64encode(png.read_bytes()).decode("ascii")))
        if (d / "samples.jsonl").is_file():
            view.samples += [sample_view(r, setting) for r in _jsonl(d / "samples.jsonl")]
    return view
