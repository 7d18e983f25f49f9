"""LoCoMo (Maharana et al., ACL 2024): the official locomo10.json format, any number of conversations."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .checks import UniqueIds, build, text_or_number
from .common import DatasetError, read_json, require
from .types import Session, Turn

# Category numbers as the official task_eval/evaluation.py treats them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


class LoCoMoQA(BaseModel):
    question: str
    answer: str | None  # category 5 usually has none (only adversarial_answer)
    category: int
    evidence: list[str]
    adversarial_answer: str | None = None


class LoCoMoConversation(BaseModel):
    id: str
    speakers: list[str]
    sessions: list[Session]
    qa: list[LoCoMoQA]


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def parse_evidence(raw: Any) -> list[str]:
    """Dialogue ids like 'D1:3'; malformed strings ('D8:6; D9:17', 'D:11:26') are split or dropped."""
    out = []
    for item in raw or []:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def load_locomo(path: str | Path) -> list[LoCoMoConversation]:
    return locomo_conversations(read_json(path, "LoCoMo"), path)


def locomo_conversations(data: Any, path: str | Path) -> list[LoCoMoConversation]:
    """The conversations of a parsed LoCoMo file; a sample_id given twice is an error (its
    units would share a key and each carry both conversations' QA)."""
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of conversations (locomo10.json format)")
    out, ids = [], UniqueIds("sample_id", "conversation")
    for i, entry in enumerate(data):
        where = f"{path}: conversation {i}"
        conv = _conversation(entry, where)
        ids.add(conv.id, f"{where} ({conv.id})", i)
        out.append(conv)
    return out


def _speaker(conv: dict[str, Any], key: str, default: str, where: str) -> str:
    value = conv.get(key, default)
    if not isinstance(value, str):
        raise DatasetError(f"{where}: field 'conversation.{key}' should be a string, got {type(value).__name__}")
    return value


def _conversation(entry: Any, where: str) -> LoCoMoConversation:
    cid = str(require(entry, "sample_id", str, where))
    where = f"{where} ({cid})"
    conv = require(entry, "conversation", dict, where)
    speakers = [_speaker(conv, "speaker_a", "A", where), _speaker(conv, "speaker_b", "B", where)]
    numbers = []
    for k in conv:
        if m := re.fullmatch(r"session_(\d+)", k):
            n = int(m.group(1))
            if k != f"session_{n}":  # session_01 (and session_1 beside it) would be one session id twice
                raise DatasetError(f"{where}: field 'conversation.{k}': expected session_{n} (no leading zeros)")
            numbers.append(n)
    numbers.sort()
    sessions = []
    for n in numbers:
        date_text = conv.get(f"session_{n}_date_time")
        if not isinstance(date_text, str):
            raise DatasetError(f"{where}: session_{n}_date_time missing")
        try:
            date = parse_locomo_date(date_text)
        except ValueError:
            raise DatasetError(
                f"{where}: session_{n}_date_time '{date_text}' is not like '1:56 pm on 8 May, 2023'"
            ) from None
        turns = []
        raw_turns = conv[f"session_{n}"]
        if not isinstance(raw_turns, list):
            raise DatasetError(f"{where}: session_{n} should be a list of turns")
        for j, t in enumerate(raw_turns):
            if not isinstance(t, dict):
                raise DatasetError(f"{where}: session_{n} turn {j} should be an object, got {type(t).__name__}")
            for key in ("text", "speaker", "blip_caption"):
                if t.get(key) is not None and not isinstance(t[key], str):
                    raise DatasetError(
                        f"{where}: session_{n} turn {j}: field '{key}' should be a string, got {type(t[key]).__name__}"
                    )
            text = t.get("text") or ""
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            turns.append(Turn(id=str(t.get("dia_id", "")), role=str(t.get("speaker", "")), content=text))
        sessions.append(Session(id=f"{cid}-session_{n}", date=date, turns=turns))
    qa = []
    for j, q in enumerate(require(entry, "qa", list, where)):
        qw = f"{where}: qa {j}"
        question = require(q, "question", str, qw)  # also: q is an object
        category = require(q, "category", int, qw)
        if isinstance(category, bool):
            raise DatasetError(f"{qw}: field 'category' should be int, got bool")
        evidence = q.get("evidence")
        if evidence is not None and not isinstance(evidence, list):
            raise DatasetError(f"{qw}: field 'evidence' should be a list, got {type(evidence).__name__}")
        qa.append(
            build(
                LoCoMoQA,
                qw,
                question=question,
                answer=text_or_number(q, "answer", qw),  # some official answers are numbers (years)
                category=category,
                evidence=parse_evidence(evidence),
                adversarial_answer=text_or_number(q, "adversarial_answer", qw),
            )
        )
    return build(LoCoMoConversation, where, id=cid, speakers=speakers, sessions=sessions, qa=qa)
