"""The facts of the offline model's answers to graphiti's steps (``zep.offline``): subject–verb–
object clauses of user-side lines with first-person words put in the third person ("I live in
Paris" -> "user lives in Paris"); a small verb lexicon names the relation. The lines, sentences,
entities and word lists they build on are ``offline_text``'s.
"""

from __future__ import annotations

import re

from .offline_text import DETS, FIRST_PERSON, PREPS, STOP, WORD, sentences, speaker_lines, user_side

ADVERBS = {
    "just",
    "also",
    "still",
    "often",
    "never",
    "always",
    "usually",
    "recently",
    "finally",
    "already",
    "even",
    "actually",
    "really",
    "only",
    "now",
    "then",
    "currently",
    "sometimes",
}
AUX = {
    "is",
    "am",
    "are",
    "was",
    "were",
    "be",
    "been",
    "has",
    "have",
    "had",
    "do",
    "does",
    "did",
    "will",
    "would",
    "can",
    "could",
    "should",
    "might",
    "may",
    "must",
    "shall",
    "not",
    "don't",
    "didn't",
    "i'm",
    "i've",
}
# Irregular past forms take no third-person "s" ("I got" -> "user got").
IRREGULAR_PAST = {
    "got",
    "went",
    "had",
    "made",
    "took",
    "came",
    "saw",
    "bought",
    "found",
    "gave",
    "told",
    "thought",
    "felt",
    "left",
    "kept",
    "began",
    "knew",
    "met",
    "ran",
    "sat",
    "said",
    "spent",
    "built",
    "sent",
    "paid",
    "lost",
    "won",
    "brought",
    "taught",
    "caught",
    "wrote",
    "read",
    "put",
    "set",
    "let",
    "cut",
    "heard",
    "held",
    "led",
    "meant",
    "slept",
    "sold",
    "stood",
    "understood",
    "drove",
    "ate",
    "flew",
}
# Relation lexicon: the first pattern found in the words between subject and object names the
# relation. Order matters ("has moved to" is LIVES_IN, not HAS).
LEXICON: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p), r)
    for p, r in [
        (r"\b(?:live[sd]?|living|reside[sd]?|residing|moved|move[sd]?|moving|relocated?|relocating)\b", "LIVES_IN"),
        (r"\b(?:work(?:s|ed|ing)?\s+(?:at|for)|employed\s+(?:at|by)|job\s+at|joined)\b", "WORKS_AT"),
        (r"\bstud(?:y|ies|ied|ying)\s+at\b", "STUDIES_AT"),
        (r"\bmarried\s+to\b", "MARRIED_TO"),
        (r"\b(?:named|called)\b", "NAMED"),
        (r"\b(?:like[sd]?|love[sd]?|enjoy(?:s|ed)?|prefer(?:s|red)?)\b", "LIKES"),
        (r"\b(?:visit(?:s|ed)?|went\s+to|travel(?:l)?ed\s+to|trip\s+to)\b", "VISITED"),
        (r"\b(?:ha[sd]|have|own(?:s|ed)?|bought|got)\b", "HAS"),
    ]
]
# A subject holds one value of these at a time, so a new value contradicts the old one.
SINGLE_VALUED = {"LIVES_IN", "WORKS_AT", "STUDIES_AT", "MARRIED_TO", "NAMED"}


def third_person(word: str) -> str:
    w = word.lower()
    if w in ("am", "'m"):
        return "is"
    if w in ("have",):
        return "has"
    if w in ("do", "go"):
        return w + "es"
    if w in AUX or w in ADVERBS or w in IRREGULAR_PAST or w.endswith(("ed", "s", "ly")) or not w.isalpha():
        return word
    if w.endswith("y") and len(w) > 2 and w[-2] not in "aeiou":
        return word[:-1] + "ies"
    if w.endswith(("ch", "sh", "x", "o", "z")):
        return word + "es"
    return word + "s"


def _third_person_clause(rest: str) -> str:
    """Conjugate the verb that followed a bare "I" (skipping adverbs): "just move" -> "just moves"."""
    words = rest.split(" ")
    for i, w in enumerate(words):
        if not w:
            continue
        if w.lower() in ADVERBS:
            continue
        words[i] = third_person(w)
        break
    return " ".join(words)


