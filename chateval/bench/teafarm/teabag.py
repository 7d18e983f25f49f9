"""TeaBag generation for TeaFarm: steps 1-3 (session summaries, counterfactual questions,
simulated sessions), each a typed LLM step with a deterministic offline implementation. The
``teabag.json`` file they fill is chateval.datasets.teabag."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta

from pydantic import BaseModel, Field, field_validator

from ...datasets.conversations import Conversation
from ...datasets.teabag import SessionSummary, SimTurn, SpeakerEvent, TeaConversation, TeaQuestion
from ...datasets.types import Turn
from ...models import CallLog, ModelLayer
from ...models.steps import TypedStep
from ...util.text import content_words, words

NEW_SESSION_GAP = timedelta(days=1)  # the simulated session happens a day after the last past session


# --- step 1: session summaries ------------------------------------------------------------------
class SummaryInputs(BaseModel):
    session_id: str
    date: datetime
    speakers: list[str]
    turns: list[Turn]


class SessionEvents(BaseModel):
    events: list[SpeakerEvent]


def _best_sentence(text: str, limit: int = 220) -> str:
    """The sentence with the most content words (ties: the first); bracketed notes such as
    LoCoMo's photo captions are not sentences of the speaker."""
    text = re.sub(r"\[[^\]]*\]", " ", text)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]
    best = max(sentences, key=lambda s: len(content_words(s)), default=text.strip())
    return best if len(best) <= limit else best[: limit - 1] + "…"


def offline_summarize(inp: SummaryInputs) -> SessionEvents:
    """One event per substantive turn: its speaker and its most contentful sentence."""
    return SessionEvents(
        events=[
            SpeakerEvent(speaker=t.role, event=_best_sentence(t.content))
            for t in inp.turns
            if len(content_words(re.sub(r"\[[^\]]*\]", " ", t.content))) >= 3
        ]
    )


SUMMARIZE: TypedStep[SummaryInputs, SessionEvents] = TypedStep(
    "teafarm_summarize",
    template="bench/teafarm_summarize.j2",
    inputs=SummaryInputs,
    output=SessionEvents,
    offline=offline_summarize,
)


# --- step 2: counterfactual questions -----------------------------------------------------------
class QuestionInputs(BaseModel):
    speakers: list[str]
    asker: str
    listener: str
    summaries: list[SessionSummary]  # oldest first
    n: int


class Counterfactual(BaseModel):
    question: str = Field(description="what the asker says to the listener; it presupposes something untrue")
    answer: str = Field(description="the true answer, correcting the false premise")
    fact: str = Field("", description="the true past event the question distorts")
    session_id: str = Field("", description="the number of the past session that event comes from")

    @field_validator("session_id", mode="before")
    @classmethod
    def _number(cls, v: object) -> object:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v  # a number as JSON


class Counterfactuals(BaseModel):
    questions: list[Counterfactual]


# Word groups for the offline generator's changed detail: a word is replaced by the next word of
# its group (football -> basketball), so the premise is wrong but plausible.
_SWAP_GROUPS = [
    "football basketball soccer baseball tennis hockey golf volleyball swimming karate boxing",
    "red blue green yellow white black pink purple orange brown",
    "dog cat horse rabbit hamster parrot",
    "dogs cats horses rabbits hamsters parrots",
    "beach mountains lake forest desert",
    "pizza pasta sushi burgers tacos steak salad",
    "coffee tea beer wine juice",
    "sister brother mother father daughter son aunt uncle cousin",
    "wife husband girlfriend boyfriend",
    "monday tuesday wednesday thursday friday saturday sunday",
    "january february march april june july august september october november december",
    "spring summer autumn winter",
    "guitar piano violin drums flute",
    "horror comedy romance action thriller",
    "teacher nurse doctor lawyer chef engineer lifeguard firefighter accountant",
    "english math history science chemistry biology",
    "car truck bike motorcycle",
    "city town village",
    "christmas thanksgiving halloween easter",
    "one two three four five six seven eight nine ten",
]
SWAPS: dict[str, str] = {}
for _group in _SWAP_GROUPS:
    _ws = _group.split()
    SWAPS.update({w: _ws[(i + 1) % len(_ws)] for i, w in enumerate(_ws)})


def _match_case(new: str, old: str) -> str:
    return new.capitalize() if old[:1].isupper() else new


