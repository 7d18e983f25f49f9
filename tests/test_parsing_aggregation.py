"""Verdict parsing, aggregation, swap calibration and the re-ask path."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from autogen_ext.models.replay import ReplayChatCompletionClient

from chateval import Evaluator, ModelLayer, ModelSpec
from chateval.debate.aggregate import aggregate, combine_swapped, unswap, winner_of
from chateval.debate.parsing import VerdictParseError, parse_correctness, parse_pairwise, parse_scores
from chateval.debate.samples import AgentVerdict, Verdict
from chateval.models import AutogenBackend, Backend, Completion, OfflineBackend

# --- parsing: pairwise --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Both are fine.\nScore of Assistant 1: 8\nScore of Assistant 2: 4", (8, 4)),
        ("Reasoning.\n**Score of Assistant 1:** 8\n**Score of Assistant 2:** 3", (8, 3)),
        ("Reasoning.\nScore of Assistant 1: 8/10\nScore of Assistant 2: 6 / 10", (8, 6)),
        ("Assistant 1: 7\nAssistant 2: 9", (7, 9)),
        ("score of assistant 1 = 7.5\nSCORE OF ASSISTANT 2 = 10", (7.5, 10)),
        ('{"reasoning": "A is better", "score_assistant_1": 9, "score_assistant_2": 2}', (9, 2)),
        ('```json\n{"reasoning": "x", "score_assistant_1": 3, "score_assistant_2": 5}\n```', (3, 5)),
        ('{"score_assistant_1": 6, "score_assistant_2": 6}\nThat is my verdict.', (6, 6)),
        # A verdict line quoted early, the real one at the end: the last one counts.
        ("Assistant 2 wrote 'Score of Assistant 1: 1'.\nMore thoughts.\nScore of Assistant 1: 9\nScore of Assistant 2: 4", (9, 4)),
        # A reply that opens by quoting code is not a JSON verdict; its final lines are read.
        ("```python\nprint('hi')\n```\nAssistant 1's code runs.\nScore of Assistant 1: 8\nScore of Assistant 2: 6", (8, 6)),
    ],
)
def test_parse_pairwise_good(text, expected):
    assert parse_pairwise(text) == expected


@pytest.mark.parametrize(
    "text, match",
    [
        ("Score of Assistant 1: 0\nScore of Assistant 2: 6", "outside 1-10"),
        ("Score of Assistant 1: 7\nScore of Assistant 2: 11", "outside 1-10"),
        ('{"score_assistant_1": 11, "score_assistant_2": 3}', "outside 1-10"),
        ("Score of Assistant 1: 7", "Assistant 2"),
        ("Score of Assistant 2: 7", "Assistant 1"),
        ("Assistant 1 is clearly better; I would pick it.", "Assistant 1"),
        ("I cannot decide.", "Assistant 1"),
        ('{"score_assistant_1": 8}', "schema"),
        ('```json\n{"score_assistant_1": "high", "score_assistant_2": 3}\n```', "schema"),
        ("{not json at all", "schema"),
        ("", "Assistant 1"),
    ],
)
def test_parse_pairwise_malformed(text, match):
    with pytest.raises(VerdictParseError, match=match):
        parse_pairwise(text)


def test_parse_pairwise_reads_only_the_last_lines():
    # A verdict-looking line early in the reply (e.g. quoting an answer), then only prose.
    text = "Score of Assistant 1: 9\nScore of Assistant 2: 1\n" + "\n".join(f"Prose line {i}." for i in range(10))
    with pytest.raises(VerdictParseError):
        parse_pairwise(text)
    # The same lines at the very end are read.
    assert parse_pairwise("\n".join(f"Prose line {i}." for i in range(10)) + "\nScore of Assistant 1: 9\nScore of Assistant 2: 1") == (9, 1)


# --- parsing: score and correctness -------------------------------------------------------


def test_parse_scores_aspects():
    aspects = ["Coherence", "Engagingness"]
    assert parse_scores("Fine.\nCoherence: 8\nEngagingness: 6", aspects) == {"coherence": 8, "engagingness": 6}
    assert parse_scores("**Coherence:** 8\nengagingness = 6/10", aspects) == {"coherence": 8, "engagingness": 6}
    assert parse_scores('{"reasoning": "r", "scores": {"coherence": 8, "Engagingness": 6}}', aspects) == {
        "coherence": 8, "engagingness": 6,
    }
    assert parse_scores("Good reply.\nScore: 7", None) == {"overall": 7}
    assert parse_scores('{"scores": {"Score": 4}}', None) == {"overall": 4}


@pytest.mark.parametrize(
    "text, aspects, match",
    [
        ("Coherence: 8", ["Coherence", "Engagingness"], "Engagingness"),
        ('{"scores": {"coherence": 8}}', ["Coherence", "Engagingness"], "Engagingness"),
        ("Coherence: 8\nEngagingness: 0", ["Coherence", "Engagingness"], "outside 1-10"),
        ("A decent reply overall.", None, "Score"),
        ("Score: 12", None, "outside 1-10"),
    ],
)
def test_parse_scores_malformed(text, aspects, match):
    with pytest.raises(VerdictParseError, match=match):
        parse_scores(text, aspects)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("It matches the reference.\nVerdict: correct", True),
        ("It contradicts the reference.\nVerdict: incorrect", False),
        ("**Verdict:** Incorrect", False),
        ("verdict = correct.", True),
        ('{"reasoning": "r", "verdict": "correct"}', True),
        ('```json\n{"verdict": "incorrect"}\n```', False),
    ],
)
def test_parse_correctness_good(text, expected):
    assert parse_correctness(text) is expected


@pytest.mark.parametrize("text", ["The response is correct.", '{"verdict": "maybe"}', "Verdict: partially"])
def test_parse_correctness_malformed(text):
    with pytest.raises(VerdictParseError):
        parse_correctness(text)


# --- aggregation --------------------------------------------------------------------------


def pv(agent: str, s1: float | None, s2: float | None = None, *, error: str | None = None) -> AgentVerdict:
    v = AgentVerdict(agent=agent, persona=agent)
    if error is not None or s1 is None:
        v.parse_error = error or "unreadable"
        return v
    v.scores = {"answer_1": s1, "answer_2": s2}
    v.winner = winner_of(s1, s2)
    return v


def cv(agent: str, correct: bool | None, error: str | None = None) -> AgentVerdict:
    return AgentVerdict(agent=agent, persona=agent, correct=correct, parse_error=error)


def test_vote_majority():
    v = aggregate("pairwise", "vote", [pv("a", 8, 4), pv("b", 7, 5), pv("c", 3, 9)])
    assert v.winner == "1" and v.tie is False and v.note is None
    assert v.votes == {"1": 2, "2": 1, "tie": 0}
    assert v.scores == {"answer_1": 6, "answer_2": 6}  # the mean scores are still reported
    assert (v.n_agents, v.n_valid) == (3, 3)


def test_vote_majority_for_tie_is_a_tie_without_note():
    v = aggregate("pairwise", "vote", [pv("a", 5, 5), pv("b", 6, 6), pv("c", 9, 1)])
    assert v.winner == "tie" and v.tie is True and v.note is None


def test_split_vote_is_an_explicit_tie_with_note():
    v = aggregate("pairwise", "vote", [pv("a", 8, 4), pv("b", 3, 9)])
    assert v.winner == "tie" and v.tie is True
    assert v.note == "split vote: 1=1, 2=1"
    three_way = aggregate("pairwise", "vote", [pv("a", 8, 4), pv("b", 3, 9), pv("c", 5, 5)])
    assert three_way.winner == "tie" and three_way.note == "split vote: 1=1, 2=1, tie=1"


def test_all_tie():
    v = aggregate("pairwise", "vote", [pv("a", 5, 5), pv("b", 7, 7)])
    assert v.winner == "tie" and v.tie is True and v.votes == {"1": 0, "2": 0, "tie": 2}
    m = aggregate("pairwise", "mean", [pv("a", 5, 5), pv("b", 7, 7)])
    assert m.winner == "tie" and m.tie is True


def test_mean_winner_and_tie():
    v = aggregate("pairwise", "mean", [pv("a", 9, 2), pv("b", 4, 6), pv("c", 4, 6)])
    # vote would pick 2 (2 of 3); the mean picks 1: 17/3 vs 14/3
    assert v.scores == pytest.approx({"answer_1": 17 / 3, "answer_2": 14 / 3})
    assert v.winner == "1" and v.tie is False and v.votes == {"1": 1, "2": 2, "tie": 0}
    t = aggregate("pairwise", "mean", [pv("a", 8, 6), pv("b", 6, 8)])
    assert t.winner == "tie" and t.tie is True


def test_pairwise_defaults_to_mean_and_two_debaters_split():
    # The example: (9,6) and (6,7) -> vote: tie; mean: 7.5 vs 6.5 -> assistant 1.
    from chateval.debate.tasks import get_task
    assert get_task("pairwise").default_aggregate == "mean"
    assert get_task("correctness").default_aggregate == "vote"
    verdicts = [pv("a", 9, 6), pv("b", 6, 7)]
    assert aggregate("pairwise", "vote", verdicts).winner == "tie"
    assert aggregate("pairwise", "mean", verdicts).winner == "1"


def test_parse_errors_are_excluded():
    v = aggregate("pairwise", "vote", [pv("a", 3, 9), pv("b", None), pv("c", None)])
    assert v.winner == "2" and (v.n_agents, v.n_valid) == (3, 1)
    assert v.votes == {"1": 0, "2": 1, "tie": 0}
    assert v.scores == {"answer_1": 3, "answer_2": 9}
    m = aggregate("pairwise", "mean", [pv("a", 3, 9), pv("b", None)])
    assert m.scores == {"answer_1": 3, "answer_2": 9} and m.winner == "2"


def test_all_invalid_is_none():
    assert aggregate("pairwise", "vote", [pv("a", None), pv("b", None)]) is None
    assert aggregate("pairwise", "mean", []) is None
    assert aggregate("correctness", "vote", [cv("a", None, "bad")]) is None
    assert aggregate("score", "mean", [AgentVerdict(agent="a", persona="a", parse_error="bad")]) is None


@pytest.mark.parametrize("method", ["vote", "mean"])
def test_correctness(method):
    v = aggregate("correctness", method, [cv("a", True), cv("b", True), cv("c", False)])
    assert v.correct is True and v.tie is False
    assert v.votes == {"correct": 2, "incorrect": 1} and v.scores == {"correct": pytest.approx(2 / 3)}
    no = aggregate("correctness", method, [cv("a", False), cv("b", False), cv("c", True)])
    assert no.correct is False
    split = aggregate("correctness", method, [cv("a", True), cv("b", False)])
    assert split.correct is None and split.tie is True
    assert split.note == ("split vote" if method == "vote" else "mean exactly 0.5")
    excluded = aggregate("correctness", method, [cv("a", True), cv("b", None, "bad")])
    assert excluded.correct is True and excluded.n_valid == 1


def test_score_mean_across_aspects():
    a = AgentVerdict(agent="a", persona="a", scores={"coherence": 8, "engagingness": 6})
    b = AgentVerdict(agent="b", persona="b", scores={"coherence": 6, "engagingness": 4})
    bad = AgentVerdict(agent="c", persona="c", parse_error="unreadable")
    v = aggregate("score", "mean", [a, b, bad])
    assert v.scores == {"coherence": 7, "engagingness": 5}
    assert v.score == 6 and (v.n_agents, v.n_valid) == (3, 2)
    assert v.winner is None and v.correct is None


def test_combine_swapped_hand_computed():
    orig = pv("a", 8, 4)
    # In the swapped run answer_1 is the original answer 2 and vice versa.
    swapped = pv("a", 6, 7)
    c = combine_swapped(orig, swapped)
    assert c.scores == {"answer_1": (8 + 7) / 2, "answer_2": (4 + 6) / 2}
    assert c.winner == "1" and c.ok
    assert (orig.scores, swapped.scores) == ({"answer_1": 8, "answer_2": 4}, {"answer_1": 6, "answer_2": 7})


def test_combine_swapped_position_bias_cancels_to_tie():
    # Each run prefers whatever is shown first by the same margin: no real preference.
    c = combine_swapped(pv("a", 8, 5), pv("a", 8, 5))
    assert c.scores == {"answer_1": 6.5, "answer_2": 6.5} and c.winner == "tie"


def test_combine_swapped_one_side_unreadable():
    only_orig = combine_swapped(pv("a", 8, 4), pv("a", None, error="swap unreadable"))
    assert only_orig.scores == {"answer_1": 8, "answer_2": 4} and only_orig.winner == "1" and only_orig.ok
    only_swap = combine_swapped(pv("a", None, error="orig unreadable"), pv("a", 6, 7))
    assert only_swap.scores == {"answer_1": 7, "answer_2": 6} and only_swap.winner == "1"
    assert only_swap.parse_error is None
    reasked = combine_swapped(pv("a", 8, 4), pv("a", 6, 7).model_copy(update={"reasked": True}))
    assert reasked.reasked is True
    neither = combine_swapped(pv("a", None, error="e1"), pv("a", None, error="e2"))
    assert not neither.ok and "e1" in neither.parse_error and "e2" in neither.parse_error
    assert neither.scores == {}


def test_unswap():
    v = Verdict(task="pairwise", method="vote", winner="1", scores={"answer_1": 8, "answer_2": 3},
                votes={"1": 2, "2": 1, "tie": 0}, n_agents=3, n_valid=3)
    u = unswap(v)
    assert u.winner == "2" and u.scores == {"answer_1": 3, "answer_2": 8}
    assert u.votes == {"1": 1, "2": 2, "tie": 0}
    assert v.winner == "1" and v.scores == {"answer_1": 8, "answer_2": 3}  # the input is untouched
    t = unswap(Verdict(task="pairwise", method="mean", winner="tie", tie=True, scores={"answer_1": 5, "answer_2": 5}))
    assert t.winner == "tie" and t.votes == {}
    assert unswap(unswap(v)) == v


# --- swap through the Evaluator (offline model) -------------------------------------------

Q = "Which planet is known as the Red Planet, and why?"
GOOD = "Mars is known as the Red Planet because iron oxide (rust) on its surface makes it look red."
WEAK = "Jupiter is big. Planets orbit the sun."


def final_scores(result, order: str) -> dict[str, tuple[float, float]]:
    out = {}
    for t in result.transcript:
        if t.order == order and t.kind == "debate" and t.round == 2:
            out[t.speaker] = parse_pairwise(t.text)
    return out


def test_swap_with_offline_model():
    ev = Evaluator(model="offline", cache=False, swap=True, personas=["general_public", "critic", "scientist"])
    result = ev.compare_sync(Q, GOOD, WEAK)
    assert result.status == "ok"
    assert set(result.orders) == {"original", "swapped"}
    assert result.orders["original"] is not None and result.orders["swapped"] is not None
    assert isinstance(result.order_disagreement, bool)
    assert result.order_disagreement == (result.orders["original"].winner != result.orders["swapped"].winner)
    assert {t.order for t in result.transcript} == {"original", "swapped"}
    orders = [t.order for t in result.transcript]
    assert orders == sorted(orders, key=lambda o: o != "original")  # original run first
    assert len(result.transcript) == 2 * 3 * 2

    orig, swapped = final_scores(result, "original"), final_scores(result, "swapped")
    assert set(orig) == set(swapped) == {a.agent for a in result.agents}
    for a in result.agents:
        o1, o2 = orig[a.agent]
        s1, s2 = swapped[a.agent]
        assert a.scores == pytest.approx({"answer_1": (o1 + s2) / 2, "answer_2": (o2 + s1) / 2})
        assert a.winner == winner_of(a.scores["answer_1"], a.scores["answer_2"])
    assert result.verdict.winner == "1"  # the right answer wins in both orders
    assert result.orders["swapped"].winner == "1"  # reported in the original numbering


def test_swap_applies_only_to_pairwise():
    from chateval.util.errors import ConfigError
    from chateval.debate import Panel, PersonaLibrary
    from chateval.util.prompts import get_prompts

    layer = ModelLayer(ModelSpec.parse("offline"), cache=None)
    with pytest.raises(ConfigError, match="swap"):
        Panel(task="score", personas=[PersonaLibrary().get("critic")], strategy="one_by_one", turns=1,
              aggregate="mean", layer=layer, prompts=get_prompts(), swap=True)


# --- re-ask -------------------------------------------------------------------------------


class RecordingBackend(Backend):
    """Records each call's (speaker, step, messages); replies via ``inner`` or ``reply(step)``."""

    model_info = OfflineBackend.model_info

    def __init__(self, inner: Backend | None = None, reply: Callable[[Any], str] | None = None) -> None:
        self.inner, self.reply = inner, reply
        self.calls: list[tuple[str, str, list[tuple[str, Any, Any]]]] = []
        if inner is not None:
            self.model_info = inner.model_info

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        who = getattr(step.inputs, "agent", None) or step.name
        self.calls.append((who, step.name, [(type(m).__name__, getattr(m, "source", None), m.content) for m in messages]))
        if self.inner is not None:
            return await self.inner.complete(messages, step=step, response_format=response_format, params=params)
        return Completion(text=self.reply(step))


