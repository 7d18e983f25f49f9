"""Who sees what, in which order: each strategy, asserted on the prompts the model received.

A recording backend sits under the real model layer, so every call goes through the same path
as a real run (autogen agents -> LayerClient -> ModelLayer -> Backend). The backend records each
call's messages and answers with deterministic text that names the speaker and round.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from autogen_agentchat.messages import TextMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from chateval import Evaluator, ModelLayer, ModelSpec
from chateval.debate import STRATEGIES, Panel, PersonaLibrary, Sample, Strategy, agent_names, strategy
from chateval.models import AutogenBackend, Backend, Completion, OfflineBackend
from chateval.util.prompts import fence, get_prompts

VERDICT = "Score of Assistant 1: 7\nScore of Assistant 2: 5"
PERSONAS = ["general_public", "critic", "scientist"]
A, B, C = "General_Public", "Critic", "Scientist"
QUESTION = "What is the capital of France?"
ANSWER_1 = "The capital of France is Paris."
ANSWER_2 = "France's capital city is Lyon."

Msg = tuple[str, Any, Any]  # (message type, source, content)


class RecordingBackend(Backend):
    """Records (speaker, messages) per call. Answers from ``inner`` when given (e.g. autogen's
    replay client), else with '<agent> says round <r>' plus verdict lines in the final round."""

    model_info = OfflineBackend.model_info

    def __init__(self, inner: Backend | None = None, reply: Callable[[Any], str] | None = None) -> None:
        self.inner = inner
        self.reply = reply
        self.calls: list[tuple[str, list[Msg]]] = []
        self.steps: list[Any] = []
        if inner is not None:
            self.model_info = inner.model_info

    async def complete(self, messages, *, step, response_format, params) -> Completion:
        who = (getattr(step.inputs, "agent", None) or step.name) if step is not None else None
        self.calls.append((who, [(type(m).__name__, getattr(m, "source", None), m.content) for m in messages]))
        self.steps.append(step)
        if self.inner is not None:
            return await self.inner.complete(messages, step=step, response_format=response_format, params=params)
        if self.reply is not None:
            return Completion(text=self.reply(step))
        return Completion(text=default_reply(step))


def default_reply(step) -> str:
    if step.name == "summarize_round":
        return f"SUMMARY of round {step.inputs.round}"
    inp = step.inputs
    text = said(inp.agent, inp.round)
    return f"{text}\n{VERDICT}" if inp.final else text


def said(agent: str, r: int) -> str:
    return f"{agent} says round {r}"


def make_layer(backend: Backend | None = None) -> tuple[ModelLayer, RecordingBackend]:
    rec = backend if isinstance(backend, RecordingBackend) else RecordingBackend()
    return ModelLayer(ModelSpec.parse("offline"), backend=rec, cache=None), rec


def run_panel(strategy_name: str, *, personas=PERSONAS, turns: int = 2, keep_raw_history: bool = False,
              backend: RecordingBackend | None = None, **settings):
    layer, rec = make_layer(backend)
    ev = Evaluator(model="offline", layer=layer, strategy=strategy_name, personas=list(personas), turns=turns,
                   keep_raw_history=keep_raw_history, **settings)
    result = ev.compare_sync(QUESTION, ANSWER_1, ANSWER_2)
    return result, rec


def debate_calls(rec: RecordingBackend) -> list[tuple[str, list[Msg]]]:
    return [(who, msgs) for who, msgs in rec.calls if who != "summarize_round"]


def contents(msgs: list[Msg]) -> str:
    return "\n".join(str(c) for _, _, c in msgs)


LABELS = {A: "General Public", B: "Critic", C: "Scientist", "summarizer": "Summarizer"}


def heard(msgs: list[Msg]) -> set[tuple[str, str]]:
    """(source, first line) of every message from another speaker (UserMessages). Debaters' and
    the summarizer's messages must carry their speaker's name as a '[Name] ' prefix; it is
    checked and stripped here."""
    out = set()
    for t, s, c in msgs:
        if t != "UserMessage":
            continue
        line = str(c).splitlines()[0]
        if s in LABELS:
            prefix = f"[{LABELS[s]}] "
            assert line.startswith(prefix), (s, line)
            line = line[len(prefix):]
        out.add((s, line))
    return out


def own(msgs: list[Msg]) -> list[tuple[Any, str]]:
    return [(s, str(c).splitlines()[0]) for t, s, c in msgs if t == "AssistantMessage"]


def calls_of(rec: RecordingBackend, agent: str) -> list[list[Msg]]:
    return [msgs for who, msgs in rec.calls if who == agent]


# --- one_by_one ---------------------------------------------------------------------------


def test_one_by_one_order_and_visibility():
    result, rec = run_panel("one_by_one")
    calls = debate_calls(rec)
    assert [who for who, _ in calls] == [A, B, C, A, B, C]
    assert len(rec.calls) == 3 * 2  # agents * turns, no extra calls

    (_, a1), (_, b1), (_, c1), (_, a2), (_, b2), (_, c2) = calls
    # Round 1: each speaker sees exactly the earlier speakers of this round.
    assert heard(a1) == {("moderator", "Round 1 of 2.")}
    assert heard(b1) == {("moderator", "Round 1 of 2."), (A, said(A, 1))}
    assert heard(c1) == {("moderator", "Round 1 of 2."), (A, said(A, 1)), (B, said(B, 1))}
    # Round 2: A sees B's and C's round-1 messages, and its own round-1 reply as its own.
    assert (B, said(B, 1)) in heard(a2) and (C, said(C, 1)) in heard(a2)
    assert own(a2) == [(A, said(A, 1))]
    assert a2[-1][1] == "moderator" and a2[-1][2].startswith("Round 2 of 2.")
    assert not any("round 2" in str(c) for t, _, c in a2 if t != "SystemMessage" and _ != "moderator")
    # Later speakers of round 2 also see the earlier round-2 messages.
    assert (A, said(A, 2)) in heard(b2)
    assert {(A, said(A, 2)), (B, said(B, 2))} <= heard(c2)
    # Message order inside C's round-1 prompt follows the speaking order.
    assert [s for t, s, _ in c1 if t == "UserMessage"] == ["moderator", A, B]


def test_one_by_one_transcript():
    result, _ = run_panel("one_by_one")
    assert result.status == "ok"
    assert [(t.speaker, t.round, t.kind, t.order) for t in result.transcript] == [
        (A, 1, "debate", "original"), (B, 1, "debate", "original"), (C, 1, "debate", "original"),
        (A, 2, "debate", "original"), (B, 2, "debate", "original"), (C, 2, "debate", "original"),
    ]
    assert result.transcript[0].text == said(A, 1)
    assert result.verdict.winner == "1" and result.verdict.votes == {"1": 3, "2": 0, "tie": 0}
    assert [a.scores for a in result.agents] == [{"answer_1": 7.0, "answer_2": 5.0}] * 3


# --- simultaneous -------------------------------------------------------------------------


def test_simultaneous_visibility():
    result, rec = run_panel("simultaneous")
    assert len(rec.calls) == 3 * 2
    for agent in (A, B, C):
        r1, r2 = calls_of(rec, agent)
        others = [x for x in (A, B, C) if x != agent]
        # Round 1: only the moderator, nobody else's message.
        assert heard(r1) == {("moderator", "Round 1 of 2.")}
        assert own(r1) == []
        # Round 2: every other agent's round-1 message, nobody's round-2 message.
        assert heard(r2) == {("moderator", "Round 1 of 2."), ("moderator", "Round 2 of 2.")} | {
            (o, said(o, 1)) for o in others
        }
        assert "round 2" not in contents([m for m in r2 if m[0] != "SystemMessage" and m[1] != "moderator"])
        # Its own round-1 reply is its own AssistantMessage, not a message it heard.
        assert own(r2) == [(agent, said(agent, 1))]
        assert (agent, said(agent, 1)) not in heard(r2)


def test_simultaneous_transcript():
    result, _ = run_panel("simultaneous")
    assert [(t.speaker, t.round, t.kind) for t in result.transcript] == [
        (A, 1, "debate"), (B, 1, "debate"), (C, 1, "debate"),
        (A, 2, "debate"), (B, 2, "debate"), (C, 2, "debate"),
    ]
    assert result.verdict.winner == "1"


# --- simultaneous_summarizer --------------------------------------------------------------


def test_summarizer_replace_visibility():
    result, rec = run_panel("simultaneous_summarizer", summary_mode="replace")
    whos = [who for who, _ in rec.calls]
    assert whos.count("summarize_round") == 1  # after round 1 only, not after the last round
    assert len(rec.calls) == 3 * 2 + 1
    first_summary = whos.index("summarize_round")
    assert sorted(whos[:first_summary]) == sorted([A, B, C])
    assert sorted(whos[first_summary + 1:]) == sorted([A, B, C])
    # The summarizer itself reads the round's raw messages.
    summ_prompt = contents(rec.calls[first_summary][1])
    assert all(said(x, 1) in summ_prompt for x in (A, B, C))

    for agent in (A, B, C):
        _, r2 = calls_of(rec, agent)
        assert ("summarizer", "SUMMARY of round 1") in heard(r2)
        body = contents([m for m in r2 if m[0] != "SystemMessage"])
        for x in (A, B, C):  # no raw round-1 messages, neither the others' nor its own
            assert said(x, 1) not in body
        assert own(r2) == []
        assert r2[0][0] == "SystemMessage"  # the reset keeps the system message
        assert r2[-1][1] == "moderator" and r2[-1][2].startswith("Round 2 of 2.")


@pytest.mark.parametrize("settings", [{}, {"keep_raw_history": True}, {"summary_mode": "append"}])
def test_summarizer_append_is_default(settings):
    # ChatEval concatenates the round summary to each debater's history: raw messages stay.
    result, rec = run_panel("simultaneous_summarizer", **settings)
    assert [who for who, _ in rec.calls].count("summarize_round") == 1
    for agent in (A, B, C):
        _, r2 = calls_of(rec, agent)
        others = [x for x in (A, B, C) if x != agent]
        assert ("summarizer", "SUMMARY of round 1") in heard(r2)
        assert {(o, said(o, 1)) for o in others} <= heard(r2)
        assert own(r2) == [(agent, said(agent, 1))]


def test_summarizer_transcript():
    result, _ = run_panel("simultaneous_summarizer")
    assert [(t.speaker, t.round, t.kind) for t in result.transcript] == [
        (A, 1, "debate"), (B, 1, "debate"), (C, 1, "debate"),
        ("summarizer", 1, "summary"),
        (A, 2, "debate"), (B, 2, "debate"), (C, 2, "debate"),
    ]
    assert result.transcript[3].text == "SUMMARY of round 1"
    assert result.status == "ok" and result.verdict.n_valid == 3


def test_summarizer_three_rounds_append_keeps_every_summary():
    _, rec = run_panel("simultaneous_summarizer", turns=3)
    for agent in (A, B, C):
        r3 = calls_of(rec, agent)[2]
        assert {("summarizer", "SUMMARY of round 1"), ("summarizer", "SUMMARY of round 2")} <= heard(r3)


def test_summarizer_three_rounds_summaries_chain():
    result, rec = run_panel("simultaneous_summarizer", turns=3, summary_mode="replace")
    whos = [who for who, _ in rec.calls]
    assert whos.count("summarize_round") == 2  # after rounds 1 and 2, not after round 3
    second = [i for i, w in enumerate(whos) if w == "summarize_round"][1]
    # The second summary builds on the first, and round 3 sees only the latest summary.
    assert "SUMMARY of round 1" in contents(rec.calls[second][1])
    for agent in (A, B, C):
        r3 = calls_of(rec, agent)[2]
        assert ("summarizer", "SUMMARY of round 2") in heard(r3)
        assert "SUMMARY of round 1" not in contents([m for m in r3 if m[0] != "SystemMessage"])
    assert [t.kind for t in result.transcript].count("summary") == 2


# --- system messages and agent names ------------------------------------------------------


@pytest.mark.parametrize("layout", ["shared-prefix", "persona-first"])
@pytest.mark.parametrize("strategy_name", ["one_by_one", "simultaneous", "simultaneous_summarizer"])
def test_system_messages_carry_persona_and_fenced_data(strategy_name, layout):
    _, rec = run_panel(strategy_name, prompt_layout=layout)
    library = PersonaLibrary()
    roles = {A: library.get("general_public").role, B: library.get("critic").role, C: library.get("scientist").role}
    for who, msgs in debate_calls(rec):
        systems = [c for t, _, c in msgs if t == "SystemMessage"]
        assert len(systems) == 1 and msgs[0][0] == "SystemMessage"
        system = systems[0]
        if layout == "persona-first":
            assert system.startswith(f"You are {who},")
        else:  # the task and data first, identical for all; the persona after the last fence
            assert system.startswith("Text between <<<BEGIN") and f"\n\nYou are {who}," in system
            assert system.index(f"You are {who},") > system.index(fence(ANSWER_2, "ASSISTANT 2"))
        assert roles[who] in system
        assert fence(QUESTION, "QUESTION") in system
        assert fence(ANSWER_1, "ASSISTANT 1") in system
        assert fence(ANSWER_2, "ASSISTANT 2") in system
        # The others are named, but their roles are not this agent's persona.
        for other, role in roles.items():
            if other != who:
                assert role not in system


def test_duplicate_personas_get_unique_identifier_names():
    result, rec = run_panel("one_by_one", personas=["annotator", "annotator", "general_public"])
    assert [who for who, _ in debate_calls(rec)][:3] == ["Annotator", "Annotator_2", "General_Public"]
    names = [a.agent for a in result.agents]
    assert names == ["Annotator", "Annotator_2", "General_Public"]
    assert all(n.isidentifier() for n in names) and len(set(names)) == 3
    assert [a.persona for a in result.agents] == ["Annotator", "Annotator", "General Public"]
    role = PersonaLibrary().get("annotator").role
    for who, msgs in debate_calls(rec):
        if who.startswith("Annotator"):
            assert role in msgs[0][2]


def test_agent_names_helper():
    library = PersonaLibrary()
    p = [library.get(n) for n in ("general_public", "annotator", "annotator", "annotator")]
    names = agent_names(p)
    assert names == ["General_Public", "Annotator", "Annotator_2", "Annotator_3"]
    assert all(n.isidentifier() for n in names)


def test_panel_built_directly():
    layer, rec = make_layer()
    library = PersonaLibrary()
    panel = Panel(task="pairwise", personas=[library.get("critic"), library.get("scientist")],
                  strategy="simultaneous", turns=1, aggregate="mean", layer=layer, prompts=get_prompts())

    import asyncio

    result = asyncio.run(panel.judge(Sample(id="s1", question=QUESTION, answer_1=ANSWER_1, answer_2=ANSWER_2)))
    assert [who for who, _ in rec.calls] == [B, C]
    # One round: it is the final round at once, and nobody hears anyone.
    for _, msgs in rec.calls:
        assert heard(msgs) == {("moderator", "Round 1 of 1.")}
        assert "Score of Assistant 1: <score>" in msgs[-1][2]
    assert result.verdict.winner == "1" and result.verdict.method == "mean"
    assert [(t.speaker, t.round) for t in result.transcript] == [(B, 1), (C, 1)]


# --- a custom strategy --------------------------------------------------------------------


@strategy("reverse_each_round")
class ReverseEachRound(Strategy):
    """One at a time; the speaking order reverses every round. Each debater receives, when it
    speaks, everything said since its last turn (moderator first)."""

    description = "one by one, reversing the order each round"

    async def run(self, debate) -> None:
        order = list(debate.debaters)
        inbox: dict[str, list[TextMessage]] = {d.name: [] for d in order}
        for r in range(1, debate.turns + 1):
            if r > 1:
                order.reverse()
            moderator = debate.start_round(r)
            for d in order:
                inbox[d.name].append(moderator)
            for d in order:
                reply = await d.agent.on_messages(inbox[d.name], debate.cancellation)
                inbox[d.name] = []
                text = str(reply.chat_message.content)
                debate.record(d, r, text)
                for o in order:
                    if o is not d:
                        inbox[o.name].append(TextMessage(content=text, source=d.name))


def test_custom_strategy_via_evaluator():
    assert "reverse_each_round" in STRATEGIES
    result, rec = run_panel("reverse_each_round")
    assert [who for who, _ in rec.calls] == [A, B, C, C, B, A]
    (_, a1), (_, b1), (_, c1), (_, c2), (_, b2), (_, a2) = rec.calls
    assert heard(b1) == {("moderator", "Round 1 of 2."), (A, said(A, 1))}
    assert (C, said(C, 2)) in heard(b2) and (B, said(B, 2)) in heard(a2)
    assert own(c2) == [(C, said(C, 1))]
    assert [(t.speaker, t.round, t.kind) for t in result.transcript] == [
        (A, 1, "debate"), (B, 1, "debate"), (C, 1, "debate"),
        (C, 2, "debate"), (B, 2, "debate"), (A, 2, "debate"),
    ]
    assert result.status == "ok" and result.verdict.winner == "1"
    assert {a.agent for a in result.agents} == {A, B, C}


def test_unknown_strategy_is_a_config_error():
    from chateval.util.errors import ConfigError

    layer, _ = make_layer()
    with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
        Evaluator(model="offline", layer=layer, strategy="nope")


# --- replay client under the layer --------------------------------------------------------


def test_replay_client_one_by_one():
    """autogen's replay client behind the layer: replies are used in speaking order."""
    replies = ["A1 view", "B1 view", f"A2 final\n{VERDICT}", "B2 final\nScore of Assistant 1: 3\nScore of Assistant 2: 9"]
    backend = RecordingBackend(AutogenBackend(ReplayChatCompletionClient(replies)))
    result, rec = run_panel("one_by_one", personas=["general_public", "critic"], backend=backend)
    assert [who for who, _ in rec.calls] == [A, B, A, B]
    assert ("General_Public", "A1 view") in heard(rec.calls[1][1])
    assert own(rec.calls[2][1]) == [(A, "A1 view")]
    assert [t.text.splitlines()[0] for t in result.transcript] == ["A1 view", "B1 view", "A2 final", "B2 final"]
    assert [a.winner for a in result.agents] == ["1", "2"]
    # Default aggregation for pairwise is the mean score (ChatEval): (7+3)/2 < (5+9)/2 -> 2,
    # where a vote over the two debaters' winners would be a 1-1 tie.
    v = result.verdict
    assert v.method == "mean" and v.winner == "2" and v.votes == {"1": 1, "2": 1, "tie": 0}


def test_role_duties_reach_the_debaters():
    # ChatEval's debate is driven by two duties: General Public commits to a side on its own
    # first; Critic questions the others' reasoning and separates answers that look equal.
    _, rec = run_panel("one_by_one", personas=["general_public", "critic"])
    systems = {who: msgs[0][2] for who, msgs in debate_calls(rec)}
    assert "on your own" in systems[A] and "commit to which response" in systems[A]
    assert "probe the other referees' reasoning" in systems[B] and "alternative" in systems[B]
    library = PersonaLibrary()
    for name in ("memory_keeper", "timekeeper", "user_advocate"):  # memory roles: same style
        role = library.get(name).role
        assert "first" in role or "early" in role or "on your own" in role
        assert "challenge" in role or "question" in role or "push back" in role