def counterfactual_edit(event: str, elsewhere: list[str]) -> tuple[str, str, str] | None:
    """(changed event, original word, new word): the first word with a known alternative
    (a number, or a word of ``SWAPS``); else the event's last content word (in English usually
    the object: "an antique wardrobe") is replaced by the last content word of the first other
    event (``elsewhere``) that has one this event lacks. None if nothing can change."""
    tokens = re.findall(r"[A-Za-z]+|\d+", event)
    for tok in tokens:
        low = tok.lower()
        new = str(int(tok) + 1) if tok.isdigit() else SWAPS.get(low)
        if new:
            new = _match_case(new, tok)
            return re.sub(rf"\b{re.escape(tok)}\b", new, event, count=1), tok, new

    def last_word(text: str, exclude: set[str] = frozenset()) -> str | None:  # type: ignore[assignment]
        found = [w for w in content_words(text) if w.isalpha() and len(w) >= 4 and w not in exclude]
        return found[-1] if found else None

    old = last_word(event)
    own = set(words(event))
    new = next((w for e in elsewhere if (w := last_word(e, own))), None)
    if old is None or new is None:
        return None
    return re.sub(rf"\b{re.escape(old)}\b", new, event, count=1, flags=re.IGNORECASE), old, new


def same_topic(a: str, b: str) -> bool:
    """Offline stand-in for "b is about what a was about": two shared content words, or one
    when either event has at most three (short statements such as "I live in Paris")."""
    wa, wb = set(content_words(a)), set(content_words(b))
    shared = len(wa & wb)
    return shared >= 2 or (shared == 1 and min(len(wa), len(wb)) <= 3)


def current_events(summaries: list[SessionSummary], speaker: str) -> list[tuple[SessionSummary, SpeakerEvent]]:
    """The speaker's events in their current state: the summaries are read in time order and an
    event is dropped when a later session has an event of the same speaker on the same topic
    (the later one states how things are now). Step 2 only targets events that still hold, so a
    question never treats as true a fact a later session changed."""
    ordered = sorted(summaries, key=lambda s: s.date)
    kept: list[tuple[SessionSummary, SpeakerEvent]] = []
    for s in ordered:
        mine = [e for e in s.events if e.speaker == speaker and not e.event.rstrip().endswith("?")]
        kept = [(t, e) for t, e in kept if not any(same_topic(e.event, n.event) for n in mine)]
        kept += [(s, e) for e in mine]
    return kept


def offline_counterfactuals(inp: QuestionInputs) -> Counterfactuals:
    """The asker's own past statements in their current state (``current_events``), spread over
    the sessions; one detail of each is changed and the asker asks as if the changed version were
    true. The answer gives the real one. Statements with a word of ``SWAPS`` (or a number) come
    first; others borrow a word."""
    own = [(s, e) for s, e in current_events(inp.summaries, inp.asker) if len(content_words(e.event)) >= 4]
    swapped: list[tuple[SessionSummary, SpeakerEvent, tuple[str, str, str]]] = []
    borrowed: list[tuple[SessionSummary, SpeakerEvent, tuple[str, str, str]]] = []
    for s, e in own:
        elsewhere = [x.event for t in inp.summaries if t.session_id != s.session_id for x in t.events]
        edit = counterfactual_edit(e.event, elsewhere)
        if edit:
            (swapped if edit[2].lower() in SWAPS or edit[1].isdigit() else borrowed).append((s, e, edit))
    out: list[Counterfactual] = []
    for pool in (swapped, borrowed):
        n = min(inp.n - len(out), len(pool))
        if n <= 0:
            continue
        picks = sorted({round(i * (len(pool) - 1) / max(1, n - 1)) for i in range(n)})  # spread over time
        for i in picks:
            s, e, (changed, old, new) = pool[i]
            out.append(
                Counterfactual(
                    question=f'Do you remember when I told you this: "{changed}"? What do you remember about it?',
                    answer=f'No, that is not what {inp.asker} said. On {s.date:%Y-%m-%d} {inp.asker} said: "{e.event}" '
                    f"({old}, not {new}).",
                    fact=e.event,
                    session_id=s.session_id,
                )
            )
    return Counterfactuals(questions=out)


GENERATE_QUESTIONS: TypedStep[QuestionInputs, Counterfactuals] = TypedStep(
    "teafarm_questions",
    template="bench/teafarm_questions.j2",
    inputs=QuestionInputs,
    output=Counterfactuals,
    offline=offline_counterfactuals,
)


