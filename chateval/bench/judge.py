"""The memory benchmarks' answer judge, in our own words: a yes/no judge whose instructions depend
on the question type (as in LongMemEval's protocol), plus the same guidelines for the panel; the
official protocol's per-type prompts; and Zep's own grader (``--judge-protocol zep``, below).
LoCoMo, LongMemEval and head2head's panel read the same rules."""

from __future__ import annotations

from pydantic import BaseModel

from ..datasets.longmemeval import LMEQuestion
from ..debate.offline_judge import heuristic_correct
from ..models.steps import TypedStep

_CONTAINS = (
    "Mark the response correct if it contains the correct answer, is equivalent to it, or "
    "contains all the intermediate steps that lead to it. If it gives only part of the "
    "information the answer requires, it is incorrect."
)
GUIDELINES = {
    "single-session-user": _CONTAINS,
    "single-session-assistant": _CONTAINS,
    "multi-session": _CONTAINS,
    "temporal-reasoning": _CONTAINS + " Do not penalise off-by-one errors in counts of days, weeks, "
    "months and the like: answering 19 days when the answer is 18 is still correct.",
    "knowledge-update": "Mark the response correct if it gives the updated answer, even if it also mentions "
    "earlier information, as long as the updated answer is the one it gives as the answer.",
    "single-session-preference": "The 'correct answer' is a rubric describing a desired personalised response. "
    "Mark the response correct if it recalls and uses the user's personal information "
    "correctly; it does not need to cover every point of the rubric.",
}
ABSTENTION = (
    "This question cannot be answered from the conversation history; the 'correct answer' "
    "explains why. Mark the response correct if it says the information is not available, "
    "incomplete, or was never mentioned (it may point out related information that was given). "
    "Mark it incorrect if it answers as if the information were known."
)


def guidelines_for(question_type: str, abstention: bool) -> str:
    return ABSTENTION if abstention else GUIDELINES.get(question_type, _CONTAINS)


# The official protocol's per-type prompts (LongMemEval's evaluate_qa.py), in our own words. The
# gold is shown as the type needs: a rubric for preference questions, an explanation of why the
# question cannot be answered for abstention questions (question ids ending in _abs).
_OFFICIAL_CONTAINS = (
    "Answer yes if the response contains the correct answer; otherwise answer no. Answer yes "
    "as well if the response is equivalent to the correct answer or contains all the "
    "intermediate steps that lead to it. If it gives only part of the information the answer "
    "requires, answer no."
)
OFFICIAL_GUIDELINES = {
    "single-session-user": _OFFICIAL_CONTAINS,
    "single-session-assistant": _OFFICIAL_CONTAINS,
    "multi-session": _OFFICIAL_CONTAINS,
    "temporal-reasoning": _OFFICIAL_CONTAINS + " Do not penalise an off-by-one error in a count of days, weeks, "
    "months and the like: when the correct answer is 18 days, a response of 19 days is "
    "still correct.",
    "knowledge-update": "Answer yes if the response contains the correct answer; otherwise answer no. A response "
    "that also mentions earlier information is still correct, as long as the updated answer "
    "it gives is the one the question asks for.",
    "single-session-preference": "Answer yes if the response satisfies the desired response the rubric "
    "describes; otherwise answer no. It need not cover every point of the rubric: it "
    "is correct as long as it recalls and uses the user's personal information "
    "correctly.",
}
OFFICIAL_ABSTENTION = (
    "Answer yes if the response correctly identifies the question as unanswerable: it may "
    "say, for instance, that the information is incomplete, or that related information was "
    "given but not the information asked for. Otherwise answer no."
)


class OfficialFraming(BaseModel):
    """The parts of one official judge prompt: what is shown, the type's instructions, how the
    gold is labelled and the closing yes/no question."""

    shown: str
    guidelines: str
    gold_label: str
    ask: str


