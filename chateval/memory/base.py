"""The ``MemorySystem`` interface, its registry and the behaviour every system shares.

A system ingests timestamped sessions in date order, recalls ranked memory items with
provenance, and responds to a question or a dialogue from an explicit context string that is
returned verbatim with its (approximate) token count.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from ..models import CallLog, ModelLayer, UsageTotals, approx_tokens
from ..util.errors import ConfigError, InputError
from ..util.prompts import Prompts, get_prompts
from ..util.registry import Registry, did_you_mean
from .answer import ANSWER, AnswerInputs, AnswerStyle, ReaderPrompt
from .types import MemoryItem, MemoryStats, Response, Session, Turn, as_utc


class MemoryInputError(InputError):
    """Sessions or queries a memory system cannot accept (out of order, duplicate, ...)."""


class NoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The type of a system's parsed settings (its ``Settings`` model): ``class Zep(MemorySystem[ZepSettings])``
# lets the type checker see ``self.settings`` fields; an unparameterised subclass gets ``Any``.
SettingsT = TypeVar("SettingsT", bound=BaseModel)


class MemorySystem(ABC, Generic[SettingsT]):
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    Settings: ClassVar[type[BaseModel]] = NoSettings
    supports_recall: ClassVar[bool] = True
    # Whether it embeds with the run's embedder: a run checks that embedder's extra up front
    # when a system does (True unless a system says otherwise: an agent of a user may embed).
    uses_embedder: ClassVar[bool] = True
    # The instruction the built-in answer step ends with; a benchmark sets it per run (LoCoMo:
    # short phrases). A system with its own respond() may read or ignore it.
    answer_style: AnswerStyle = "generic"
    # How the built-in answer step frames a question (see answer.ReaderPrompt); LongMemEval and
    # LoCoMo set their official framing per run.
    reader_prompt: ReaderPrompt = "chateval"
    # The answer step's output limit in tokens (None: the layer's own). A benchmark sets it per
    # run (LongMemEval's step-by-step reader: 800); a system with its own respond() may ignore it.
    answer_max_tokens: int | None = None
    # Names the Qdrant collections this system creates (a benchmark sets a per-run prefix, so a
    # shared server shows which run and system a collection belongs to).
    collection_prefix: str = "chateval"

    def __init__(
        self,
        layer: ModelLayer,
        *,
        settings: BaseModel | dict[str, Any] | None = None,
        embedder: Any = None,
        qdrant: str | None = None,
        prompts: Prompts | None = None,
        log: CallLog | None = None,
    ) -> None:
        self.layer = layer
        # parse_settings returns an instance of cls.Settings, the model SettingsT names.
        self.settings: SettingsT = cast(SettingsT, self.parse_settings(settings))
        if embedder is None:
            from .embeddings import make_embedder

            embedder = make_embedder("hash")  # fast and deterministic; pass a real one for real runs
        self.embedder = embedder
        self.qdrant = qdrant or ":memory:"
        self.prompts = prompts or get_prompts()
        self.log = log if log is not None else CallLog()
        self._stats = MemoryStats()
        self._log_start = len(self.log.records)  # stats() counts the calls made since the last reset
        self._sessions: dict[str, Session] = {}
        self._last_date: datetime | None = None

    @classmethod
    def parse_settings(cls, settings: BaseModel | dict[str, Any] | None) -> BaseModel:
        """Validated settings; a bad one is a one-line ConfigError naming system and field."""
        if isinstance(settings, cls.Settings):
            return settings
        data = settings.model_dump() if isinstance(settings, BaseModel) else (settings or {})
        if "extra" not in cls.Settings.model_config:
            # A Settings model that does not choose refuses unknown keys, as the built-ins do: a
            # typo in --set must not be dropped silently (extra="allow"/"ignore" opts out).
            known = {n for n, f in cls.Settings.model_fields.items()} | {
                f.alias for f in cls.Settings.model_fields.values() if f.alias
            }
            unknown = [k for k in data if k not in known]
            if unknown:
                raise ConfigError(
                    f"memory system '{cls.name or cls.__name__}': setting '{unknown[0]}': unknown setting (known: "
                    f"{', '.join(cls.Settings.model_fields) or 'none'})"
                )
        try:
            return cls.Settings.model_validate(data)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(map(str, err["loc"]))
            msg = err["msg"].lower()
            if err["type"] == "extra_forbidden":  # as above, with the names it does know
                names = list(cls.Settings.model_fields)
                msg = f"unknown setting{did_you_mean(field, names)} (known: {', '.join(names) or 'none'})"
            raise ConfigError(f"memory system '{cls.name}': setting '{field}': {msg}") from None

    # --- ingest -------------------------------------------------------------------------
    async def ingest(self, session: Session) -> None:
        if session.id in self._sessions:
            raise MemoryInputError(f"session '{session.id}' was already ingested (duplicate session id)")
        if self._last_date is not None and session.date < self._last_date:
            raise MemoryInputError(
                f"session '{session.id}' ({session.date.isoformat()}) is older than an already ingested session "
                f"({self._last_date.isoformat()}); ingest in date order (ingest_all sorts for you)"
            )
        session = without_blank_turns(session)
        self._sessions[session.id] = session
        self._last_date = session.date
        self._stats.sessions += 1
        if not session.turns:
            self._stats.empty_sessions += 1  # defined behaviour: an empty session adds no memory
            return
        t0 = time.perf_counter()
        await self._ingest(session)
        self._stats.ingest_s += time.perf_counter() - t0

    async def ingest_all(self, sessions: list[Session]) -> None:
        """Ingest sessions sorted by date (stable: equal dates keep their given order).
        A duplicate session id is refused before anything is ingested."""
        seen = set(self._sessions)
        for s in sessions:
            if s.id in seen:
                how = "was already ingested" if s.id in self._sessions else "is given twice"
                raise MemoryInputError(f"session '{s.id}' {how} (duplicate session id)")
            seen.add(s.id)
        for s in sorted(sessions, key=lambda s: s.date):
            await self.ingest(s)

    @classmethod
    def texts_to_embed(cls, settings: BaseModel, sessions: list[Session], question: str) -> list[str]:
        """Texts an instance with these (parsed) settings will embed for this history and
        question, as far as they are known without model calls: a benchmark encodes them for
        all its questions in one batch before its units start, so the units find them in the
        embedding cache. Default: none. A text left out is only embedded later, in the unit; a
        text listed but never used costs one encoding."""
        return []

    # --- recall -------------------------------------------------------------------------
    async def recall(self, query: str, now: datetime, k: int | None = None) -> list[MemoryItem]:
        now = as_utc(now)
        if not self._sessions:
            return []  # a query before any ingest: nothing to recall, not an error
        t0 = time.perf_counter()
        items = await self._recall(query, now, k)
        self._stats.recall_s += time.perf_counter() - t0
        self._stats.recalls += 1
        return items

    # --- respond ------------------------------------------------------------------------
    async def respond(self, query: str | list[Turn], now: datetime) -> Response:
        """Answer a question (str) or continue a dialogue (turns of the current session)."""
        now = as_utc(now)
        dialogue = [] if isinstance(query, str) else list(query)
        question = query if isinstance(query, str) else last_user_text(dialogue)
        if not question.strip():
            raise MemoryInputError("respond() needs a non-empty question or a dialogue ending with a user turn")
        t0 = time.perf_counter()
        before = len(self.log.records)
        items = await self.recall(question, now) if self.supports_recall else []
        context = await self.context(question, now, items)
        answer, prompt = await self.generate(
            AnswerInputs(
                question=question,
                dialogue=dialogue,
                context=context,
                now=now,
                memories=[i.text for i in items] or context.splitlines(),
                style=self.answer_style,
                reader=self.reader_prompt,
            )
        )
        self._stats.respond_s += time.perf_counter() - t0
        from ..models import UsageTotals

        return Response(
            answer=answer,
            context=context,
            context_tokens=approx_tokens(context),
            recalled=items,
            usage=UsageTotals.of(self.log.records[before:]),
            latency_s=time.perf_counter() - t0,
            prompt=prompt,
            trace=self.trace(),
        )

    async def generate(self, inputs: AnswerInputs) -> tuple[str, str]:
        """The reply and the name of the step that wrote it (the shared answer step; a system
        with its own response step overrides this)."""
        return await ANSWER.run(self.answer_layer(), inputs, log=self.log, prompts=self.prompts), ANSWER.name

    def answer_layer(self) -> ModelLayer:
        """The layer the answer step calls: the system's own, with ``answer_max_tokens`` if set."""
        if self.answer_max_tokens is None:
            return self.layer
        return self.layer.derive(params=self.layer.params.model_copy(update={"max_tokens": self.answer_max_tokens}))

    def trace(self) -> dict[str, Any]:
        """What the latest respond() used beyond its context string, for run records."""
        return {}

    def export(self) -> dict[str, Any] | None:
        """The system's memory as JSON for inspection after a benchmark case (None: nothing to save)."""
        return None

    def reset(self) -> None:
        self._sessions.clear()
        self._last_date = None
        self._stats = MemoryStats()
        self._log_start = len(self.log.records)
        self._reset()

    def close(self) -> None:
        """Release external resources (a Qdrant folder lock, a server connection)."""
        return None

    async def aclose(self) -> None:
        """``close()`` from a coroutine: systems with asynchronous clients (Qdrant, graph
        databases) override it to finish their cleanup before returning."""
        self.close()

    def stats(self) -> MemoryStats:
        totals = UsageTotals.of(self.log.records[self._log_start :])
        return self._stats.model_copy(
            update={"items": self.item_count(), "llm_calls": totals.calls, "cached_calls": totals.cached_calls}
        )

    @property
    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def session_numbers(self) -> dict[str, int]:
        """Session id -> its 1-based position in the ingested history (date order): how a
        prompt names a session; a session's id never goes into a prompt (issue 34)."""
        return {sid: n for n, sid in enumerate(self._sessions, start=1)}

    # --- for subclasses -----------------------------------------------------------------
    @abstractmethod
    async def _ingest(self, session: Session) -> None: ...

    async def _recall(self, query: str, now: datetime, k: int | None) -> list[MemoryItem]:
        return []

    @abstractmethod
    async def context(self, question: str, now: datetime, items: list[MemoryItem]) -> str:
        """The context string given to the answering model (returned verbatim in Response)."""

    @abstractmethod
    def item_count(self) -> int: ...

    @abstractmethod
    def _reset(self) -> None: ...


