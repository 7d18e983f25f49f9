"""THEANINE's typed LLM steps (Ong et al., NAACL 2025): memory extraction for both speakers,
relation-aware linking (per pair, the paper's protocol, or batched), timeline refinement, and the
response generated as the speaker. Each step has a deterministic offline stand-in computed from
its typed inputs."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, Field, field_validator

from ....models import approx_tokens
from ....models.steps import TypedStep
from ....util.text import content_words
from ...extract import MemoryFact, MemoryFacts, SessionInputs, gist
from ...timeline_graph import RELATIONS, Relation
from ...types import Turn


# --- prompt inputs -----------------------------------------------------------------------------
def session_excerpt(turns: list[Turn], cited: list[str], budget: int) -> str:
    """A memory's source session for the relation prompt: the whole session when it fits in
    ``budget`` (approximate) tokens, else the longest run of whole turns around the cited ones
    that fits, with "…" where turns were left out."""
    lines = [f"{t.role}: {t.content}" for t in turns]
    if approx_tokens("\n".join(lines)) <= budget:
        return "\n".join(lines)
    idx = [i for i, t in enumerate(turns) if t.id in set(cited)] or [0]
    lo, hi = min(idx), min(idx)  # grow outwards from the first cited turn
    used = approx_tokens(lines[lo])
    grew = True
    while grew:
        grew = False
        for j in (hi + 1, lo - 1):  # later turn first, then earlier: alternate while they fit
            if 0 <= j < len(lines) and not lo <= j <= hi and used + approx_tokens(lines[j]) + 1 <= budget:
                used += approx_tokens(lines[j]) + 1
                lo, hi = min(lo, j), max(hi, j)
                grew = True
    body = lines[lo : hi + 1]
    return "\n".join((["…"] if lo > 0 else []) + body + (["…"] if hi < len(lines) - 1 else []))


def _person(role: str) -> str:
    """A speaker's name without a trailing note such as " (you)" or " (user)"."""
    return re.sub(r"\s*\([^()]*\)$", "", role).strip().lower()


def next_speaker(dialogue: list[Turn], known_roles: list[str]) -> str:
    """Who speaks next: the latest speaker of the dialogue who is not the last one; else a
    speaker of the earlier sessions who is not that person; else "assistant"."""
    last = _person(dialogue[-1].role) if dialogue else None
    for role in [t.role for t in reversed(dialogue)] + list(dict.fromkeys(known_roles)):
        if _person(role) != last:
            return role
    return "assistant"


# --- memory: events of both speakers, attributed by name ---------------------------------------
class EventInputs(SessionInputs):
    speakers: list[str] = Field(default_factory=list)  # every speaker of the session, by name


def offline_events(inp: EventInputs) -> MemoryFacts:
    """One event per substantive turn of any speaker (system turns aside): who said it and its gist."""
    return MemoryFacts(
        facts=[
            MemoryFact(text=f"{t.role} said: {gist(t)}", turn_ids=[str(n)])  # the turn's number, as prompted
            for n, t in enumerate(inp.turns, start=1)
            if t.role.lower() != "system" and len(content_words(t.content)) >= 3
        ]
    )


EXTRACT_EVENTS: TypedStep[EventInputs, MemoryFacts] = TypedStep(
    "theanine_events",
    template="memory/theanine_events.j2",
    inputs=EventInputs,
    output=MemoryFacts,
    offline=offline_events,
)


# --- Phase I-2: relation-aware linking (typed step) -------------------------------------------
class MemoryRef(BaseModel):
    id: str  # the step's alias: "NEW", "M1", "M2", ...
    event: str
    time: datetime
    conversation: str = ""  # the turns the memory was summarised from (cut to source_chars)


class RelationInputs(BaseModel):
    new: MemoryRef
    candidates: list[MemoryRef]
    relations: list[str] = Field(default_factory=lambda: list(RELATIONS))


