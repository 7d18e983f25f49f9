"""Multi-Session Chat episodes in the column layout of THEANINE's input, msc-raw and
Conversation Chronicles: ``<ordinal>_session_dialogue`` / ``<ordinal>_session_speakers``.

The MSC layout has no dates. Session i is dated ``start + i * gap`` (7 days by default),
unless a ``<ordinal>_time_interval`` field or the ``time_interval`` list (msc-raw, Conversation
Chronicles) gives the gap ("2 days", "a few hours", ...).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .checks import UniqueIds
from .common import DatasetError, read_json
from .types import Session, Turn

ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
DEFAULT_START = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a few": 3,
    "few": 3,
    "a couple of": 2,
    "couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "several": 5,
}
_UNITS = {"minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400}


class MSCEpisode(BaseModel):
    id: str
    sessions: list[Session]
    speakers: list[str]


def parse_interval(text: str) -> timedelta | None:
    m = re.search(rf"\b(\d+|{'|'.join(_COUNTS)})\s+(minute|hour|day|week|month|year)s?\b", text.lower())
    if not m:
        return None
    n = _COUNTS.get(m.group(1))
    return timedelta(seconds=(n if n is not None else int(m.group(1))) * _UNITS[m.group(2)])


def _listed_interval(intervals: object, n: int, n_sessions: int) -> str | None:
    """The gap before session ``n`` (0-based) from a ``time_interval`` list (msc-raw and
    Conversation Chronicles): one entry per session (the first has no gap) or one per gap."""
    if not isinstance(intervals, list):
        return None
    idx = n if len(intervals) == n_sessions else n - 1 if len(intervals) == n_sessions - 1 else None
    return str(intervals[idx]) if idx is not None and intervals[idx] else None


def load_msc(
    path: str | Path, gap: timedelta = timedelta(days=7), start: datetime = DEFAULT_START, *, data: Any = None
) -> list[MSCEpisode]:
    """The episodes of a THEANINE-style MSC file (``data``: that file already parsed, not read again)."""
    if data is None:
        data = read_json(path, "Multi-Session Chat")
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of episodes")
    episodes = []
    ids = UniqueIds("episode id", "episode")  # an episode's sessions and units are keyed by it
    for idx, ep in enumerate(data):
        where = f"{path}: episode {idx}"
        if not isinstance(ep, dict):
            raise DatasetError(f"{where}: expected an object")
        eid = ep.get("dataID", ep.get("id", f"episode-{idx}"))
        if isinstance(eid, bool) or not isinstance(eid, (str, int)):
            key = "dataID" if "dataID" in ep else "id"
            raise DatasetError(f"{where}: field '{key}' should be a string, got {type(eid).__name__}")
        eid = str(eid)
        ids.add(eid, f"{where} ({eid})", idx)
        sessions, when, speakers = [], start, []
        n_sessions = next((i for i, o in enumerate(ORDINALS) if ep.get(f"{o}_session_dialogue") is None), len(ORDINALS))
        for n, ordinal in enumerate(ORDINALS):
            dialogue = ep.get(f"{ordinal}_session_dialogue")
            if dialogue is None:
                break
            who = ep.get(f"{ordinal}_session_speakers")
            if not isinstance(dialogue, list) or not isinstance(who, list) or len(who) != len(dialogue):
                raise DatasetError(
                    f"{where} ({eid}): {ordinal}_session_dialogue and _speakers must be lists of the same length"
                )
            for field, values in ((f"{ordinal}_session_dialogue", dialogue), (f"{ordinal}_session_speakers", who)):
                bad = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
                if bad is not None:  # null or a number would be ingested as the text "None" / "3"
                    raise DatasetError(
                        f"{where} ({eid}): field '{field}' item {bad} should be a string, "
                        f"got {type(values[bad]).__name__}"
                    )
            if n:
                interval = ep.get(f"{ordinal}_time_interval") or _listed_interval(
                    ep.get("time_interval"), n, n_sessions
                )
                when = when + ((parse_interval(str(interval)) if interval else None) or gap)
            sid = f"{eid}-s{n + 1}"
            sessions.append(
                Session(
                    id=sid,
                    date=when,
                    turns=[
                        Turn(id=f"{sid}-t{i + 1}", role=s, content=u) for i, (s, u) in enumerate(zip(who, dialogue))
                    ],
                )
            )
            for s in who:
                if s not in speakers:
                    speakers.append(s)
        if not sessions:
            raise DatasetError(f"{where} ({eid}): no '<ordinal>_session_dialogue' fields (e.g. first_session_dialogue)")
        episodes.append(MSCEpisode(id=eid, sessions=sessions, speakers=speakers))
    return episodes
