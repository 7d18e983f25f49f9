"""The built-in task formats: pairwise (which of two answers is better), score (rate one answer
per aspect) and correctness (does an answer match the reference). Each keeps its own labels,
verdict reading, aggregation, summary fields, report rows, viewer text and offline verdict."""

from __future__ import annotations

import json
from collections import Counter
from statistics import mean
from typing import Any

from pydantic import BaseModel

from ..stats.agreement import correlations
from ..stats.labels import combine, leave_one_out, normalise_label, reference_label, score_label
from .aggregate import correctness_verdict, pairwise_verdict, score_verdict, winner_of
from .debaters import DebateTurnInputs
from .offline_heuristics import aspect_scores, is_correct, pairwise_scores
from .parsing import (
    DEFAULT_SCALE,
    CorrectnessOut,
    PairwiseOut,
    ScoreOut,
    parse_correctness,
    parse_pairwise,
    parse_scores,
    score_schema,
)
from .samples import AgentVerdict, Method, Verdict
from .tasks import MAX_NAME_CHARS, TASKS, TaskFormat

__all__ = ["Correctness", "Pairwise", "Score"]


class _LabelledByStats(TaskFormat):
    """Labels as chateval.stats.labels reads them (shared with calibrate, audit and the benches)."""

    expected: str = ""

    def normalise_label(self, label: Any) -> Any:
        return normalise_label(self.name, label)

    def check_label(self, label: Any) -> None:
        if isinstance(label, dict) or self.normalise_label(label) is None:
            raise ValueError(
                f"field 'label': {json.dumps(label)[:60]} is not a {self.name} label (expected "
                f"{self.expected} or a list of them, one per annotator)"
            )

    def combine_labels(self, labels: list[Any]) -> Any:
        return combine(self.name, labels)

    def reference(self, label: Any) -> Any:
        return reference_label(self.name, label)

    def leave_one_out(self, label: Any) -> list[tuple[Any, Any]]:
        return leave_one_out(self.name, label)


@TASKS.register("pairwise")
class Pairwise(_LabelledByStats):
    name = "pairwise"
    description = "two AI assistants' responses to the same user message"
    required = ("question", "answer_1", "answer_2")
    schema = PairwiseOut
    aggregates = ("vote", "mean")
    # Each debater scores both answers, so (as ChatEval does for score-bearing formats) the
    # panel averages the scores; a vote over each debater's winner ties on any 1-1 split.
    default_aggregate = "mean"
    classes = ("1", "2", "tie")
    expected = '"1", "2" or "tie"'

    def read(self, text, sample, verdict):
        s1, s2 = parse_pairwise(text)
        verdict.scores = {"answer_1": s1, "answer_2": s2}
        verdict.winner = winner_of(s1, s2)

    def verdict_key(self, verdict):
        return verdict.winner

    def combine(self, method: Method, valid: list[AgentVerdict], out: Verdict) -> Verdict:
        return pairwise_verdict(method, valid, out)

    def prediction(self, verdict):
        return verdict.get("winner")

    def card(self, verdict):
        return verdict.get("winner")

    def summarize(self, ok: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"verdicts": dict(Counter(r["verdict"].get("winner") for r in ok if r.get("verdict")))}
        swapped = [r for r in ok if r.get("order_disagreement") is not None]
        if swapped:
            out["order_disagreement_rate"] = sum(1 for r in swapped if r["order_disagreement"]) / len(swapped)
        return out

    def offline_answers(self, sample):
        return [("Assistant 1", sample.answer_1), ("Assistant 2", sample.answer_2)]

    def offline_lean(self, inp: DebateTurnInputs) -> str:
        s1, s2 = pairwise_scores(inp)
        if s1 == s2:
            return "So far I see them as equal."
        return "I lean towards Assistant 1." if s1 > s2 else "I lean towards Assistant 2."

    def offline_verdict(self, inp, fmt: type[BaseModel] | None, reasoning: str) -> str | BaseModel:
        s1, s2 = pairwise_scores(inp)
        if fmt is not None:
            return fmt.model_validate({"reasoning": reasoning, "score_assistant_1": s1, "score_assistant_2": s2})
        return f"{reasoning}\nScore of Assistant 1: {s1}\nScore of Assistant 2: {s2}"


