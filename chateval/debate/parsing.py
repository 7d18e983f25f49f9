"""Reading verdicts out of a debater's own final reply.

Structured replies (JSON matching the task's schema) are read first; otherwise only the last
few lines are searched, because earlier lines may quote material under evaluation. A reply
that yields no valid verdict raises ``VerdictParseError``; it is never turned into a score.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field, ValidationError, create_model

from ..models import parse_json_reply

if TYPE_CHECKING:
    from pydantic.json_schema import JsonDict

TAIL_LINES = 8
_NUM = r"(\d+(?:\.\d+)?)(?:\s*/\s*10)?"


class VerdictParseError(ValueError):
    pass


# The 1-10 range goes into the schema sent to the server (guided decoding keeps to it) but is
# checked by _check_range, whose message names the assistant and the value.
_RANGE: JsonDict = {"minimum": 1, "maximum": 10}


class PairwiseOut(BaseModel):
    reasoning: str = ""
    score_assistant_1: float = Field(json_schema_extra=_RANGE)
    score_assistant_2: float = Field(json_schema_extra=_RANGE)


class ScoreOut(BaseModel):
    reasoning: str = ""
    scores: dict[str, Annotated[float, Field(json_schema_extra=_RANGE)]] = Field(default_factory=dict)


Scale = tuple[int, int]
DEFAULT_SCALE: Scale = (1, 10)


@cache
def score_schema(scale: Scale = DEFAULT_SCALE) -> type[ScoreOut]:
    """The score verdict's schema for a rating scale other than 1-10 (e.g. USR's 1-3 and 0-1),
    so guided decoding on the server keeps to the scale the prompt asks for. One class per
    scale: backends cache JSON schemas by class."""
    if scale == DEFAULT_SCALE:
        return ScoreOut
    bounds = {"minimum": scale[0], "maximum": scale[1]}
    return create_model(
        f"ScoreOut_{scale[0]}_{scale[1]}",
        __base__=ScoreOut,
        scores=(dict[str, Annotated[float, Field(json_schema_extra=bounds)]], Field(default_factory=dict)),
    )


class CorrectnessOut(BaseModel):
    reasoning: str = ""
    verdict: Literal["correct", "incorrect"]


_FENCED = re.compile(r"```.*?(?:```|$)", re.S)
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|«[^»\n]*»')


def own_lines(text: str) -> list[str]:
    """The reply's lines in the debater's own voice: fenced blocks, ``>`` quotes and quoted
    spans are material under evaluation (a candidate's text may carry a fake verdict)."""
    text = _FENCED.sub(" ", text)
    lines = [_QUOTED.sub(" ", ln).strip() for ln in text.splitlines() if not ln.lstrip().startswith(">")]
    return [ln for ln in lines if ln]


def _tail(text: str, extra: int = 0) -> list[str]:
    return own_lines(text)[-(TAIL_LINES + extra) :]


def _check_range(name: str, value: float, scale: Scale = DEFAULT_SCALE) -> float:
    if not scale[0] <= value <= scale[1]:
        raise VerdictParseError(f"{name} score {value:g} is outside {scale[0]}-{scale[1]}")
    return value


def _json(text: str, schema: type[BaseModel]) -> BaseModel | None:
    s = text.strip()
    if s.startswith("```"):
        # A fenced JSON object is a verdict; any other fenced block (quoted code) is not.
        if not (s.split("\n", 1)[1].lstrip() if "\n" in s else "").startswith("{"):
            return None
    elif not s.startswith("{"):
        return None
    try:
        return schema.model_validate(parse_json_reply(s))
    except (ValueError, ValidationError) as e:
        raise VerdictParseError(f"JSON verdict does not match the schema: {str(e).splitlines()[0]}") from None


def _last_match(pattern: str, lines: list[str]) -> re.Match[str] | None:
    rx = re.compile(pattern, re.IGNORECASE)
    for line in reversed(lines):
        m = rx.search(line)
        if m:
            return m
    return None


def parse_pairwise(text: str) -> tuple[float, float]:
    out = _json(text, PairwiseOut)
    if isinstance(out, PairwiseOut):
        return (_check_range("Assistant 1", out.score_assistant_1), _check_range("Assistant 2", out.score_assistant_2))
    lines = _tail(text)
    scores = []
    for k in (1, 2):
        m = _last_match(rf"assistant\s*{k}\b[^0-9\n]{{0,12}}?[:=]\s*\**\s*{_NUM}", lines)
        if not m:
            raise VerdictParseError(f"no 'Score of Assistant {k}: N' line at the end of the reply")
        scores.append(_check_range(f"Assistant {k}", float(m.group(1))))
    return scores[0], scores[1]


def parse_scores(text: str, aspects: list[str] | None, scale: Scale = DEFAULT_SCALE) -> dict[str, float]:
    names = aspects or ["Score"]
    out = _json(text, ScoreOut)
    if isinstance(out, ScoreOut):
        lowered = {k.lower(): v for k, v in out.scores.items()}
        missing = [a for a in names if a.lower() not in lowered]
        if missing:
            raise VerdictParseError(f"JSON verdict lacks scores for: {', '.join(missing)}")
        return {_key(a): _check_range(a, lowered[a.lower()], scale) for a in names}
    lines = _tail(text, extra=len(names))
    result: dict[str, float] = {}
    for a in names:
        m = _last_match(rf"(?:^|[^a-z]){re.escape(a)}\s*\**\s*[:=]\s*\**\s*{_NUM}", lines)
        if not m:
            raise VerdictParseError(f"no '{a}: N' line at the end of the reply")
        result[_key(a)] = _check_range(a, float(m.group(1)), scale)
    return result


def _key(aspect: str) -> str:
    return "overall" if aspect == "Score" else aspect.lower()


_VERDICT_WORDS = {"correct": True, "incorrect": False, "not correct": False}


def parse_correctness(text: str) -> bool:
    out = _json(text, CorrectnessOut)
    if isinstance(out, CorrectnessOut):
        return out.verdict == "correct"
    # The last verdict-bearing line of the debater's own text decides; if it cannot be read,
    # an earlier one (perhaps quoted from the answer) must not stand in for it.
    m = _last_match(r"verdict\s*\**\s*[:=]\s*\**\s*([^\n]*)", _tail(text))
    if not m:
        raise VerdictParseError("no 'Verdict: correct|incorrect' line at the end of the reply")
    value = re.match(r"(not\s+correct|incorrect|correct)\b", m.group(1).strip().strip("*").strip(), re.IGNORECASE)
    if not value:
        raise VerdictParseError(f"unreadable verdict {m.group(1).strip()[:40]!r} (expected correct or incorrect)")
    return _VERDICT_WORDS[" ".join(value.group(1).lower().split())]
