"""One-by-one: a fixed speaking order; each debater sees everything said before it,
including earlier speakers of the same round. autogen's RoundRobinGroupChat does exactly
this (it broadcasts every message to all participants)."""

from __future__ import annotations

from autogen_agentchat.messages import TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat

from .base import Strategy, strategy


@strategy("one_by_one")
class OneByOne(Strategy):
    description = "fixed order; each debater sees all earlier messages, including this round's"

    async def run(self, debate) -> None:
        agents = [d.agent for d in debate.debaters]
        by_name = {d.name: d for d in debate.debaters}
        # max_turns = one round; the next run() continues the same history with the next speaker.
        team = RoundRobinGroupChat(agents, max_turns=len(agents))
        for r in range(1, debate.turns + 1):
            task = debate.start_round(r)
            result = await team.run(task=task, cancellation_token=debate.cancellation)
            for msg in result.messages:
                if isinstance(msg, TextMessage) and msg.source in by_name:
                    debate.record(by_name[msg.source], r, msg.content)