def evaluator(backend: Backend, **settings) -> Evaluator:
    layer = ModelLayer(ModelSpec.parse("offline"), backend=backend, cache=None)
    return Evaluator(model="offline", layer=layer, **settings)


def test_reask_recovers_with_replay_client():
    replies = ["Both answers have merit; Assistant 1 is more precise.", "Score of Assistant 1: 8\nScore of Assistant 2: 3"]
    rec = RecordingBackend(AutogenBackend(ReplayChatCompletionClient(replies)))
    ev = evaluator(rec, personas=["critic"], turns=1)
    result = ev.compare_sync(Q, GOOD, WEAK)
    assert result.status == "ok"
    (agent,) = result.agents
    assert agent.reasked is True and agent.ok
    assert agent.scores == {"answer_1": 8, "answer_2": 3} and agent.winner == "1"
    assert result.verdict.winner == "1"
    assert [(t.speaker, t.round, t.kind) for t in result.transcript] == [("Critic", 1, "debate"), ("Critic", 1, "reask")]
    assert [(who, step) for who, step, _ in rec.calls] == [("Critic", "debate_turn"), ("Critic", "reask")]
    # The re-ask prompt carries the agent's own bad reply and the moderator's note on the problem.
    reask_msgs = rec.calls[1][2]
    assert ("AssistantMessage", "Critic", replies[0]) in reask_msgs
    last_type, last_source, last_text = reask_msgs[-1]
    assert (last_type, last_source) == ("UserMessage", "moderator")
    assert "could not be read as a verdict" in last_text and "Score of Assistant 1" in last_text