def _possessives(text: str, speaker: str) -> str:
    """Other first-person words of the clause, in the third person."""
    for contraction, aux in (("I'm", "is"), ("I've", "has"), ("I'd", "would"), ("I'll", "will")):
        text = re.sub(rf"(?<![\w']){contraction}(?![\w'])", f"{speaker} {aux}", text)
    text = re.sub(r"\b[Mm]y\b", f"{speaker}'s", text)
    text = re.sub(r"(?<![\w'])(?:I|me|myself)(?![\w'])", speaker, text)
    return text


def relation_type(between: str) -> str:
    low = between.lower()
    for pattern, rel in LEXICON:
        if pattern.search(low):
            return rel
    words = [w.lower() for w in WORD.findall(between)]
    head = next((w for w in words if w not in STOP and w not in AUX and w not in ADVERBS and w not in DETS), None)
    prep = next((w for w in reversed(words) if w in PREPS), None)
    if head is None:
        return f"RELATES_{prep.upper()}" if prep else "RELATES_TO"
    rel = head if prep is None or prep == head else f"{head}_{prep}"
    return re.sub(r"[^A-Z0-9]+", "_", rel.upper()).strip("_") or "RELATES_TO"


def find_name(name: str, sentence: str, start: int = 0) -> re.Match[str] | None:
    return re.compile(rf"(?<![\w']){re.escape(name)}(?![\w])", re.I).search(sentence, start)


def extract_facts(content: str, entity_names: list[str]) -> list[tuple[str, str, str, str]]:
    """(source, RELATION, target, fact) for subject–verb–object clauses of user-side lines."""
    out = []
    for speaker, text in speaker_lines(content):
        if not user_side(speaker):
            continue
        for sent in sentences(text):
            sent = sent.rstrip(".!?")
            subject, subj_end, aux, first_person = None, 0, "", False
            fp = re.search(r"(?<![\w'])(I(?:'m|'ve|'d|'ll)?)(?![\w'])", sent)
            if fp and speaker and speaker in entity_names:
                subject, subj_end, aux, first_person = speaker, fp.end(), FIRST_PERSON[fp.group(1).lower()], True
            else:
                hits = sorted((m.start(), m.end(), n) for n in entity_names if (m := find_name(n, sent)))
                if hits:
                    subject, subj_end = hits[0][2], hits[0][1]
            if subject is None:
                continue
            mentions = sorted(
                (m.start(), m.end(), n)
                for n in entity_names
                if n.lower() != subject.lower() and (m := find_name(n, sent, subj_end))
            )
            prev_end = subj_end
            for start, end, target in mentions[:3]:
                between = sent[subj_end:start]
                if start < prev_end or len(between.split()) > 15:
                    continue
                # The relation comes from the words since the previous object ("with my sister"),
                # the whole clause only when those name nothing.
                rel = relation_type(sent[prev_end:start])
                if rel.startswith("RELATES_"):
                    rel = relation_type(between)
                if first_person:  # "I live" -> "user lives", "I've moved" -> "user has moved"
                    clause = f" {aux}{between}" if aux else _third_person_clause(between)
                else:
                    clause = between
                fact = " ".join((subject + clause + sent[start:end]).split())
                if speaker:
                    fact = subject + _possessives(fact[len(subject) :], speaker)
                out.append((subject, rel, target, fact))
                prev_end = end
    return out


def parse_fact(fact: str) -> tuple[str, str, str] | None:
    """(subject, RELATION, object) of a fact with a lexicon relation, lower-cased; else None."""
    low = " ".join(fact.lower().rstrip(".").split())
    for pattern, rel in LEXICON:
        m = pattern.search(low)
        if m:
            subj = [w for w in low[: m.start()].split() if w not in AUX and w not in ADVERBS]
            obj = low[m.end() :].split()
            while obj and (obj[0] in PREPS or obj[0] in DETS):
                obj = obj[1:]
            return " ".join(subj), rel, " ".join(obj)
    return None
