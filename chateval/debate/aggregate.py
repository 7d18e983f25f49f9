"""Combining the debaters' verdicts: majority vote or mean score, and swap calibration."""

from __future__ import annotations

from collections import Counter
from statistics import mean

from .samples import AgentVerdict, Method, Verdict, Winner
from .tasks import TaskFormat, get_task

__all__ = [
    "Method",
    "aggregate",
    "combine_swapped",
    "correctness_verdict",
    "pairwise_verdict",
    "score_verdict",
    "unswap",
    "winner_of",
]
_EPS = 1e-9


def winner_of(s1: float, s2: float) -> Winner:
    if abs(s1 - s2) < _EPS:
        return "tie"
    return "1" if s1 > s2 else "2"


def aggregate(task: str | TaskFormat, method: Method, verdicts: list[AgentVerdict]) -> Verdict | None:
    """The panel's verdict (the task format combines its debaters' verdicts), or None when no
    debater produced a readable verdict."""
    fmt = get_task(task) if isinstance(task, str) else task
    valid = [v for v in verdicts if v.ok]
    base = Verdict(task=fmt.name, method=method, n_agents=len(verdicts), n_valid=len(valid))
    if not valid:
        return None
    return fmt.combine(method, valid, base)


def _mean_scores(valid: list[AgentVerdict]) -> dict[str, float]:
    keys = sorted({k for v in valid for k in v.scores})
    return {k: mean(v.scores[k] for v in valid if k in v.scores) for k in keys}


def pairwise_verdict(method: Method, valid: list[AgentVerdict], out: Verdict) -> Verdict:
    out.scores = _mean_scores(valid)
    # A readable pairwise verdict always names its winner (the task's read sets it).
    counts = Counter(v.winner for v in valid if v.winner is not None)
    out.votes = {k: counts.get(k, 0) for k in ("1", "2", "tie")}  # shown with either method
    if method == "mean":
        out.winner = winner_of(out.scores["answer_1"], out.scores["answer_2"])
        out.tie = out.winner == "tie"
        return out
    top = max(counts.values())
    leaders = sorted(k for k, c in counts.items() if c == top)
    if len(leaders) == 1:
        out.winner = leaders[0]
        out.tie = out.winner == "tie"
    else:
        # No majority: an explicit tie, with the reason, rather than an arbitrary pick.
        out.winner, out.tie = "tie", True
        out.note = "split vote: " + ", ".join(f"{k}={counts[k]}" for k in leaders)
    return out


def score_verdict(valid: list[AgentVerdict], out: Verdict) -> Verdict:
    out.scores = _mean_scores(valid)
    out.score = mean(out.scores.values()) if out.scores else None
    return out


def correctness_verdict(method: Method, valid: list[AgentVerdict], out: Verdict) -> Verdict:
    n_yes = sum(1 for v in valid if v.correct)
    n_no = len(valid) - n_yes
    out.votes = {"correct": n_yes, "incorrect": n_no}
    out.scores = {"correct": n_yes / len(valid)}
    if n_yes == n_no:
        out.correct, out.tie = None, True
        out.note = "split vote" if method == "vote" else "mean exactly 0.5"
    else:
        out.correct = n_yes > n_no
    return out


def combine_swapped(original: AgentVerdict, swapped: AgentVerdict) -> AgentVerdict:
    """FairEval's balanced position calibration for one agent: average each answer's score
    over the two presentation orders (in the swapped run, answer 1 was shown second)."""
    pairs: list[tuple[float, float]] = []
    if original.ok:
        pairs.append((original.scores["answer_1"], original.scores["answer_2"]))
    if swapped.ok:
        pairs.append((swapped.scores["answer_2"], swapped.scores["answer_1"]))
    combined = original.model_copy(update={"reasked": original.reasked or swapped.reasked})
    if not pairs:
        combined.parse_error = f"both orders unreadable: {original.parse_error}; {swapped.parse_error}"
        return combined
    s1 = mean(p[0] for p in pairs)
    s2 = mean(p[1] for p in pairs)
    combined.scores = {"answer_1": s1, "answer_2": s2}
    combined.winner = winner_of(s1, s2)
    combined.parse_error = None
    return combined


def unswap(verdict: Verdict) -> Verdict:
    """Express a verdict from the swapped run in the original answer numbering."""
    flip = {"1": "2", "2": "1", "tie": "tie"}
    out = verdict.model_copy(deep=True)
    if out.winner is not None:
        out.winner = flip[out.winner]  # type: ignore[assignment]
    if "answer_1" in out.scores:
        out.scores = {"answer_1": out.scores["answer_2"], "answer_2": out.scores["answer_1"]}
    if out.votes:
        out.votes = {"1": out.votes.get("2", 0), "2": out.votes.get("1", 0), "tie": out.votes.get("tie", 0)}
    return out
