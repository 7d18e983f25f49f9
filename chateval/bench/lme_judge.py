"""LongMemEval's answer check, in our own words: a yes/no judge whose instructions depend on
the question type (as in the benchmark's protocol), plus the same guidelines for the panel."""

from __future__ import annotations

from pydantic import BaseModel

from ..debate.offline_judge import heuristic_correct
from ..steps import TypedStep

_CONTAINS = ("Mark the response correct if it contains the correct answer, is equivalent to it, or "
             "contains all the intermediate steps that lead to it. If it gives only part of the "
             "information the answer requires, it is incorrect.")
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
ABSTENTION = ("This question cannot be answered from the conversation history; the 'correct answer' "
              "explains why. Mark the response correct if it says the information is not available, "
              "incomplete, or was never mentioned (it may point out related information that was given). "
              "Mark it incorrect if it answers as if the information were known.")


def guidelines_for(question_type: str, abstention: bool) -> str:
    return ABSTENTION if abstention else GUIDELINES.get(question_type, _CONTAINS)


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


class JudgeOut(BaseModel):
    correct: bool
    reason: str = ""


def _offline(inp: JudgeInputs) -> JudgeOut:
    ok = heuristic_correct(inp.response, inp.gold, abstention=inp.abstention)
    return JudgeOut(correct=ok, reason="[offline heuristic] reference overlap" if not inp.abstention
                    else "[offline heuristic] abstention markers")


SINGLE_JUDGE: TypedStep[JudgeInputs, JudgeOut] = TypedStep(
    "lme_judge", template="bench/lme_judge.j2", inputs=JudgeInputs, output=JudgeOut, offline=_offline,
)

# LongMemEval's own scoring (its evaluate_qa.py): the judge replies in plain text and the answer
# counts as correct when that reply contains "yes". Same per-type instructions, our wording.
OFFICIAL_JUDGE: TypedStep[JudgeInputs, str] = TypedStep(
    "lme_judge_official", template="bench/lme_judge_official.j2", inputs=JudgeInputs, output=str,
    offline=lambda inp: "yes" if _offline(inp).correct else "no",
)


def official_correct(reply: str) -> bool:
    return "yes" in reply.lower()
