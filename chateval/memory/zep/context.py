"""The context string of the Zep paper (Rasmussen et al. 2025): facts with their
validity date ranges, then entities with their summaries. The wording is the paper's.
"""

from __future__ import annotations

from datetime import datetime

from ..types import MemoryItem

TEMPLATE = """\
FACTS and ENTITIES represent relevant context to the current conversation.

# These are the most relevant facts and their valid date ranges. If the fact is about an event, the event takes place during this time.
# format: FACT (Date range: from - to)
<FACTS>
{facts}
</FACTS>

# These are the most relevant entities
# ENTITY_NAME: entity summary
<ENTITIES>
{entities}
</ENTITIES>"""


def stamp(t: datetime, times: str = "auto") -> str:
    """A fact date: with the time of day where the data has one (LongMemEval and LoCoMo sessions
    do; a timestamp at exactly 00:00 is read as a date), or always / never (``times``)."""
    with_time = times == "datetime" or (times == "auto" and (t.hour, t.minute, t.second) != (0, 0, 0))
    return f"{t:%Y-%m-%d %H:%M}" if with_time else f"{t:%Y-%m-%d}"


def date_range(valid_at: datetime | None, invalid_at: datetime | None, times: str = "auto") -> str:
    """ "from - to": an open end is "present", an unknown start "unknown"."""
    start = stamp(valid_at, times) if valid_at else "unknown"
    end = stamp(invalid_at, times) if invalid_at else "present"
    return f"{start} - {end}"


def fact_line(item: MemoryItem, times: str = "auto") -> str:
    # Invalidated facts stay, with their range: "lived in Paris until June" answers questions too.
    valid, invalid = item.meta.get("valid_at"), item.meta.get("invalid_at")
    rng = date_range(
        datetime.fromisoformat(valid) if valid else None, datetime.fromisoformat(invalid) if invalid else None, times
    )
    return f"  - {item.text} (Date range: {rng})"


def entity_line(name: str, summary: str) -> str:
    # One line per entity, as in the template; graphiti's summaries can be fact lines.
    lines = [" ".join(line.split()) for line in summary.splitlines() if line.strip()]
    return f"  - {name}: {'; '.join(lines)}"


def format_context(facts: list[MemoryItem], entities: list[tuple[str, str]], times: str = "auto") -> str:
    if not facts and not entities:
        return ""
    return TEMPLATE.format(
        facts="\n".join(fact_line(f, times) for f in facts), entities="\n".join(entity_line(n, s) for n, s in entities)
    )
