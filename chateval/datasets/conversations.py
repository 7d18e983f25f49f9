"""Multi-session conversations between two peers, from a LoCoMo file or a Multi-Session Chat
file (auto-detected): what TeaFarm and the dialogue benchmarks ingest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .common import DatasetError, read_json
from .locomo import locomo_conversations
from .msc import load_msc
from .types import Session


@dataclass
class Conversation:
    id: str
    speakers: list[str]
    sessions: list[Session]


FORMATS = (
    "a LoCoMo file (a JSON list of conversations with 'conversation', as locomo10.json) or a "
    "Multi-Session Chat file (a JSON list of episodes with 'first_session_dialogue', ..., as THEANINE's "
    "sample_dialogue.json)"
)


def load_conversations(path: str | Path) -> tuple[str, list[Conversation]]:
    """('locomo' | 'msc', conversations) from a LoCoMo file or a Multi-Session Chat file."""
    data = read_json(path, "LoCoMo or Multi-Session Chat", expected=FORMATS)  # parsed once, not again per format
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(first, dict) and "conversation" in first:
        return "locomo", [Conversation(c.id, c.speakers, c.sessions) for c in locomo_conversations(data, path)]
    if isinstance(first, dict) and any(str(k).endswith("_session_dialogue") for k in first):
        return "msc", [Conversation(e.id, e.speakers, e.sessions) for e in load_msc(path, data=data)]
    raise DatasetError(
        f"{path}: neither a LoCoMo file (a list of conversations with 'conversation') nor a "
        "Multi-Session Chat file (episodes with 'first_session_dialogue', ...)"
    )
