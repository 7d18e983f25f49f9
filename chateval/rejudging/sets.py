"""Graded answer sets: answers to benchmark questions with the verdicts judges recorded for them.

One item is one answer: the question, the gold answer, the answer given, its category, the
conversation it belongs to (items of one conversation are not independent: intervals resample
whole conversations) and every verdict recorded for it, each with its judge and run. A set is
``wrong`` when every answer in it is wrong by construction (a leniency test): its accuracy under a
judge is that judge's false-acceptance rate.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

FORMATS = ("evermemos", "zep", "longmemeval", "run", "jsonl")


class Verdict(BaseModel):
    """One recorded judgement of one answer."""

    model_config = ConfigDict(frozen=True)

    judge: str  # the judge's name in the file (a model, "single", "debate", ...)
    run: str  # which of the judge's runs ("1", "2", ...; "1" when it judged once)
    accepted: bool


class GradedItem(BaseModel):
    id: str  # unique in its set
    question: str
    gold: str
    answer: str
    category: str | None = None  # "1".."5" for LoCoMo, a question type for LongMemEval
    conversation: str  # the cluster: items of one conversation are resampled together
    verdicts: list[Verdict] = Field(default_factory=list)
    wrong: bool = False  # wrong by construction (a known-wrong set)
    question_id: str | None = None  # the source's id (LoCoMo: locomo_<k>_qa<n>), for errata
    conversation_index: int | None = None  # LoCoMo: the conversation's position in locomo10.json
    question_type: str | None = None  # LongMemEval's type (its judge's instructions depend on it)
    abstention: bool = False

    @property
    def words(self) -> int:
        """The answer's length in words (verbosity against acceptance)."""
        return len(self.answer.split())


class GradedSet(BaseModel):
    """A file (or run) of graded answers."""

    label: str
    path: str
    format: str
    sha256: str | None = None
    wrong: bool = False
    items: list[GradedItem]
    answer_model: str | None = None  # when the file says (EverMemOS-style metadata)
    # Rates the file states about itself (EverMemOS-style: accuracy, each run's, the majority's,
    # per category), checked against ours from its recorded verdicts.
    stated: dict[str, float] = Field(default_factory=dict)

    def recorded_runs(self) -> list[tuple[str, str]]:
        """(judge, run) pairs found in the recorded verdicts, in first-seen order."""
        seen: dict[tuple[str, str], None] = {}
        for it in self.items:
            for v in it.verdicts:
                seen.setdefault((v.judge, v.run), None)
        return list(seen)

    @property
    def is_wrong(self) -> bool:
        return self.wrong or (bool(self.items) and all(it.wrong for it in self.items))
