"""Text heuristics of the offline model's answers to graphiti's steps (``zep.offline``).

Deterministic and deliberately simple: entities are the speaker of user-side lines, capitalised
names and nouns after in/at/to/...; the facts between them are ``offline_facts``'s. Assistant
lines are context, not facts.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ...util.text import STOPWORDS

_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s*(.*)$")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'&-]*")
NOT_USER = {"assistant", "system", "bot", "ai"}
FIRST_PERSON = {"i": "", "i'm": "is", "i've": "has", "i'd": "would", "i'll": "will", "me": "", "myself": ""}
DETS = {"the", "a", "an", "my", "our", "his", "her", "their", "your", "some", "this", "that", "these", "those"}
PREPS = {"in", "at", "from", "to", "with", "for", "near", "into", "about", "on"}
NEEDS_DET = {"to", "for", "on"}  # "to display", "for example": infinitives and idioms, not places
EXTRA_STOP = {
    "every",
    "really",
    "just",
    "also",
    "very",
    "much",
    "many",
    "lot",
    "lots",
    "even",
    "still",
    "already",
    "actually",
    "maybe",
    "please",
    "thanks",
    "thank",
    "hi",
    "hello",
    "yes",
    "yeah",
    "okay",
    "ok",
    "sure",
    "well",
    "oh",
    "great",
    "anyway",
    "however",
    "though",
    "something",
    "anything",
    "everything",
    "nothing",
    "someone",
    "anyone",
    "one",
    "way",
    "ways",
    "since",
    "until",
    "because",
    "while",
    "during",
    "before",
    "after",
    "although",
    "unless",
    "whether",
}
GENERIC = {
    "day",
    "days",
    "life",
    "people",
    "work",
    "stuff",
    "things",
    "thing",
    "time",
    "times",
    "today",
    "tomorrow",
    "yesterday",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "morning",
    "evening",
    "night",
    "moment",
    "mind",
    "general",
    "fact",
    "order",
    "addition",
    "terms",
    "advance",
    "touch",
    "help",
    "idea",
    "ideas",
    "advice",
    "tips",
    "suggestions",
    "recommendations",
}
STOP = STOPWORDS | EXTRA_STOP


def speaker_lines(content: str) -> list[tuple[str | None, str]]:
    out = []
    for line in content.splitlines():
        m = _SPEAKER.match(line.strip())
        if m:
            out.append((m.group(1).strip(), m.group(2)))
        elif line.strip():
            out.append((None, line.strip()))
    return out


def user_side(speaker: str | None) -> bool:
    return speaker is None or speaker.lower() not in NOT_USER


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _name(token: str) -> str:
    return re.sub(r"'s$", "", token)


def _capitalised(sentence: str, known_mid: set[str]) -> list[str]:
    """Runs of capitalised words; a sentence-initial word only if it is capitalised elsewhere too."""
    toks = list(WORD.finditer(sentence))
    names, run = [], []
    for i, m in enumerate(toks):
        tok = _name(m.group())
        cap = tok[0].isupper() and tok.lower() not in STOP and tok.lower() not in FIRST_PERSON
        if cap and (i > 0 or tok in known_mid or (i + 1 < len(toks) and toks[i + 1].group()[0].isupper())):
            run.append(tok)
            if m.group().endswith("'s"):  # "Anna's dog": the name ends at the possessive
                names.append(" ".join(run))
                run.clear()
        elif run:
            names.append(" ".join(run))
            run.clear()
    if run:
        names.append(" ".join(run))
    return names


def _prep_nouns(sentence: str) -> list[str]:
    toks = [m.group() for m in WORD.finditer(sentence)]
    out = []
    for i, tok in enumerate(toks):
        if tok.lower() not in PREPS:
            continue
        j, had_det = i + 1, False
        while j < len(toks) and toks[j].lower() in DETS:
            j, had_det = j + 1, True
        if tok.lower() in NEEDS_DET and not had_det:
            continue
        phrase: list[str] = []
        while j < len(toks) and len(phrase) < 3:
            w = toks[j]
            if not w.islower() or w in STOP or w in GENERIC or len(w) < 3 or w in PREPS:
                break
            phrase.append(w)
            j += 1
        if phrase and phrase[-1] not in GENERIC:
            out.append(" ".join(phrase))
    return out


def extract_entities(content: str) -> list[str]:
    """Speaker(s) of user-side lines, then capitalised names, then nouns after prepositions."""
    lines = [(s, t) for s, t in speaker_lines(content) if user_side(s)]
    mid = {
        _name(m.group())
        for _, t in lines
        for sent in sentences(t)
        for k, m in enumerate(WORD.finditer(sent))
        if k > 0 and m.group()[0].isupper()
    }
    found: list[str] = []
    for speaker, text in lines:
        if speaker:
            found.append(speaker)
        for sent in sentences(text):
            found += _capitalised(sent, mid) + _prep_nouns(sent)
    seen, out = set(), []
    for name in found:
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def norm(text: str) -> str:
    return " ".join(text.lower().rstrip(".").split())


def iso_z(text: str | None) -> str | None:
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text.split("#")[0].strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