_RELATION_ALIASES = {r.lower(): r for r in RELATIONS} | {
    "changes": "Changed",
    "change": "Changed",
    "causes": "Cause",
    "caused": "Cause",
    "xreason": "Reason",
    "hindered": "HinderedBy",
    "hindered by": "HinderedBy",
    "hinderedby": "HinderedBy",
    "xreact": "React",
    "reaction": "React",
    "xwant": "Want",
    "wants": "Want",
    "same topic": "SameTopic",
    "sametopic": "SameTopic",
    "same_topic": "SameTopic",
}


def canonical_relation(v: object) -> object:
    """A relation label as the model may spell it -> one of RELATIONS, or None for no relation."""
    if isinstance(v, str):
        key = v.strip().strip(".").strip().lower()
        if key in ("", "none", "null", "no relation", "unrelated", "n/a"):
            return None
        return _RELATION_ALIASES.get(key, v.strip())
    return v


class RelationLabel(BaseModel):
    memory_id: str = Field(description="id of the earlier memory (M1, M2, ...)")
    relation: Relation | None = Field(description="how the new memory relates to it, or null if unrelated")

    _canonical = field_validator("relation", mode="before")(lambda v: canonical_relation(v))


class RelationOutput(BaseModel):
    relations: list[RelationLabel]


_SAID = re.compile(r"^[^:]{1,40}\bsaid:\s*")  # the offline extractor writes "<speaker> said: ..."
# Chat filler that two unrelated utterances share all the time: not evidence of a shared topic.
_FILLER = frozenset(
    """yeah yes oh wow well like really good great nice lot lots thing things know think get got
    going go one much many sure thanks thank maybe actually pretty kind sounds sound fun cool okay ok lol haha
    time way make made said say tell told want would could""".split()
)
_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    (
        "Changed",
        re.compile(
            r"\b(now|moved|no longer|anymore|any more|changed|switched|used to|instead|quit|"
            r"stopped|finally|decided|officially)\b"
        ),
    ),
    ("Reason", re.compile(r"\b(because|since|due to|that's why|the reason)\b")),
    ("Cause", re.compile(r"\b(so that|as a result|led to|ended up|caused|therefore|thanks to|helped)\b")),
    ("HinderedBy", re.compile(r"\b(can't|cannot|couldn't|unable|too busy|prevent\w*|hard to|not able|never had)\b")),
    (
        "Want",
        re.compile(
            r"\b(want|wanna|plan|planning|hope|wish|going to|would like|looking forward|"
            r"thinking of|thinking about)\b"
        ),
    ),
    (
        "React",
        re.compile(
            r"\b(feel|felt|happy|sad|excited|glad|proud|worried|upset|nervous|jealous|thrilled|"
            r"disappointed|love)\b"
        ),
    ),
]
OFFLINE_MIN_SHARED = 2  # shared topic words the offline rule needs before it relates two memories


def topic_words(event: str) -> set[str]:
    """Content words of an event without the speaker prefix and chat filler."""
    return {w for w in content_words(_SAID.sub("", event.strip())) if w not in _FILLER}


def offline_relation(new_event: str, old_event: str) -> str | None:
    """Deterministic stand-in for the relation judgement, from the texts alone: no relation
    unless the events share at least two topic words; then the first marker found in the new
    event decides (a change word -> Changed, 'because' -> Reason, 'as a result' -> Cause,
    'can't' -> HinderedBy, 'want'/'plan' -> Want, 'feel'/'glad' -> React), else SameTopic."""
    if len(topic_words(new_event) & topic_words(old_event)) < OFFLINE_MIN_SHARED:
        return None
    low = _SAID.sub("", new_event.strip()).lower()
    for relation, pattern in _MARKERS:
        if pattern.search(low):
            return relation
    return "SameTopic"


def offline_relations(inp: RelationInputs) -> RelationOutput:
    return RelationOutput(
        relations=[
            RelationLabel(memory_id=c.id, relation=offline_relation(inp.new.event, c.event)) for c in inp.candidates
        ]
    )


RELATE_MEMORIES: TypedStep[RelationInputs, RelationOutput] = TypedStep(
    "theanine_relation",
    template="memory/theanine_relation.j2",
    inputs=RelationInputs,
    output=RelationOutput,
    offline=offline_relations,
)


