"""Reading graded answer sets from the formats in use (auto-detected, or forced with --format):

- ``evermemos``: ``eval_results.json`` with ``detailed_results`` {conversation: [{question_id,
  question, golden_answer, generated_answer, llm_judgments: {judgment_1: bool, ...}, category}]}
  (EverMemOS and the published systems' results it evaluated; locomo-audit's baselines);
- ``zep``: Zep's grades file {"locomo_experiment_user_<k>": [{question, answer, golden_answer,
  grade, category}]};
- ``longmemeval``: a hypothesis JSONL ({question_id, hypothesis}) with the official
  ``<file>.eval-results-<model>`` files beside it (``autoeval_label``), or one of those files;
  questions and gold answers come from the LongMemEval data file (``--lme-data``);
- ``run``: a chateval ``bench locomo`` / ``bench longmemeval`` run directory (one set per system);
- ``jsonl``: one object per line {question, gold, answer, category?, conversation?, id?,
  verdicts?, wrong?}; ``verdicts`` is a list of booleans (runs of one judge), {judge: bool or
  [bool]}, or a list of {judge, run, accepted}.

Every error is one line naming the file, the entry and the field.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ..datasets.common import DatasetError, jsonl_objects, read_json, require
from ..datasets.errata import conversation_of
from .sets import FORMATS, GradedItem, GradedSet, Verdict

_CONV_INDEX = re.compile(r".*?_(\d+)$")


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = require(entry, key, (str, int, float), where)
    return str(value)


def _bool(value: Any, where: str, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "correct", "wrong", "yes", "no"):
        return value.strip().lower() in ("true", "correct", "yes")
    raise DatasetError(f"{where}: field '{field}' should be true or false, got {value!r}")


def detect(path: Path) -> str:
    """The format of ``path``; an error naming it when none fits."""
    if path.is_dir():
        if (path / "config.json").exists() or (path / "summary.json").exists():
            return "run"
        raise DatasetError(f"{path}: a folder that is not a chateval run (no config.json or summary.json)")
    if not path.exists():
        raise DatasetError(f"{path}: file not found")
    if ".eval-results-" in path.name:
        return "longmemeval"
    head = path.read_bytes()[:4096].lstrip()
    if head.startswith(b"{") and b"\n{" in path.read_bytes().strip():
        first = next(jsonl_objects(path, "graded answers"), (0, {}))[1]
        return "longmemeval" if "hypothesis" in first and "answer" not in first else "jsonl"
    data = read_json(path, "graded answers")
    if isinstance(data, dict) and "detailed_results" in data:
        return "evermemos"
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        head_item: Any = next((v[0] for v in data.values() if v), None)
        if isinstance(head_item, dict) and "grade" in head_item:
            return "zep"
    if isinstance(data, dict) and {"question_id", "hypothesis"} <= set(data):
        return "longmemeval"  # a hypothesis file of one line
    if isinstance(data, dict) and {"question", "answer"} <= set(data):
        return "jsonl"
    raise DatasetError(
        f"{path}: not a graded answer set chateval knows (expected one of: {', '.join(FORMATS)}; "
        "see `chateval rejudge --help`); force one with --format"
    )


def load_set(
    path: str | Path, label: str | None = None, *, fmt: str = "auto", wrong: bool = False, lme_data: str | None = None
) -> list[GradedSet]:
    """The graded sets in ``path`` (a run directory may hold several: one per system)."""
    p = Path(path)
    kind = detect(p) if fmt == "auto" else fmt
    if kind not in FORMATS:
        raise DatasetError(f"--format {kind}: unknown (one of auto, {', '.join(FORMATS)})")
    name = label or p.stem
    if kind == "run":
        from .runs import load_run

        sets = load_run(p, name)
    else:
        items = {
            "evermemos": _evermemos,
            "zep": _zep,
            "jsonl": _jsonl,
            "longmemeval": lambda q: _longmemeval(q, lme_data),
        }[kind](p)
        sets = [
            GradedSet(
                label=name,
                path=str(p),
                format=kind,
                sha256=_sha(p),
                items=items,
                answer_model=_answer_model(p, kind),
                stated=_stated(p, kind),
            )
        ]
    for s in sets:
        if not s.items:
            raise DatasetError(f"{p}: no graded answers found")
        _unique(s, p)
        if wrong:
            s.wrong = True
            for it in s.items:
                it.wrong = True
    return sets


def _answer_model(p: Path, kind: str) -> str | None:
    if kind != "evermemos":
        return None
    meta = read_json(p, "EverMemOS-style results").get("metadata")
    return str(meta["answer_model"]) if isinstance(meta, dict) and meta.get("answer_model") else None


def _stated(p: Path, kind: str) -> dict[str, float]:
    """The rates an EverMemOS-style file states about itself (numbers only; anything else is ignored)."""
    if kind != "evermemos":
        return {}
    data = read_json(p, "EverMemOS-style results")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    out: dict[str, float] = {}

    def put(key: str, v: Any) -> None:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[key] = float(v)

    put("accuracy", data.get("accuracy"))
    put("majority", meta.get("majority_vote_accuracy"))
    for i, v in enumerate(meta.get("run_scores") or []):
        put(f"run {i + 1}", v)
    for cat, v in (meta.get("category_accuracies") or {}).items():
        put(f"category {cat}", v.get("mean") if isinstance(v, dict) else v)
    return out


def _unique(s: GradedSet, p: Path) -> None:
    seen: set[str] = set()
    for it in s.items:
        if it.id in seen:
            raise DatasetError(f"{p}: item id '{it.id}' given twice")
        seen.add(it.id)


def _conv_index(key: str) -> int | None:
    m = _CONV_INDEX.fullmatch(key)
    return int(m.group(1)) if m else None


def _evermemos(p: Path) -> list[GradedItem]:
    data = read_json(p, "EverMemOS-style results")
    results = require(data, "detailed_results", dict, str(p))
    judge = str((data.get("metadata") or {}).get("judge_model") or "recorded")
    out = []
    for conv, rows in results.items():
        if not isinstance(rows, list):
            raise DatasetError(f"{p}: detailed_results.{conv} should be a list, got {type(rows).__name__}")
        for i, row in enumerate(rows):
            where = f"{p}: detailed_results.{conv}[{i}]"
            qid = str(row.get("question_id") or f"{conv}#{i}") if isinstance(row, dict) else ""
            judgments = require(row, "llm_judgments", (dict, list), where)
            if isinstance(judgments, list):  # a variant writes the runs as a list
                judgments = {f"judgment_{n + 1}": v for n, v in enumerate(judgments)}
            verdicts = [
                Verdict(
                    judge=judge, run=re.sub(r"^judgment_", "", str(k)), accepted=_bool(v, where, f"llm_judgments.{k}")
                )
                for k, v in judgments.items()
            ]
            # The answer under its usual name, or `answer` (the Mem0-derived evaluations' name).
            answer_key = "generated_answer" if "generated_answer" in row or "answer" not in row else "answer"
            cat = row.get("category")
            out.append(
                GradedItem(
                    id=qid,
                    question=_text(row, "question", where),
                    gold=_text(row, "golden_answer", where),
                    answer=_text(row, answer_key, where),
                    category=None if cat is None else str(cat),
                    conversation=str(conv),
                    verdicts=verdicts,
                    wrong=bool(row.get("wrong", False)),
                    question_id=qid,
                    conversation_index=conversation_of(qid) if conversation_of(qid) is not None else _conv_index(conv),
                )
            )
    return out


def _zep(p: Path) -> list[GradedItem]:
    data = read_json(p, "Zep grades")
    out = []
    for conv, rows in data.items():
        for i, row in enumerate(rows):
            where = f"{p}: {conv}[{i}]"
            out.append(
                GradedItem(
                    id=f"{conv}#{i}",
                    question=_text(row, "question", where),
                    gold=_text(row, "golden_answer", where),
                    answer=_text(row, "answer", where),
                    category=None if row.get("category") is None else str(row["category"]),
                    conversation=str(conv),
                    verdicts=[
                        Verdict(
                            judge="zep-grader",
                            run="1",
                            accepted=_bool(require(row, "grade", (bool, str), where), where, "grade"),
                        )
                    ],
                    conversation_index=_conv_index(conv),
                )
            )
    return out


def _verdicts(raw: Any, where: str) -> list[Verdict]:
    if raw is None:
        return []
    if isinstance(raw, bool):
        return [Verdict(judge="recorded", run="1", accepted=raw)]
    if isinstance(raw, list):
        out = []
        for i, v in enumerate(raw):
            if isinstance(v, dict):
                out.append(
                    Verdict(
                        judge=str(v.get("judge") or "recorded"),
                        run=str(v.get("run") or i + 1),
                        accepted=_bool(
                            require(v, "accepted", (bool, str), f"{where}: verdicts[{i}]"),
                            where,
                            f"verdicts[{i}].accepted",
                        ),
                    )
                )
            else:
                out.append(Verdict(judge="recorded", run=str(i + 1), accepted=_bool(v, where, f"verdicts[{i}]")))
        return out
    if isinstance(raw, dict):
        out = []
        for judge, v in raw.items():
            runs = v if isinstance(v, list) else [v]
            out += [
                Verdict(judge=str(judge), run=str(i + 1), accepted=_bool(x, where, f"verdicts.{judge}"))
                for i, x in enumerate(runs)
            ]
        return out
    raise DatasetError(f"{where}: field 'verdicts' should be a list or an object, got {type(raw).__name__}")


def _jsonl(p: Path) -> list[GradedItem]:
    out = []
    for no, row in jsonl_objects(p, "graded answers"):
        where = f"{p}:{no}"
        qid = str(row.get("id") or row.get("question_id") or f"line{no}")
        cat = row.get("category")
        conv = row.get("conversation")
        out.append(
            GradedItem(
                id=qid,
                question=_text(row, "question", where),
                gold=_text(row, "gold", where),
                answer=_text(row, "answer", where),
                category=None if cat is None else str(cat),
                conversation=str(conv) if conv is not None else qid,  # no conversation: each item its own
                verdicts=_verdicts(row.get("verdicts"), where),
                wrong=_bool(row.get("wrong", False), where, "wrong"),
                question_id=row.get("question_id"),
                conversation_index=conversation_of(str(row.get("question_id") or "")),
                question_type=row.get("question_type"),
                abstention=bool(row.get("abstention", False)),
            )
        )
    return out


def _lme_references(lme_data: str | None, p: Path) -> dict[str, dict[str, Any]]:
    if not lme_data:
        raise DatasetError(
            f"{p}: LongMemEval hypotheses hold no questions or gold answers; give the data file they "
            "answer with --lme-data (e.g. longmemeval_s.json)"
        )
    data = read_json(lme_data, "LongMemEval")
    if not isinstance(data, list):
        raise DatasetError(f"{lme_data}: expected a JSON list of LongMemEval questions")
    return {str(q.get("question_id")): q for q in data if isinstance(q, dict)}


def _longmemeval(p: Path, lme_data: str | None) -> list[GradedItem]:
    base = Path(str(p).split(".eval-results-")[0]) if ".eval-results-" in p.name else p
    files = sorted(base.parent.glob(base.name + ".eval-results-*")) if ".eval-results-" not in p.name else [p]
    refs = _lme_references(lme_data, p)
    answers: dict[str, str] = {}
    verdicts: dict[str, list[Verdict]] = {}
    order: list[str] = []
    # The hypotheses (when beside), then each judge's eval-results file (which repeat them).
    for f in ([base] if base.is_file() else []) + files:
        judged = ".eval-results-" in f.name
        model = f.name.split(".eval-results-", 1)[1] if judged else ""
        for no, row in jsonl_objects(f, "LongMemEval hypotheses"):
            where = f"{f}:{no}"
            qid = _text(row, "question_id", where)
            if qid not in refs:
                raise DatasetError(f"{where}: question_id '{qid}' is not in {lme_data}")
            if qid not in answers:
                order.append(qid)
            answers[qid] = _text(row, "hypothesis", where)
            if judged:
                label = require(row, "autoeval_label", dict, where)
                ok = _bool(
                    require(label, "label", (bool, str), f"{where}: autoeval_label"), where, "autoeval_label.label"
                )
                verdicts.setdefault(qid, []).append(
                    Verdict(judge=str(label.get("model") or model), run="1", accepted=ok)
                )
    out = []
    for qid in order:
        ref = refs[qid]
        where = f"{lme_data}: question {qid}"
        out.append(
            GradedItem(
                id=qid,
                question=_text(ref, "question", where),
                gold=_text(ref, "answer", where),
                answer=answers[qid],
                category=str(ref.get("question_type") or "") or None,
                conversation=qid,  # each question has its own history
                verdicts=verdicts.get(qid, []),
                question_id=qid,
                question_type=str(ref.get("question_type") or "") or None,
                abstention=qid.endswith("_abs"),
            )
        )
    return out


def parse_spec(spec: str) -> tuple[str, str | None, bool]:
    """``FILE[:LABEL]`` -> (file, label, wrong); the label ``wrong`` (or ``LABEL:wrong``) marks a
    known-wrong set. A colon that is part of an existing path is kept. FILE may be a data set's
    name (``NAME`` or ``NAME/FILE``, no colon in either), which the caller resolves."""
    if Path(spec).exists():
        return spec, None, False
    path, _, rest = spec.partition(":")
    if not rest:
        return spec, None, False
    parts = rest.split(":")
    wrong = "wrong" in parts
    labels = [x for x in parts if x and x != "wrong"]
    return path, (labels[0] if labels else None), wrong


__all__ = ["detect", "load_set", "parse_spec"]
