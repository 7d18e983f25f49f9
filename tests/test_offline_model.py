"""The offline model: deterministic, sensible on clear-cut cases, clearly labelled."""

from __future__ import annotations

import pytest
from autogen_core.models import SystemMessage, UserMessage

from chateval import Evaluator, ModelCallError, ModelLayer, ModelSpec
from chateval.debate import Sample
from chateval.debate.offline_judge import quality
from chateval.models import CallLog, OfflineBackend, StepContext, offline_steps

Q = "What is the capital of France?"
RIGHT = "The capital of France is Paris, a city on the Seine."
OFF_TOPIC = "I like turtles and pizza on sunny days."
PANEL = ["general_public", "critic", "scientist"]


@pytest.fixture(scope="module")
def ev() -> Evaluator:
    return Evaluator(model="offline", cache=False, personas=PANEL)


def fingerprint(result) -> dict:
    """Everything but timings."""
    return {
        "verdict": result.verdict.model_dump() if result.verdict else None,
        "agents": [a.model_dump() for a in result.agents],
        "transcript": [(t.speaker, t.round, t.kind, t.order, t.text, t.prompt_tokens, t.completion_tokens)
                       for t in result.transcript],
        "status": result.status,
        "orders": result.orders and {k: v.model_dump() for k, v in result.orders.items()},
    }


def test_deterministic(ev):
    a = ev.compare_sync(Q, RIGHT, OFF_TOPIC)
    b = ev.compare_sync(Q, RIGHT, OFF_TOPIC)
    c = Evaluator(model="offline", cache=False, personas=PANEL).compare_sync(Q, RIGHT, OFF_TOPIC)
    assert fingerprint(a) == fingerprint(b) == fingerprint(c)
    s1 = ev.score_sync(Q, RIGHT, aspects=["Coherence", "Groundedness"], reference="Paris")
    s2 = ev.score_sync(Q, RIGHT, aspects=["Coherence", "Groundedness"], reference="Paris")
    assert fingerprint(s1) == fingerprint(s2)


def test_deterministic_with_swap_and_summarizer():
    def run():
        ev = Evaluator(model="offline", cache=False, personas=PANEL, swap=True, strategy="simultaneous_summarizer")
        return ev.compare_sync(Q, RIGHT, OFF_TOPIC)

    assert fingerprint(run()) == fingerprint(run())


@pytest.mark.parametrize("other", [OFF_TOPIC, "", "..."])
def test_pairwise_right_answer_wins_in_either_position(ev, other):
    first = ev.compare_sync(Q, RIGHT, other)
    assert first.status == "ok" and first.verdict.winner == "1" and not first.verdict.tie
    assert first.verdict.scores["answer_1"] > first.verdict.scores["answer_2"]
    second = ev.compare_sync(Q, other, RIGHT)
    assert second.verdict.winner == "2"
    assert second.verdict.scores["answer_2"] > second.verdict.scores["answer_1"]


def test_pairwise_identical_answers_tie(ev):
    result = ev.compare_sync(Q, RIGHT, RIGHT)
    assert result.verdict.winner == "tie" and result.verdict.tie


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("The capital of France is Paris.", True),
        ("Paris", True),
        ("It is London.", False),
        ("Lyon, I believe.", False),
    ],
)
def test_correctness(ev, answer, expected):
    result = ev.check_sync(Q, answer, "Paris")
    assert result.status == "ok"
    assert result.verdict.correct is expected and not result.verdict.tie
    assert result.verdict.votes == ({"correct": 3, "incorrect": 0} if expected else {"correct": 0, "incorrect": 3})


def test_score_on_topic_beats_off_topic(ev):
    good = ev.score_sync(Q, RIGHT)
    bad = ev.score_sync(Q, OFF_TOPIC)
    assert good.verdict.score > bad.verdict.score
    assert set(good.verdict.scores) == {"overall"}
    aspects = ["Coherence", "Groundedness"]
    good_a = ev.score_sync(Q, RIGHT, aspects=aspects, reference="Paris")
    bad_a = ev.score_sync(Q, OFF_TOPIC, aspects=aspects, reference="Paris")
    assert set(good_a.verdict.scores) == {"coherence", "groundedness"}
    assert good_a.verdict.score > bad_a.verdict.score
    for k in good_a.verdict.scores:
        assert good_a.verdict.scores[k] > bad_a.verdict.scores[k]
        assert 1 <= good_a.verdict.scores[k] <= 10 and 1 <= bad_a.verdict.scores[k] <= 10


def test_empty_answer_scores_lowest():
    s = Sample(id="x", question=Q, answer="")
    for persona in ("Critic", "General Public"):
        assert quality("", s, persona) == 1
        assert quality("   ", s, persona) == 1
        assert quality(RIGHT, s, persona) > 1


def test_structured_output_gives_the_same_verdict():
    plain = Evaluator(model="offline", cache=False, personas=PANEL, structured="off").compare_sync(Q, RIGHT, OFF_TOPIC)
    structured = Evaluator(model="offline", cache=False, personas=PANEL, structured="on").compare_sync(Q, RIGHT, OFF_TOPIC)
    assert structured.status == "ok"
    assert structured.verdict.scores == plain.verdict.scores and structured.verdict.winner == plain.verdict.winner
    assert structured.transcript[-1].text.lstrip().startswith("{")
    assert not any(a.reasked for a in structured.agents)


def test_labelled_offline(ev):
    result = ev.compare_sync(Q, RIGHT, OFF_TOPIC)
    assert result.model == "offline" and ev.is_offline
    assert result.transcript and all(t.text.startswith("[offline") for t in result.transcript)
    assert all(t.tokens_approx for t in result.transcript)
    summarized = Evaluator(model="offline", cache=False, personas=PANEL,
                           strategy="simultaneous_summarizer").compare_sync(Q, RIGHT, OFF_TOPIC)
    summaries = [t for t in summarized.transcript if t.kind == "summary"]
    assert summaries and all(t.text.startswith("[offline summary]") for t in summaries)
    assert all(t.text.startswith("[offline") for t in summarized.transcript)
    checked = ev.check_sync(Q, "Paris", "Paris")
    assert all(t.text.startswith("[offline") for t in checked.transcript)


async def test_unknown_step_is_a_clear_model_call_error():
    layer = ModelLayer(ModelSpec.parse("offline"), cache=None)
    log = CallLog()
    messages = [SystemMessage(content="sys"), UserMessage(content="hi", source="user")]
    with pytest.raises(ModelCallError, match="no implementation of step 'no_such_step'"):
        await layer.complete(messages, step=StepContext(name="no_such_step"), log=log)
    assert log.errors and "no_such_step" in log.errors[-1]
    with pytest.raises(ModelCallError, match="only typed steps"):
        await layer.complete(messages, step=None)
    # Through the autogen client view as well (what the debaters use).
    client = layer.client(step=StepContext(name="no_such_step"))
    with pytest.raises(ModelCallError, match="no_such_step"):
        await client.create(messages)
    assert "debate_turn" in offline_steps() and "no_such_step" not in offline_steps()


async def test_offline_backend_directly():
    from chateval.models import GenParams

    with pytest.raises(ModelCallError):
        await OfflineBackend().complete([UserMessage(content="x", source="u")], step=StepContext(name="nope"),
                                        response_format=None, params=GenParams())
