"""``chateval rejudge``: is it the judge? Score graded answer sets (answers with the verdicts their
judges recorded) under several judges — the recorded verdicts, LoCoMo's answer F1, our single
judge, a debate panel, a prompt template of the user's — and compare: accuracy with intervals
clustered by conversation, per category, false acceptance on known-wrong sets, Cohen's kappa and
the paired difference per pair of judges, the sets' ranking under each judge, acceptance against
answer length, and the errata ceiling. See README.md in this folder.

Names load on first use: the CLI builds its options from ``RejudgeConfig`` without importing
the judging machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports

_EXPORTS = {
    "RejudgeConfig": "config",
    "GradedItem": "sets",
    "GradedSet": "sets",
    "Verdict": "sets",
    "load_set": "loaders",
    "detect": "loaders",
    "JudgeSpec": "judges",
    "parse_judges": "judges",
    "RejudgeSummary": "records",
    "read_rejudge": "records",
    "arejudge": "run",
    "rejudge": "run",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from .config import RejudgeConfig
    from .judges import JudgeSpec, parse_judges
    from .loaders import detect, load_set
    from .records import RejudgeSummary, read_rejudge
    from .run import arejudge, rejudge
    from .sets import GradedItem, GradedSet, Verdict
