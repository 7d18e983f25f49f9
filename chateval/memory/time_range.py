"""Time-aware query expansion (LongMemEval, Wu et al. 2025, §5.4): infer from a question the
range of dates it is about, relative to the date it is asked, so that memories from other
dates can be filtered out or ranked lower.

A typed step: an LLM reads the question and its date; the offline version is a deterministic
parser of common relative and absolute expressions ("yesterday", "last week", "two months
ago", "in March", "before May 5", ...). An anchor it cannot place on the calendar ("before I
moved") gives no range: resolving events needs a model (or the memory itself).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

from pydantic import BaseModel, Field

from ..models.steps import TypedStep


class TimeRangeInputs(BaseModel):
    question: str
    now: datetime  # when the question is asked


class TimeRange(BaseModel):
    """Inclusive dates; a missing bound is open. Both missing: the question names no time."""

    start: date | None = Field(None, description="first day the question is about (YYYY-MM-DD), or null")
    end: date | None = Field(None, description="last day the question is about (YYYY-MM-DD), or null")

    @property
    def empty(self) -> bool:
        return self.start is None and self.end is None

    def contains(self, day: date, slack_days: int = 0) -> bool:
        slack = timedelta(days=slack_days)
        return (self.start is None or day >= self.start - slack) and (self.end is None or day <= self.end + slack)


MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS |= {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m and m != "May"}
WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "couple of": 2,
    "few": 3,
    "several": 3,
}
_NUM = (
    r"(\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(day|week|month|year)s?"
_MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"


def _num(s: str) -> int:
    return int(s) if s.isdigit() else NUMBERS[s]


def _month_range(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _shift_months(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + months, 12)
    return date(y, m + 1, min(d.day, calendar.monthrange(y, m + 1)[1]))


def _latest_month(today: date, month: int) -> int:
    """The year of the most recent ``month`` that has begun by ``today`` (questions look back)."""
    return today.year if month <= today.month else today.year - 1


def _span(today: date, text: str) -> tuple[date, date] | None:
    """The dates one expression (an anchor or the whole question) refers to, or None."""
    t = text.lower()
    if re.search(r"\bday before yesterday\b", t):
        return today - timedelta(days=2), today - timedelta(days=2)
    if re.search(r"\byesterday\b", t):
        return today - timedelta(days=1), today - timedelta(days=1)
    if re.search(r"\btoday\b|\btonight\b|\bthis morning\b", t):
        return today, today
    # "two weeks ago" — but not "how many weeks ago", which asks for the number.
    if m := re.search(r"(?<!how many )\b" + _NUM + r" " + _UNIT + r" ago\b", t):
        n, unit = _num(m.group(1)), m.group(2)
        if unit == "day":
            d = today - timedelta(days=n)
            return d, d
        if unit == "week":
            c = today - timedelta(weeks=n)
            return c - timedelta(days=3), c + timedelta(days=3)
        c = _shift_months(today, -n * (12 if unit == "year" else 1))
        half = 15 if unit == "month" else 182  # about the month (year) around that point
        return c - timedelta(days=half), min(today, c + timedelta(days=half))
    # "in the past three weeks", "over the last 10 days"
    if m := re.search(r"\b(?:past|last|previous) " + _NUM + r" " + _UNIT + r"\b", t):
        n, unit = _num(m.group(1)), m.group(2)
        start = (
            today - timedelta(days=n * (7 if unit == "week" else 1))
            if unit in ("day", "week")
            else _shift_months(today, -n * (12 if unit == "year" else 1))
        )
        return start, today
    if re.search(r"\b(?:last|previous|past) weekend\b", t):
        sat = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        return sat, sat + timedelta(days=1)
    if m := re.search(r"\b(last|previous|past|this) (week|month|year)\b", t):
        which, unit = m.groups()
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            if which == "this":
                return monday, today
            if which == "past":
                return today - timedelta(days=7), today
            return monday - timedelta(days=7), monday - timedelta(days=1)
        if unit == "month":
            if which == "this":
                return date(today.year, today.month, 1), today
            if which == "past":
                return _shift_months(today, -1), today
            prev = _shift_months(date(today.year, today.month, 1), -1)
            return _month_range(prev.year, prev.month)
        if which == "this":
            return date(today.year, 1, 1), today
        if which == "past":
            return _shift_months(today, -12), today
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    if m := re.search(r"\b(?:last|on|this past) (" + "|".join(WEEKDAYS) + r")\b", t):
        back = (today.weekday() - WEEKDAYS[m.group(1)]) % 7 or 7
        d = today - timedelta(days=back)
        return d, d
    # "March 5th, 2023", "5 March", "on the 5th of March"
    if m := re.search(r"\b" + _MONTH + r" " + _DAY + r"\b(?:,? " + _YEAR + r")?", t):
        month, day = MONTHS[m.group(1)], int(m.group(2))
        year = int(m.group(3)) if m.group(3) else _latest_month(today, month)
        if day <= calendar.monthrange(year, month)[1]:
            return date(year, month, day), date(year, month, day)
    if m := re.search(r"\b(?:the )?" + _DAY + r" (?:of )?" + _MONTH + r"(?:,? " + _YEAR + r")?", t):
        day, month = int(m.group(1)), MONTHS[m.group(2)]
        year = int(m.group(3)) if m.group(3) else _latest_month(today, month)
        if day <= calendar.monthrange(year, month)[1]:
            return date(year, month, day), date(year, month, day)
    # "in March and April", "from July to October", "between May 2022 and June 2022": first to last
    if m := re.search(
        r"\b(?:in|during|from|between) " + _MONTH + r"(?:,? " + _YEAR + r")? (?:and|to|through|till|"
        r"until|-) " + _MONTH + r"(?:,? " + _YEAR + r")?\b",
        t,
    ):
        first, last = MONTHS[m.group(1)], MONTHS[m.group(3)]
        y2 = int(m.group(4)) if m.group(4) else _latest_month(today, last)
        y1 = int(m.group(2)) if m.group(2) else (y2 if first <= last else y2 - 1)
        return _month_range(y1, first)[0], _month_range(y2, last)[1]
    # "in March", "during early June 2023", "of May" — a month name alone needs a preposition
    # ("May I ask" is not a date).
    if m := re.search(
        r"\b(?:in|during|of|since|from|until|till|before|after|by) (?:(?:early|mid|late|the end of|"
        r"the beginning of) )?" + _MONTH + r"(?:,? " + _YEAR + r")?\b",
        t,
    ):
        month = MONTHS[m.group(1)]
        year = int(m.group(2)) if m.group(2) else _latest_month(today, month)
        return _month_range(year, month)
    if m := re.search(r"\b(?:in|during|of|since|from|until|before|after) " + _YEAR + r"\b", t):
        y = int(m.group(1))
        return date(y, 1, 1), date(y, 12, 31)
    return None


_OPEN = re.compile(r"(?<!day )\b(before|prior to|until|till|after|since|following)\b (.*)", re.I)


def parse_time_range(question: str, now: datetime | date) -> TimeRange:
    """The offline time-range extractor: deterministic, relative to ``now``.

    "before X" / "after X" (X a date expression) give an open range that ends the day before X
    starts / starts the day after X ends ("since X" includes X); every range ends by ``now``.
    """
    today = now.date() if isinstance(now, datetime) else now
    if m := _OPEN.search(question):
        word, anchor = m.group(1).lower(), m.group(2)
        # the anchor is what follows the word; a month alone needs no preposition there
        span = _span(today, anchor) or _span(today, "in " + anchor)
        if span is None:
            return TimeRange()  # an event ("before I moved"): not resolvable without a model
        if word in ("before", "prior to"):
            return TimeRange(start=None, end=span[0] - timedelta(days=1))
        if word in ("until", "till"):
            return TimeRange(start=None, end=span[1])
        start = span[0] if word == "since" else span[1] + timedelta(days=1)
        return TimeRange(start=start, end=today) if start <= today else TimeRange()
    span = _span(today, question)
    if span is None:
        return TimeRange()
    return TimeRange(start=span[0], end=min(span[1], today))


def offline_time_range(inp: TimeRangeInputs) -> TimeRange:
    return parse_time_range(inp.question, inp.now)


TIME_RANGE: TypedStep[TimeRangeInputs, TimeRange] = TypedStep(
    "rag_time_range",
    template="memory/rag_time_range.j2",
    inputs=TimeRangeInputs,
    output=TimeRange,
    offline=offline_time_range,
)
