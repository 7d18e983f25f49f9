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


def date_range(valid_at: datetime | None, invalid_at: datetime | None) -> str:
    """"from - to": an open end is "present", an unknown start "unknown"."""
    start = f"{valid_at:%Y-%m-%d}" if valid_at else "unknown"
    end = f"{invalid_at:%Y-%m-%d}" if invalid_at else "present"
    return f"{start} - {end}"


def fact_line(item: MemoryItem) -> str:
    # Invalidated facts stay, with their range: "lived in Paris until June" answers questions too.
    valid, invalid = item.meta.get("valid_at"), item.meta.get("invalid_at")
    rng = date_range(datetime.fromisoformat(valid) if valid else None,
                     datetime.fromisoformat(invalid) if invalid else None)
    return f"  - {item.text} (Date range: {rng})"


def entity_line(name: str, summary: str) -> str:
    # One line per entity, as in the template; graphiti's summaries can be fact lines.
    lines = [" ".join(line.split()) for line in summary.splitlines() if line.strip()]
    return f"  - {name}: {'; '.join(lines)}"


def format_context(facts: list[MemoryItem], entities: list[tuple[str, str]]) -> str:
    if not facts and not entities:
        return ""
    return TEMPLATE.format(facts="\n".join(fact_line(f) for f in facts),
                           entities="\n".join(entity_line(n, s) for n, s in entities))