@TASKS.register("score")
class Score(_LabelledByStats):
    name = "score"
    description = "the quality of one response"
    required = ("question", "answer")
    schema = ScoreOut
    aggregates = ("mean",)
    default_aggregate = "mean"
    reference_kind = "mean"
    metrics = ("spearman", "kendall")
    primary_metric = "spearman"

    def normalise_label(self, label: Any) -> Any:
        value = score_label(label)
        return None if value == {} else value

    def check_label(self, label: Any) -> None:
        ok = (isinstance(label, (int, float)) and not isinstance(label, bool)) or (
            isinstance(label, dict)
            and all(
                isinstance(k, str)
                and len(k) <= MAX_NAME_CHARS
                and isinstance(v, (int, float))
                and not isinstance(v, bool)
                for k, v in label.items()
            )
        )
        if not ok:
            raise ValueError(
                f"field 'label': {json.dumps(label)[:60]} is not a score label "
                "(expected a number or {aspect: number}, or a list of them, one per annotator)"
            )

    def check_labels(self, labels: list[Any]) -> None:
        if len({isinstance(one, dict) for one in labels}) > 1:
            raise ValueError("field 'label': mixes numbers and {aspect: number} labels")

    def schema_for(self, sample):
        return score_schema(sample.scale or DEFAULT_SCALE)

    def read(self, text, sample, verdict):
        verdict.scores = parse_scores(text, sample.aspects, sample.scale or DEFAULT_SCALE)

    def verdict_key(self, verdict):
        # Scores carry no winner: only identical scores on every aspect are the same verdict.
        return tuple(sorted(verdict.scores.items()))

    def combine(self, method: Method, valid: list[AgentVerdict], out: Verdict) -> Verdict:
        return score_verdict(valid, out)

    def prediction(self, verdict):
        """Every score the verdict gives (per aspect, and their mean as "score")."""
        scores = dict(verdict.get("scores") or {})
        if verdict.get("score") is not None:
            scores.setdefault("score", verdict["score"])
        return scores

    def card(self, verdict):
        return verdict.get("score")

    def summarize(self, ok):
        scores = [r["verdict"]["score"] for r in ok if r.get("verdict") and r["verdict"].get("score") is not None]
        return {"mean_score": mean(scores) if scores else None}

    def label_accuracy(self, labelled):
        # As before the task formats owned it: a score verdict names no correct/incorrect, so no
        # numeric label equals it (report.md's correlations are the score task's agreement).
        hits = sum(1 for r, lab in labelled if r["verdict"].get("correct") == lab)
        return {"n": len(labelled), "accuracy": hits / len(labelled)}

    def agreement(self, ok: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        aspects = sorted({a for r in ok for a in (r["verdict"].get("scores") or {})})
        out["aspect_means"] = {
            a: mean(vals)
            if (vals := [r["verdict"]["scores"][a] for r in ok if a in (r["verdict"].get("scores") or {})])
            else None
            for a in aspects
        }
        labels = [self.reference(r.get("label")) for r in ok]  # several annotators: their mean
        if any(isinstance(lab, float) for lab in labels):
            out["overall"] = correlations(
                [r["verdict"].get("score") for r in ok],
                [lab if isinstance(lab, float) else None for lab in labels],
                x_name="the panel's score",
                y_name="the label",
            )
        for a in aspects:
            human = [lab.get(a) if isinstance(lab, dict) else None for lab in labels]
            if any(h is not None for h in human):
                out.setdefault("aspects", {})[a] = correlations(
                    [(r["verdict"].get("scores") or {}).get(a) for r in ok],
                    human,
                    x_name=f"the panel's {a}",
                    y_name=f"the labelled {a}",
                )
        return out if len(out) > 1 or "overall" in out or out["aspect_means"] else {}

    def report_rows(self, summary):
        rows = super().report_rows(summary)
        if summary.get("mean_score") is not None:
            rows.append(f"| mean score | {summary['mean_score']:.2f} |")
        return rows

    def offline_verdict(self, inp, fmt, reasoning):
        scores = aspect_scores(inp)
        if fmt is not None:
            return fmt.model_validate({"reasoning": reasoning, "scores": scores})
        return reasoning + "\n" + "\n".join(f"{a}: {v}" for a, v in scores.items())


@TASKS.register("correctness")
class Correctness(_LabelledByStats):
    name = "correctness"
    description = "whether a response answers a question correctly, given a reference answer"
    required = ("question", "answer", "reference")
    schema = CorrectnessOut
    aggregates = ("vote", "mean")
    classes = (True, False)
    expected = '"correct"/"incorrect" or true/false'

    def read(self, text, sample, verdict):
        verdict.correct = parse_correctness(text)

    def verdict_key(self, verdict):
        return verdict.correct

    def combine(self, method: Method, valid: list[AgentVerdict], out: Verdict) -> Verdict:
        return correctness_verdict(method, valid, out)

    def prediction(self, verdict):
        return verdict.get("correct")

    def card(self, verdict):
        return verdict.get("correct")

    def summarize(self, ok):
        names = {True: "correct", False: "incorrect", None: "tie"}
        return {"verdicts": dict(Counter(names[r["verdict"].get("correct")] for r in ok if r.get("verdict")))}

    def offline_verdict(self, inp, fmt, reasoning):
        ok = is_correct(inp)
        if fmt is not None:
            return fmt.model_validate({"reasoning": reasoning, "verdict": "correct" if ok else "incorrect"})
        return f"{reasoning}\nVerdict: {'correct' if ok else 'incorrect'}"
