"""Simultaneous talk: in each round all debaters answer the same snapshot of the history at
once; only afterwards does each receive the others' messages of that round."""

from __future__ import annotations

import asyncio

from autogen_agentchat.messages import TextMessage

from .base import Strategy, strategy


async def speak_all(debate, inbox: dict[str, list[TextMessage]], r: int) -> list[str]:
    """Every debater answers its inbox concurrently (one call per agent, never two at once)."""
    replies = await asyncio.gather(*(d.agent.on_messages(inbox[d.name], debate.cancellation) for d in debate.debaters))
    texts = [str(rep.chat_message.content) for rep in replies]
    for d, text in zip(debate.debaters, texts):
        debate.record(d, r, text)
    return texts


def others_messages(debate, texts: list[str]) -> dict[str, list[TextMessage]]:
    return {
        d.name: [TextMessage(content=t, source=o.name) for o, t in zip(debate.debaters, texts) if o is not d]
        for d in debate.debaters
    }


@strategy("simultaneous")
class Simultaneous(Strategy):
    description = "all debaters speak at once on the same history each round"

    def critical_path_calls(self, agents: int, turns: int) -> int:
        return turns

    async def run(self, debate) -> None:
        heard: dict[str, list[TextMessage]] = {d.name: [] for d in debate.debaters}
        for r in range(1, debate.turns + 1):
            moderator = debate.start_round(r)
            texts = await speak_all(debate, {n: msgs + [moderator] for n, msgs in heard.items()}, r)
            if debate.settled(r):  # --stop-early: every debater states the same verdict
                break
            heard = others_messages(debate, texts)