def without_blank_turns(session: Session) -> Session:
    """The session as a system keeps it: blank turns are dropped before anything stores it."""
    return session.model_copy(update={"turns": [t for t in session.turns if t.content.strip()]})


def last_user_text(dialogue: list[Turn]) -> str:
    for t in reversed(dialogue):
        if t.role.lower() in ("user", "speaker a", "human"):
            return t.content
    return dialogue[-1].content if dialogue else ""


def format_items(items: list[MemoryItem], *, with_time: bool = True) -> str:
    """The shared context layout: one memory per line, oldest first, with its date."""
    ordered = sorted(items, key=lambda i: i.time)
    return "\n".join(f"[{i.time:%Y-%m-%d}] {i.text}" if with_time else i.text for i in ordered)


MEMORY_SYSTEMS: Registry[type[MemorySystem]] = Registry("memory system", entry_points="chateval.memory_systems")
M = TypeVar("M", bound=type[MemorySystem])


def memory_system(name: str, *, replace: bool = False) -> Callable[[M], M]:
    """Register a memory system class under ``name`` (``replace=True`` to take a built-in's name)."""

    def deco(cls: M) -> M:
        MEMORY_SYSTEMS.register(name, replace=replace)(cls)  # raises on a clash before renaming cls
        cls.name = name
        return cls

    return deco
