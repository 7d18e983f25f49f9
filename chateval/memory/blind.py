"""The blind boundary between a data set and a system under test.

Every benchmark and ``chateval memory`` hands a system its sessions through a ``Blind``: the
system receives each session under an opaque id (its position in date order, ``s1``, ``s2``,
...), each turn under ``s<n>t<m>`` (its position in the session), and only what a conversation
legitimately shows: role, content and the session's date. Everything a data set carries
besides (LongMemEval's ``has_answer`` and its ``answer_...`` session ids, evidence lists,
categories, copies of duplicated sessions) stays on the harness side, and so does the map back:
scoring turns the opaque ids of what a system recalls into the original ids before any metric
or record sees them. Built-in systems, plugin classes, HTTP agents and Ray workers all get the
same blinded sessions, because the benchmark blinds before it calls ``ingest_all``.

Positions are stable within a run (the same history blinds the same way on any worker), say
nothing a system cannot read from the dates, and cannot be turned back into a data set's ids
without the data set itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from .types import MemoryItem, Response, Session, Turn

# Part of a memory benchmark's run identity: runs made before systems were blinded (issue 34)
# do not resume into blinded ones.
BLINDING = "opaque positional ids; role, content and date only (issue 34)"


def blind_turns(turns: Iterable[Turn], prefix: str) -> list[Turn]:
    """Turns as a system sees them: ``<prefix>t<n>`` ids, role and content, no meta."""
    return [Turn(id=f"{prefix}t{n}", role=t.role, content=t.content) for n, t in enumerate(turns, start=1)]


class Blind:
    """One history as the systems under test see it, and the way back to the data set's ids."""

    def __init__(self, sessions: Iterable[Session]) -> None:
        # Date order, stable (ingest_all's order): a session's position is what the reader
        # prompts call it ("Session 3"), so the harness can mark it in a recorded context.
        ordered = sorted(sessions, key=lambda s: s.date)
        self.sessions: list[Session] = []
        self._original: dict[str, str] = {}
        self.positions: dict[str, int] = {}  # original session id -> 1-based position
        for n, s in enumerate(ordered, start=1):
            sid = f"s{n}"
            turns = blind_turns(s.turns, sid)
            self.sessions.append(Session(id=sid, date=s.date, turns=turns))
            self._original[sid] = s.id
            self._original |= {b.id: t.id for b, t in zip(turns, s.turns)}
            self.positions[s.id] = n

    def original(self, opaque: str) -> str:
        """The data set's id of a session or turn id a system returned (an id it made up is
        returned as it is: it matches no gold)."""
        return self._original.get(opaque, opaque)

    def item(self, item: MemoryItem) -> MemoryItem:
        """A recalled item with the data set's session and turn ids (and its own id, when a
        system uses a session's id as the item's)."""
        return item.model_copy(
            update={
                "id": self.original(item.id),
                "session_id": self.original(item.session_id),
                "turn_ids": [self.original(t) for t in item.turn_ids],
            }
        )

    def items(self, items: Iterable[MemoryItem]) -> list[MemoryItem]:
        return [self.item(i) for i in items]

    def response(self, response: Response) -> Response:
        """A response whose recalled items carry the data set's ids."""
        return response.model_copy(update={"recalled": self.items(response.recalled)})

    @staticmethod
    def dialogue(turns: Iterable[Turn]) -> list[Turn]:
        """The current session's turns so far, as a system sees them (``c`` for current)."""
        return blind_turns(turns, "c")

    def positions_of(self, session_ids: Iterable[str]) -> list[int]:
        """The positions (as reader prompts number sessions) of these original session ids."""
        return sorted(self.positions[s] for s in set(session_ids) if s in self.positions)
