"""LoCoMo (Maharana et al., ACL 2024): the official locomo10.json format, any number of conversations."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .types import Session, Turn
from .common import DatasetError, read_json, require

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
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


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
    data = read_json(path, "LoCoMo")
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of conversations (locomo10.json format)")
    return [_conversation(c, f"{path}: conversation {i}") for i, c in enumerate(data)]


def _conversation(entry: Any, where: str) -> LoCoMoConversation:
    cid = str(require(entry, "sample_id", str, where))
    where = f"{where} ({cid})"
    conv = require(entry, "conversation", dict, where)
    speakers = [conv.get("speaker_a", "A"), conv.get("speaker_b", "B")]
    numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    sessions = []
    for n in numbers:
        date_text = conv.get(f"session_{n}_date_time")
        if not isinstance(date_text, str):
            raise DatasetError(f"{where}: session_{n}_date_time missing")
        try:
            date = parse_locomo_date(date_text)
        except ValueError:
            raise DatasetError(f"{where}: session_{n}_date_time '{date_text}' is not like '1:56 pm on 8 May, 2023'") from None
        turns = []
        raw_turns = conv[f"session_{n}"]
        if not isinstance(raw_turns, list):
            raise DatasetError(f"{where}: session_{n} should be a list of turns")
        for j, t in enumerate(raw_turns):
            if not isinstance(t, dict):
                raise DatasetError(f"{where}: session_{n} turn {j} should be an object, got {type(t).__name__}")
            text = str(t.get("text", ""))
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            turns.append(Turn(id=str(t.get("dia_id", "")), role=str(t.get("speaker", "")), content=text))
        sessions.append(Session(id=f"{cid}-session_{n}", date=date, turns=turns))
    qa = []
    for j, q in enumerate(require(entry, "qa", list, where)):
        qw = f"{where}: qa {j}"
        answer = q.get("answer")
        qa.append(LoCoMoQA(
            question=str(require(q, "question", str, qw)),
            answer=None if answer is None else str(answer),
            category=int(require(q, "category", int, qw)),
            evidence=parse_evidence(q.get("evidence")),
            adversarial_answer=q.get("adversarial_answer"),
        ))
    return LoCoMoConversation(id=cid, speakers=speakers, sessions=sessions, qa=qa)
