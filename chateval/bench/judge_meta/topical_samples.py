"""How Topical-Chat rows become samples for the judge: the joint protocol (every aspect 1-10 in
one debate) and the per-aspect protocol (one debate per aspect on its USR scale: our protocol —
ChatEval's public code has per-aspect configs for SummEval only, none for Topical-Chat), and how
a response's per-aspect debates combine into one record."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean

from ...datasets.topical_chat import SCALE_RANGES, TCRow
from ...debate.panel import EarlyStop, JudgeResult
from ...debate.samples import Sample, Verdict
from ...models import UsageTotals

DEFINITIONS = {
    "naturalness": "does the response read like something a person would naturally say at this point?",
    "coherence": "does it follow on from the conversation so far — on topic, consistent, a sensible next turn?",
    "engagingness": "is it interesting, does it add something and make the other speaker want to go on?",
    "groundedness": "does it make use of the knowledge fact, and use it correctly? Ignoring the fact scores low.",
    "understandability": "can it be understood on its own terms?",
    "overall": "its overall quality as the next turn of this conversation.",
}


# What each point of an aspect's USR scale means, for the per-aspect protocol (our wording of
# the USR annotation scales: naturalness/coherence/engagingness 1-3, groundedness and
# understandability 0-1, overall 1-5).
ANCHORS = {
    "naturalness": "1 = no person would say this; 2 = a person might say it, but it sounds off; "
    "3 = reads like something a person would naturally say",
    "coherence": "1 = ignores or contradicts the conversation; 2 = related, but loses the thread; "
    "3 = a sensible next turn that follows on from the conversation",
    "engagingness": "1 = dull, adds nothing; 2 = somewhat interesting; 3 = interesting, makes the other "
    "speaker want to go on",
    "groundedness": "0 = does not use the knowledge fact, or uses it wrongly; 1 = uses the fact correctly",
    "understandability": "0 = cannot be understood; 1 = can be understood",
    "overall": "1 = a very poor next turn ... 5 = an excellent next turn",
}


def _dialogue(row: TCRow) -> tuple[str, str]:
    """(context, question): the knowledge fact and the earlier turns; the message being answered."""
    turns = row.history or ["(the conversation starts here)"]
    n = len(turns)

    def who(i: int) -> str:  # the last turn is Speaker A's; the response is Speaker B's next turn
        return "Speaker A" if (n - 1 - i) % 2 == 0 else "Speaker B"

    earlier = "\n".join(f"{who(i)}: {t}" for i, t in enumerate(turns[:-1])) or "(no earlier turns)"
    context = (
        f"Knowledge fact available to Speaker B, who gives the response:\n{row.fact}\n\nConversation so far:\n{earlier}"
    )
    return context, f"Speaker A: {turns[-1]}"


def build_sample(row: TCRow, aspects: Sequence[str]) -> Sample:
    """The joint protocol: every aspect rated 1-10 in one debate."""
    context, question = _dialogue(row)
    guidelines = (
        "The response to rate is Speaker B's next turn in this conversation. Rate each aspect "
        "from 1 to 10:\n" + "\n".join(f"- {a}: {DEFINITIONS.get(a, a)}" for a in aspects)
    )
    return Sample(
        id=row.key,
        question=question,
        answer=row.response,
        context=context,
        aspects=list(aspects),
        guidelines=guidelines,
        meta={"context_index": row.context_index, "system": row.system},
    )


def build_aspect_sample(row: TCRow, aspect: str) -> Sample:
    """The per-aspect protocol (ours, on USR's annotation scales): one debate per aspect,
    with only that aspect's criterion and its USR scale."""
    context, question = _dialogue(row)
    low, high = SCALE_RANGES[aspect]
    guidelines = (
        f"The response to rate is Speaker B's next turn in this conversation. Rate only its "
        f"{aspect}: {DEFINITIONS.get(aspect, aspect)}\nUse the scale from {low} to {high}: "
        f"{ANCHORS[aspect]}."
    )
    return Sample(
        id=f"{row.key}::{aspect}",
        question=question,
        answer=row.response,
        context=context,
        aspects=[aspect],
        scale=(low, high),
        guidelines=guidelines,
        meta={"context_index": row.context_index, "system": row.system, "aspect": aspect},
    )


def merge_aspect_results(key: str, results: dict[str, JudgeResult], latency_s: float) -> JudgeResult:
    """One record for a response judged aspect by aspect: the aspects' scores side by side; a
    response whose judgement failed on any aspect is a failed unit."""
    usage = UsageTotals()
    for r in results.values():
        usage.merge(r.usage)
    bad = {a: r for a, r in results.items() if r.status != "ok" or r.verdict is None}
    verdict = None
    if not bad:
        scores = {a: r.verdict.scores[a] for a, r in results.items() if r.verdict}
        verdict = Verdict(
            task="score",
            method="mean",
            scores=scores,
            score=mean(scores.values()),
            n_agents=sum(r.verdict.n_agents for r in results.values() if r.verdict),
            n_valid=sum(r.verdict.n_valid for r in results.values() if r.verdict),
        )
    first = next(iter(results.values()))
    stops = {a: r.stop_early for a, r in results.items() if r.stop_early}  # --stop-early, per aspect's debate
    stop = (
        EarlyStop(
            planned_rounds=next(iter(stops.values())).planned_rounds,
            rounds={f"{a}/{o}": n for a, st in stops.items() for o, n in st.rounds.items()},
            rounds_skipped=sum(st.rounds_skipped for st in stops.values()),
            calls_skipped=sum(st.calls_skipped for st in stops.values()),
        )
        if stops
        else None
    )
    return JudgeResult(
        id=key,
        task="score",
        status="failed" if bad else "ok",
        verdict=verdict,
        calls=sum(r.calls for r in results.values()),
        stop_early=stop,
        agents=[v for r in results.values() for v in r.agents],
        usage=usage,
        latency_s=latency_s,
        error="; ".join(f"{a}: {r.error or 'no readable verdict'}" for a, r in bad.items()) or None,
        model=first.model,
    )
