"""Task formats: what a sample must contain, which prompts judge it, how a verdict is read."""

from __future__ import annotations

from pydantic import BaseModel

from ..util.errors import ConfigError
from ..util.registry import Registry
from .aggregate import Method, winner_of
from .parsing import (DEFAULT_SCALE, CorrectnessOut, PairwiseOut, ScoreOut, parse_correctness, parse_pairwise,
                      parse_scores, score_schema)
from .samples import AgentVerdict, Sample


class TaskFormat:
    name: str
    description: str  # for the summarizer: "evaluating ..."
    required: tuple[str, ...]
    schema: type[BaseModel]
    aggregates: tuple[Method, ...] = ("vote", "mean")
    default_aggregate: Method = "vote"

    @property
    def system_template(self) -> str:
        return f"{self.name}_system.j2"

    @property
    def templates(self) -> list[str]:
        return [self.system_template, f"{self.name}_verdict.j2"]

    def schema_for(self, sample: Sample) -> type[BaseModel]:
        """The verdict schema sent to the server for this sample."""
        return self.schema

    def missing(self, sample: Sample) -> list[str]:
        # Empty strings are allowed here (an assistant may say nothing); files reject them earlier.
        return [f for f in self.required if getattr(sample, f) is None]

    def check_aggregate(self, method: Method) -> None:
        if method not in self.aggregates:
            raise ConfigError(
                f"--aggregate {method} does not apply to the {self.name} task (use {' or '.join(self.aggregates)})"
            )

    def read(self, text: str, sample: Sample, verdict: AgentVerdict) -> None:
        """Fill ``verdict`` from the reply text; raises VerdictParseError."""
        raise NotImplementedError

    def verdict_key(self, verdict: AgentVerdict) -> object:
        """What two debaters must share to state "the same verdict" (--stop-early)."""
        raise NotImplementedError


TASKS: Registry[TaskFormat] = Registry("task", entry_points="chateval.tasks")


@TASKS.register("pairwise")
class Pairwise(TaskFormat):
    name = "pairwise"
    description = "two AI assistants' responses to the same user message"
    required = ("question", "answer_1", "answer_2")
    schema = PairwiseOut
    # Each debater scores both answers, so (as ChatEval does for score-bearing formats) the
    # panel averages the scores; a vote over each debater's winner ties on any 1-1 split.
    default_aggregate = "mean"

    def read(self, text, sample, verdict):
        s1, s2 = parse_pairwise(text)
        verdict.scores = {"answer_1": s1, "answer_2": s2}
        verdict.winner = winner_of(s1, s2)

    def verdict_key(self, verdict):
        return verdict.winner


@TASKS.register("score")
class Score(TaskFormat):
    name = "score"
    description = "the quality of one response"
    required = ("question", "answer")
    schema = ScoreOut
    aggregates = ("mean",)
    default_aggregate = "mean"

    def schema_for(self, sample):
        return score_schema(sample.scale or DEFAULT_SCALE)

    def read(self, text, sample, verdict):
        verdict.scores = parse_scores(text, sample.aspects, sample.scale or DEFAULT_SCALE)

    def verdict_key(self, verdict):
        # Scores carry no winner: only identical scores on every aspect are the same verdict.
        return tuple(sorted(verdict.scores.items()))


@TASKS.register("correctness")
class Correctness(TaskFormat):
    name = "correctness"
    description = "whether a response answers a question correctly, given a reference answer"
    required = ("question", "answer", "reference")
    schema = CorrectnessOut

    def read(self, text, sample, verdict):
        verdict.correct = parse_correctness(text)

    def verdict_key(self, verdict):
        return verdict.correct


def get_task(name: str) -> TaskFormat:
    return TASKS.get(name)()  # type: ignore[operator]