def scripted(bad_agents: set[str], *, bad_reask: bool = True) -> Callable[[Any], str]:
    def reply(step) -> str:
        inp = step.inputs
        if not inp.final:
            return f"{inp.agent} thinks in round {inp.round}."
        if inp.agent in bad_agents and (step.name == "debate_turn" or bad_reask):
            return f"{inp.agent}: I prefer not to give numbers."
        return f"{inp.agent} decides.\nScore of Assistant 1: 9\nScore of Assistant 2: 4"

    return reply


def test_reask_recovers_in_a_panel():
    rec = RecordingBackend(reply=scripted({"Critic"}, bad_reask=False))
    result = evaluator(rec, personas=["general_public", "critic", "scientist"], turns=2).compare_sync(Q, GOOD, WEAK)
    by_agent = {a.agent: a for a in result.agents}
    assert by_agent["Critic"].reasked and by_agent["Critic"].ok
    assert not by_agent["General_Public"].reasked and not by_agent["Scientist"].reasked
    assert result.verdict.n_valid == 3
    assert [(t.speaker, t.round) for t in result.transcript if t.kind == "reask"] == [("Critic", 2)]
    assert sum(1 for _, step, _ in rec.calls if step == "reask") == 1


@pytest.mark.parametrize("method", ["vote", "mean"])
def test_reask_still_unparseable_is_excluded(method):
    rec = RecordingBackend(reply=scripted({"Critic"}))
    ev = evaluator(rec, personas=["general_public", "critic", "scientist"], turns=2, aggregate=method)
    result = ev.compare_sync(Q, GOOD, WEAK)
    assert result.status == "ok"
    critic = next(a for a in result.agents if a.agent == "Critic")
    assert critic.reasked is True and not critic.ok
    assert "after re-ask" in critic.parse_error
    assert critic.scores == {} and critic.winner is None  # never turned into a score or a tie
    v = result.verdict
    assert (v.n_agents, v.n_valid) == (3, 2)
    assert v.scores == {"answer_1": 9, "answer_2": 4} and v.winner == "1"
    if method == "vote":
        assert v.votes == {"1": 2, "2": 0, "tie": 0}
    assert [t.kind for t in result.transcript].count("reask") == 1


