"""A custom communication strategy in one small class.

Use it from the CLI with ``--plugin examples/custom_strategy.py --strategy alternating_order``
or from Python by importing this module before building the Evaluator.

In each round the debaters speak one after another, as in one_by_one, but the speaking
order alternates between forward and reverse so no persona always has the last word.
"""

from __future__ import annotations

from autogen_agentchat.messages import TextMessage

from chateval import Strategy, strategy


@strategy("alternating_order")
class AlternatingOrder(Strategy):
    description = "one-by-one, with the speaking order reversed every other round"

    async def run(self, debate) -> None:
        said: list[TextMessage] = []  # everything said so far, in order
        seen = {d.name: 0 for d in debate.debaters}  # how much of `said` each debater has read
        for r in range(1, debate.turns + 1):
            said.append(debate.start_round(r))
            order = debate.debaters if r % 2 else list(reversed(debate.debaters))
            for d in order:
                # Each agent keeps its own history, so hand it only what it has not seen yet.
                reply = await d.agent.on_messages(said[seen[d.name]:], debate.cancellation)
                text = str(reply.chat_message.content)
                debate.record(d, r, text)
                said.append(TextMessage(content=text, source=d.name))
                seen[d.name] = len(said)