# --- step 3: the new session leading to the question --------------------------------------------
class SessionInputs(BaseModel):
    speakers: list[str]
    asker: str
    listener: str
    summaries: list[SessionSummary]
    question: str
    fact: str = ""
    date: datetime


class SimulatedSession(BaseModel):
    turns: list[SimTurn] = Field(description="the opening of the new session, before the question (2 to 6 turns)")


def offline_session(inp: SessionInputs) -> SimulatedSession:
    """Two opening turns: the asker brings up the topic of the true event, the listener invites more."""
    topic = [w for w in content_words(inp.fact) if w.isalpha() and len(w) >= 4][:2]
    about = " and ".join(topic) if topic else "our last chat"
    return SimulatedSession(
        turns=[
            SimTurn(speaker=inp.asker, text=f"Hi! It's been a while. I've been thinking about {about} again."),
            SimTurn(speaker=inp.listener, text="Good to hear from you! What's on your mind?"),
        ]
    )


SIMULATE_SESSION: TypedStep[SessionInputs, SimulatedSession] = TypedStep(
    "teafarm_session",
    template="bench/teafarm_session.j2",
    inputs=SessionInputs,
    output=SimulatedSession,
    offline=offline_session,
)


def source_session(ref: str, summaries: list[SessionSummary]) -> str:
    """The id of the session a question's model cited: the prompts number the sessions from 1
    (a data set's session ids never go into a prompt); an id is kept as it is."""
    ref = str(ref).strip()
    if ref.isdigit() and 1 <= int(ref) <= len(summaries):
        return summaries[int(ref) - 1].session_id
    return ref


# --- the past as text ---------------------------------------------------------------------------
def summaries_text(summaries: list[SessionSummary]) -> str:
    """The past, as the judge panel sees it: one block per session, oldest first."""
    blocks = []
    for n, s in enumerate(summaries):
        lines = [f"Session {n + 1} ({s.date:%Y-%m-%d}):"] + [f"- {e.speaker}: {e.event}" for e in s.events]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


async def generate_conversation(
    conv: Conversation, layer: ModelLayer, per_speaker: int, log: CallLog
) -> TeaConversation:
    """Steps 1-3 for one conversation."""
    speakers = conv.speakers[:2] if len(conv.speakers) >= 2 else conv.speakers + ["Speaker B"]
    sessions = sorted(conv.sessions, key=lambda s: s.date)
    outs = await asyncio.gather(
        *(
            SUMMARIZE.run(layer, SummaryInputs(session_id=s.id, date=s.date, speakers=speakers, turns=s.turns), log=log)
            for s in sessions
        )
    )
    summaries = [
        SessionSummary(session_id=s.id, date=s.date, events=[e for e in o.events if e.event.strip()])
        for s, o in zip(sessions, outs)
    ]
    now = sessions[-1].date + NEW_SESSION_GAP
    pairs = [(speakers[0], speakers[1]), (speakers[1], speakers[0])]
    generated = await asyncio.gather(
        *(
            GENERATE_QUESTIONS.run(
                layer,
                QuestionInputs(speakers=speakers, asker=a, listener=b, summaries=summaries, n=per_speaker),
                log=log,
            )
            for a, b in pairs
        )
    )
    picked = [
        (a, b, q)
        for (a, b), g in zip(pairs, generated)
        for q in [q for q in g.questions if q.question.strip() and q.answer.strip()][:per_speaker]
    ]
    sims = await asyncio.gather(
        *(
            SIMULATE_SESSION.run(
                layer,
                SessionInputs(
                    speakers=speakers,
                    asker=a,
                    listener=b,
                    summaries=summaries,
                    question=q.question,
                    fact=q.fact,
                    date=now,
                ),
                log=log,
            )
            for a, b, q in picked
        )
    )
    questions = [
        TeaQuestion(
            id=f"q{i + 1}",
            asker=a,
            listener=b,
            question=q.question.strip(),
            answer=q.answer.strip(),
            fact=q.fact,
            session_id=source_session(q.session_id, summaries),
            date=now,
            turns=sim.turns,
        )
        for i, ((a, b, q), sim) in enumerate(zip(picked, sims))
    ]
    return TeaConversation(id=conv.id, speakers=speakers, summaries=summaries, questions=questions)