# --- Phase II-2: context-aware timeline refinement (typed step) -------------------------------
class TimelineEvent(BaseModel):
    id: str  # "E1", ... oldest first
    event: str
    time: datetime
    relation: str | None = None  # relation of the edge from the previous event of the timeline
    retrieved: bool = False  # the memory the timeline was retrieved for


class RefineInputs(BaseModel):
    dialogue: list[Turn]
    timeline: list[TimelineEvent]
    now: datetime


class RefinedEvent(BaseModel):
    id: str = Field(description="id of the timeline event (E1, E2, ...)")
    text: str = Field(description="the event, rewritten to stress what matters for the current conversation")


class RefinedTimeline(BaseModel):
    events: list[RefinedEvent] = Field(description="the events worth keeping, oldest first")
    note: str = Field("", description="one sentence on how the timeline bears on the current conversation")


def offline_refine(inp: RefineInputs) -> RefinedTimeline:
    """Keep the retrieved event and every event sharing a topic word with the dialogue; events
    are kept verbatim and no note is written."""
    said = set().union(*(topic_words(t.content) for t in inp.dialogue)) if inp.dialogue else set()
    return RefinedTimeline(
        events=[RefinedEvent(id=e.id, text=e.event) for e in inp.timeline if e.retrieved or topic_words(e.event) & said]
    )


REFINE_TIMELINE: TypedStep[RefineInputs, RefinedTimeline] = TypedStep(
    "theanine_refine",
    template="memory/theanine_refine.j2",
    inputs=RefineInputs,
    output=RefinedTimeline,
    offline=offline_refine,
)


# --- Phase I-2, the paper's protocol: one (earlier, new) pair per call ------------------------
class PairInputs(BaseModel):
    earlier: MemoryRef  # conversation: its whole source session (within the token budget)
    new: MemoryRef
    relations: list[str] = Field(default_factory=lambda: list(RELATIONS))


class PairRelation(BaseModel):
    explanation: str = Field(description="the evidence for the relation, or why there is none (written first)")
    relation: Relation | None = Field(description="how the new memory relates to the earlier one, or null")

    _canonical = field_validator("relation", mode="before")(lambda v: canonical_relation(v))


def offline_pair(inp: PairInputs) -> PairRelation:
    rel = offline_relation(inp.new.event, inp.earlier.event)
    why = f"offline rule: {len(topic_words(inp.new.event) & topic_words(inp.earlier.event))} shared topic words" + (
        "" if rel is None else f", first marker gives {rel}"
    )
    return PairRelation(explanation=why, relation=rel)


RELATE_PAIR: TypedStep[PairInputs, PairRelation] = TypedStep(
    "theanine_relation_pair",
    template="memory/theanine_relation_pair.j2",
    inputs=PairInputs,
    output=PairRelation,
    offline=offline_pair,
)


# --- Phase III: the next utterance, as the speaker --------------------------------------------
class SpeakerInputs(BaseModel):
    dialogue: list[Turn]
    speaker: str  # who speaks next (the system plays this speaker)
    memory: str  # the refined timelines (the context string)
    now: datetime
    memories: list[str] = Field(default_factory=list)  # the context's units, for the offline model


def offline_speaker(inp: SpeakerInputs) -> str:
    """Extractive: the memory sharing most topic words with the last turn, else a short
    acknowledgement of the last turn; never an 'I don't know'."""
    last = inp.dialogue[-1].content if inp.dialogue else ""
    said = topic_words(last)
    best, overlap = None, 0
    for m in inp.memories:
        n = len(said & topic_words(m))
        if n > overlap:
            best, overlap = m, n
    if best:
        return f"[offline] I remember: {_SAID.sub('', best.lstrip('- ').strip())}"
    words = sorted(said)[:3]
    return f"[offline] That is interesting{', tell me more about ' + ' '.join(words) if words else ''}."


RESPOND_AS_SPEAKER: TypedStep[SpeakerInputs, str] = TypedStep(
    "theanine_response",
    template="memory/theanine_response.j2",
    inputs=SpeakerInputs,
    output=str,
    offline=offline_speaker,
)