def official_framing(question_type: str, abstention: bool, rule: str = "") -> OfficialFraming:
    if abstention and not rule:
        return OfficialFraming(
            shown="a question that cannot be answered from the conversation history, an explanation of why, and "
            "a chat assistant's response",
            guidelines=OFFICIAL_ABSTENTION,
            gold_label="Explanation",
            ask="Does the response identify the question as unanswerable? Answer yes or no only.",
        )
    if question_type == "single-session-preference" and not rule:
        return OfficialFraming(
            shown="a question, a rubric for the desired personalised response, and a chat assistant's response",
            guidelines=OFFICIAL_GUIDELINES[question_type],
            gold_label="Rubric",
            ask="Is the response correct? Answer yes or no only.",
        )
    return OfficialFraming(
        shown="a question, its correct answer, and a chat assistant's response",
        guidelines=rule or OFFICIAL_GUIDELINES.get(question_type, _OFFICIAL_CONTAINS),
        gold_label="Correct answer",
        ask="Is the response correct? Answer yes or no only.",
    )


class JudgeInputs(BaseModel):
    question: str
    gold: str
    response: str
    question_type: str
    abstention: bool = False
    rule: str = ""  # a benchmark's own judging rule (TeaFarm's "not fooled"), instead of the type's

    @property
    def guidelines(self) -> str:
        return self.rule or guidelines_for(self.question_type, self.abstention)

    @property
    def official(self) -> OfficialFraming:
        return official_framing(self.question_type, self.abstention, self.rule)


class JudgeOut(BaseModel):
    correct: bool
    reason: str = ""


def _offline(inp: JudgeInputs) -> JudgeOut:
    ok = heuristic_correct(inp.response, inp.gold, abstention=inp.abstention)
    return JudgeOut(
        correct=ok,
        reason="[offline heuristic] reference overlap"
        if not inp.abstention
        else "[offline heuristic] abstention markers",
    )


SINGLE_JUDGE: TypedStep[JudgeInputs, JudgeOut] = TypedStep(
    "lme_judge",
    template="bench/lme_judge.j2",
    inputs=JudgeInputs,
    output=JudgeOut,
    offline=_offline,
)

# LongMemEval's own scoring (its evaluate_qa.py): per-type prompts (above), a plain-text reply at
# temperature 0 and at most OFFICIAL_MAX_TOKENS tokens; the answer counts as correct when the
# reply contains "yes". The paper's judge model is OFFICIAL_JUDGE_MODEL.
OFFICIAL_JUDGE: TypedStep[JudgeInputs, str] = TypedStep(
    "lme_judge_official",
    template="bench/lme_judge_official.j2",
    inputs=JudgeInputs,
    output=str,
    offline=lambda inp: "yes" if _offline(inp).correct else "no",
)


OFFICIAL_MAX_TOKENS = 10
OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"


def official_correct(reply: str) -> bool:
    return "yes" in reply.lower()


def judge_model_note(label: str, protocol: str = "official") -> str | None:
    """None when ``label`` (a model spec's label) is the protocol's judge model (LongMemEval's
    official one; Zep's gpt-4o-mini under ``zep``), else a plain statement that it is not
    (numbers then do not stand next to the paper's unqualified)."""
    model, whose = (
        ("gpt-4o-mini", "Zep's grader") if protocol == "zep" else (OFFICIAL_JUDGE_MODEL, "LongMemEval's official judge")
    )
    if label.rsplit("/", 1)[-1] == model:
        return None
    what = "the offline heuristic (no LLM)" if label == "offline" else label
    return f"the judge is {what}, not {whose} {model}: its accuracies are not directly comparable with the paper's"


# --- Zep's own LongMemEval protocol ---------------------------------------------------------
#
# Zep's own LongMemEval protocol (getzep/zep-papers, ``zep_longmem_eval.ipynb``, read, not
# copied), for ``chateval bench longmemeval --protocol zep``: the question carries its date as a
# prefix (in the search query, the reader's prompt and the grader's), the reader is Zep's (a short
# answer, abstain when the context does not answer; ``--reader-prompt zep``) and the grader is
# Zep's: gpt-4o-mini with a structured yes/no reply and per-type instructions for temporal
# reasoning, knowledge updates and preferences, every other question (abstention ones included)
# under the default "contains the correct answer" rule (``--judge-protocol zep``). Facts are
# reranked by a cross-encoder and entities by RRF (``zep`` settings ``reranker=cross_encoder``,
# ``node_reranker=rrf``), the query cut to 255 characters (``max_query_chars``): what
# ``longmemeval.settings.ZEP_SYSTEM_SETTINGS`` gives a ``zep`` system under ``--protocol zep``.

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
