"""full_context: every past session, verbatim, in the prompt (the long-context baseline)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...models import approx_tokens
from ...models.context_windows import context_window, min_tokens
from ...util.errors import ConfigError
from ..base import MemorySystem, memory_system
from ..lme_history import cut_newest_end, history_budget, session_block
from ..types import MemoryItem, Session

TRUNCATE_HINT = "--set full_context.max_context_tokens=N"


class FullContextSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # By default the reader gets the whole history, as LongMemEval's full-history baseline does.
    # With max_context_tokens (a local estimate, ~4 characters a token) whole sessions are
    # dropped beyond it, the oldest first ("none": never drop, the budget only documents intent).
    # "official": LongMemEval's cut of the whole history, its newest end, to the window minus the
    # reply's limit minus 1,000 tokens (lme_history; needs a known or declared context_window).
    max_context_tokens: int | None = Field(None, gt=0)
    truncate: Literal["oldest_first", "none", "official"] = "oldest_first"
    # How sessions are shown. chateval: ours (render_session). longmemeval: LongMemEval's official
    # json history (lme_history): numbered by position, a date line, the turns as a JSON list.
    layout: Literal["chateval", "longmemeval"] = "chateval"
    # The reader model's context window in tokens, for the up-front fit check (default: the
    # table of known models; unknown models are not checked).
    context_window: int | None = Field(None, gt=0)


def render_session(s: Session, number: int) -> str:
    """A session as the reader sees it: by its position in the history and its date, never by
    its id (a data set's ids can carry gold: LongMemEval's evidence sessions are ``answer_...``)."""
    return f"## Session {number} ({s.date:%Y-%m-%d %H:%M})\n" + s.transcript()


@memory_system("full_context")
class FullContext(MemorySystem[FullContextSettings]):
    description = "all past sessions verbatim in the prompt; an optional budget drops the oldest"
    uses_embedder = False
    paper = "long-context baseline (LongMemEval, Wu et al. 2025)"
    Settings = FullContextSettings
    supports_recall = False

    async def _ingest(self, session: Session) -> None:
        return None  # nothing to build: the sessions are kept by the base class

    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        blocks = [render_session(s, n) for n, s in enumerate(self.sessions, start=1) if s.turns]
        limit = self.settings.max_context_tokens
        if self.settings.layout == "longmemeval":  # LongMemEval's official layout instead of ours
            blocks = [session_block(i, s) for i, s in enumerate([s for s in self.sessions if s.turns], 1)]
        if limit is not None and self.settings.truncate == "oldest_first":
            budget, kept = limit, []
            for block in reversed(blocks):
                cost = approx_tokens(block)
                if cost > budget:
                    break
                kept.append(block)
                budget -= cost
            blocks = list(reversed(kept))
        text = ("" if self.settings.layout == "longmemeval" else "\n\n").join(blocks)
        if self.settings.truncate == "official":
            return cut_newest_end(text, history_budget(self._window_or_fail(), self._reply_tokens()))
        if limit is None:
            self._check_fits(text)
        return text

    def _reply_tokens(self) -> int:
        return self.answer_max_tokens or self.layer.params.max_tokens or 0

    def _window_or_fail(self) -> int:
        window = self.settings.context_window or context_window(self.layer.spec.model)
        if window is None:
            raise ConfigError(
                f"full_context: truncate=official needs the reader's context window: {self.layer.spec.model} is "
                "not a known model; declare it with --set full_context.context_window=N"
            )
        return window

    def _check_fits(self, text: str) -> None:
        """Refuse, before the call, a whole history that surely exceeds the reader's window:
        silently cutting it would change what the baseline measures."""
        if self.layer.spec.is_offline:
            return
        window = self.settings.context_window or context_window(self.layer.spec.model)
        if window is None:
            return
        need = min_tokens(text) + self._reply_tokens()
        if need > window:
            raise ConfigError(
                f"full_context: the whole history (about {approx_tokens(text):,} tokens, at least "
                f"{min_tokens(text):,}) plus the reply does not fit {self.layer.spec.model}'s context window of {window:,} tokens; "
                f"truncate it with {TRUNCATE_HINT} (oldest sessions dropped first), or declare the window with "
                "--set full_context.context_window=N if it is larger"
            )

    def item_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    def _reset(self) -> None:
        return None