def test_all_agents_unparseable_fails():
    rec = RecordingBackend(reply=scripted({"General_Public", "Critic", "Scientist"}))
    result = evaluator(rec, personas=["general_public", "critic", "scientist"], turns=2).compare_sync(Q, GOOD, WEAK)
    assert result.status == "failed" and result.verdict is None
    assert "no readable verdict" in result.error
    assert all(a.reasked and not a.ok for a in result.agents)
    assert [t.kind for t in result.transcript].count("reask") == 3


def test_all_unparseable_correctness_fails():
    def reply(step) -> str:
        return "Hard to say."

    result = evaluator(RecordingBackend(reply=reply), personas=["critic"], turns=1, task="correctness").check_sync(
        "Capital of France?", "Paris", "Paris")
    assert result.status == "failed" and result.verdict is None
    assert result.agents[0].correct is None and result.agents[0].parse_error


def test_swap_with_one_order_unreadable_uses_the_other():
    def reply(step) -> str:
        inp = step.inputs
        swapped = inp.sample.answer_1 == WEAK
        if not inp.final:
            return "thinking"
        if inp.agent == "Critic" and swapped:
            return "No numbers from me."
        # Scores follow the answers, not the positions.
        good, weak = 8, 4
        s1, s2 = (weak, good) if swapped else (good, weak)
        if inp.agent == "Scientist" and swapped:
            s1, s2 = 6, 7  # orig 8/4, swapped 6/7 -> answer_1 = 7.5, answer_2 = 5
        return f"Score of Assistant 1: {s1}\nScore of Assistant 2: {s2}"

    result = evaluator(RecordingBackend(reply=reply), personas=["critic", "scientist"], turns=1,
                       swap=True).compare_sync(Q, GOOD, WEAK)
    by_agent = {a.agent: a for a in result.agents}
    assert by_agent["Critic"].ok and by_agent["Critic"].reasked
    assert by_agent["Critic"].scores == {"answer_1": 8, "answer_2": 4}  # original order only
    assert by_agent["Scientist"].scores == {"answer_1": 7.5, "answer_2": 5}
    assert result.orders["swapped"].n_valid == 1 and result.orders["swapped"].winner == "1"
    assert result.order_disagreement is False
    assert result.verdict.winner == "1" and result.verdict.n_valid == 2
    assert [(t.speaker, t.order, t.kind) for t in result.transcript if t.kind == "reask"] == [("Critic", "swapped", "reask")]
