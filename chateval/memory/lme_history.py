"""LongMemEval's full-history reading as its official generation code lays it out and cuts it,
for ``full_context``'s options ``layout=longmemeval`` and ``truncate=official``.

The layout (xiaowu0162/LongMemEval, ``src/generation/run_generation.py``, history format
``json``, read, not copied): the sessions in date order, each numbered by its position, a line
with the session's date, then the session's turns as one JSON list. The official list is the
data file's turn objects; here each turn is only its role and content, so no gold field (the
file's ``has_answer``) and no dataset session id can reach the reader.

The cut: when the history is longer than the model's window minus the reader's output limit
minus 1,000 tokens (800 + 1,000 = 1,800 with the official step-by-step reader), the official
code keeps its first tokens, so the newest end of the history is lost.
"""

from __future__ import annotations

import json

from ..datasets.types import Session

# Tokens the official code keeps free besides the reader's output (its prompt text around the history).
PROMPT_ALLOWANCE = 1000
CHARS_PER_TOKEN = 4  # the official code counts with tiktoken's o200k_base; ours is the local ~4 characters a token


def session_block(position: int, session: Session) -> str:
    """One session: its 1-based position, its date as the official files write it, its turns as JSON."""
    turns = [{"role": t.role, "content": t.content} for t in session.turns]
    return f"\n### Session {position}:\nSession Date: {session.date:%Y/%m/%d (%a) %H:%M}\nSession Content:\n\n{json.dumps(turns)}\n"


def history_budget(window: int, reply_tokens: int) -> int:
    """The tokens the official code leaves the history: window - reply - 1,000."""
    return window - reply_tokens - PROMPT_ALLOWANCE


def cut_newest_end(text: str, budget_tokens: int) -> str:
    """The history's first ``budget_tokens`` tokens (the official cut drops the newest end)."""
    limit = max(budget_tokens, 0) * CHARS_PER_TOKEN
    return text if len(text) <= limit else text[:limit]
