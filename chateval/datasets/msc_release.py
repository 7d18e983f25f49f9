"""Multi-Session Chat in its public release layout (Xu et al. 2022; ParlAI ``msc_dialogue``):
one JSON object per line, ``previous_dialogs`` (the earlier sessions, oldest first) and
``dialog`` (the last session). This is the layout of ``../shared/data/msc/``.

The release has no calendar dates, only the gap between each earlier session and the next one
(``time_num`` + ``time_unit``). The last session is dated ``anchor`` and each earlier one the gap
before its successor. Turns alternate Speaker 1 / Speaker 2 from Speaker 1; a last-session turn
whose ``id`` is not a speaker name (a few carry a crowd-worker number) gets the speaker its
position implies (every named turn of the shared file agrees with the alternation; one that
does not is an error).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .checks import UniqueIds
from .common import DatasetError, jsonl_objects, require
from .types import Session, Turn

ANCHOR = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)  # the (arbitrary) date of every last session
SPEAKERS = ("Speaker 1", "Speaker 2")
_UNIT_S = {"minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400}


class MSCDialogue(BaseModel):
    """One MSC episode: earlier sessions (dated) and the last session, whose turns are predicted."""

    id: str
    past: list[Session]
    current: Session
    personas: list[list[str]] = Field(default_factory=list)


def gap(num: Any, unit: Any, where: str) -> timedelta:
    """``time_num`` ``time_unit`` as a timedelta ("6", "days" -> 6 days)."""
    key = str(unit).strip().lower().rstrip("s")
    if key not in _UNIT_S:
        raise DatasetError(f"{where}: field 'time_unit' should be one of {', '.join(_UNIT_S)}, got {unit!r}")
    try:
        n = float(num)
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: field 'time_num' should be a number, got {num!r}") from None
    if n < 0:
        raise DatasetError(f"{where}: field 'time_num' should not be negative, got {num!r}")
    return timedelta(seconds=n * _UNIT_S[key])


def _turns(sid: str, dialog: list[Any], where: str) -> list[Turn]:
    turns = []
    for i, t in enumerate(dialog):
        text = require(t, "text", str, f"{where}: turn {i}")
        role = SPEAKERS[i % 2]
        named = str(t.get("id", ""))
        if named in SPEAKERS and named != role:
            raise DatasetError(f"{where}: turn {i}: id '{named}' breaks the Speaker 1 / Speaker 2 alternation")
        turns.append(Turn(id=f"{sid}-t{i + 1}", role=role, content=text))
    return turns


def load_msc_release(path: str | Path, anchor: datetime = ANCHOR) -> list[MSCDialogue]:
    out: list[MSCDialogue] = []
    ids = UniqueIds("episode id (metadata.initial_data_id)", "line")  # the units' keys
    for no, row in jsonl_objects(path, "Multi-Session Chat"):
        where = f"{path}:{no}"
        meta = row.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        eid = meta.get("initial_data_id") or f"line{no}"
        if isinstance(eid, bool) or not isinstance(eid, (str, int)):
            raise DatasetError(
                f"{where}: field 'metadata.initial_data_id' should be a string, got {type(eid).__name__}"
            )
        eid = str(eid)
        ids.add(eid, where, no)
        previous = require(row, "previous_dialogs", list, where)
        dialog = require(row, "dialog", list, where)
        if not dialog:
            raise DatasetError(f"{where}: field 'dialog' is empty")
        n = len(previous)
        current = Session(id=f"{eid}-s{n + 1}", date=anchor, turns=_turns(f"{eid}-s{n + 1}", dialog, where))
        past: list[Session] = []
        when = anchor
        for k in range(n - 1, -1, -1):  # newest first: step back by each session's gap to the next
            p_where = f"{where}: previous_dialogs[{k}]"
            p = previous[k]
            turns = require(p, "dialog", list, p_where)
            when = when - gap(
                require(p, "time_num", (int, float, str), p_where), require(p, "time_unit", str, p_where), p_where
            )
            sid = f"{eid}-s{k + 1}"
            past.insert(0, Session(id=sid, date=when, turns=_turns(sid, turns, p_where)))
        personas = row.get("personas")
        if not isinstance(personas, list):
            personas = []
        out.append(
            MSCDialogue(
                id=eid,
                past=past,
                current=current,
                personas=[[str(x) for x in p] for p in personas if isinstance(p, list)],
            )
        )
    if not out:
        raise DatasetError(f"{path}: no episodes")
    return out
