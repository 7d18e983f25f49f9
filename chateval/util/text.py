"""Small text utilities shared by the offline model and simple metrics."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from as is are was were be been being
    it its this that these those there here what which who whom whose when where why how i you he she we
    they me him her us them my your his our their do does did doing have has had having not no nor so
    too very can could should would will shall may might must just than also into about over under again
    further once all any both each few more most other some such only own same s t don now up down out""".split()
)


def words(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def content_words(text: str | None) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


def token_f1(prediction: str | None, gold: str | None) -> float:
    p, g = content_words(prediction), content_words(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def coverage(of: str | None, by: str | None) -> float | None:
    """Fraction of the distinct content words of ``of`` that appear in ``by``."""
    target = set(content_words(of))
    if not target:
        return None
    return len(target & set(content_words(by))) / len(target)


def first_sentence(text: str, limit: int = 200) -> str:
    s = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return s if len(s) <= limit else s[: limit - 1] + "…"


# Markdown/HTML that text from data (a question type, a system or aspect name, an id, an error)
# must not carry into report.md: tags and entities, table-cell breakers (| and line breaks),
# code-span and link delimiters.
_MD = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "|": "\\|",
        "`": "'",
        "[": "\\[",
        "]": "\\]",
        "\n": " ",
        "\r": " ",
        "\u2028": " ",
        "\u2029": " ",
        "\x85": " ",
    }
)


def md(text: object) -> str:
    """``text`` as inert markdown: safe in a table cell, a heading or a list item."""
    return str(text).translate(_MD)


def md_all(data: Any) -> Any:
    """A copy of ``data`` (a summary, records) with every string, keys included, passed through
    :func:`md`: report writers format from this copy, so no value of the data reaches report.md
    raw. Numbers, booleans and None are kept as they are."""
    if isinstance(data, str):
        return md(data)
    if isinstance(data, dict):
        return {md(k) if isinstance(k, str) else k: md_all(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(md_all(v) for v in data)
    return data


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (binary search over slice
    comparisons, which run at C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
