"""Zep's own LongMemEval protocol (getzep/zep-papers, ``zep_longmem_eval.ipynb``, read, not
copied), for ``chateval bench longmemeval --protocol zep``: the question carries its date as a
prefix (in the search query, the reader's prompt and the grader's), the reader is Zep's (a short
answer, abstain when the context does not answer; ``--reader-prompt zep``) and the grader is
Zep's: gpt-4o-mini with a structured yes/no reply and per-type instructions for temporal
reasoning, knowledge updates and preferences, every other question (abstention ones included)
under the default "contains the correct answer" rule (``--judge-protocol zep``). Facts are
reranked by a cross-encoder and entities by RRF (``zep`` settings ``reranker=cross_encoder``,
``node_reranker=rrf``), the query cut to 255 characters (``max_query_chars``): what
``settings.longmemeval.ZEP_SYSTEM_SETTINGS`` gives a ``zep`` system under ``--protocol zep``.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..datasets.longmemeval import LMEQuestion
from ..debate.offline_judge import heuristic_correct
from ..models.steps import TypedStep
from .lme_judge import OFFICIAL_GUIDELINES, JudgeInputs

ZEP_JUDGE_MODEL = "gpt-4o-mini"
# Zep's grader has instructions of its own for these types only; the rest get the default one.
_OWN_RULES = ("temporal-reasoning", "knowledge-update", "single-session-preference")


def zep_question(q: LMEQuestion) -> str:
    """The question as Zep's evaluation asks it: its date (as the data file writes dates) first."""
    return f"(date: {q.question_date:%Y/%m/%d (%a) %H:%M}) {q.question}"


class ZepGradeInputs(BaseModel):
    question: str
    gold: str
    response: str
    guidelines: str
    rubric: bool = False  # preference questions: the gold is a rubric of the desired response


class ZepGrade(BaseModel):
    is_correct: str  # "yes" or "no", as Zep's grader schema asks


def zep_inputs(inp: JudgeInputs) -> ZepGradeInputs:
    kind = inp.question_type if inp.question_type in _OWN_RULES else "multi-session"  # the default rule
    return ZepGradeInputs(
        question=inp.question,
        gold=inp.gold,
        response=inp.response,
        guidelines=OFFICIAL_GUIDELINES[kind],
        rubric=kind == "single-session-preference",
    )


def zep_correct(grade: ZepGrade) -> bool:
    return grade.is_correct.strip().lower() == "yes"


ZEP_JUDGE: TypedStep[ZepGradeInputs, ZepGrade] = TypedStep(
    "lme_judge_zep",
    system="bench/lme_judge_zep_system.j2",
    template="bench/lme_judge_zep.j2",
    inputs=ZepGradeInputs,
    output=ZepGrade,
    offline=lambda inp: ZepGrade(is_correct="yes" if heuristic_correct(inp.response, inp.gold) else "no"),
)
