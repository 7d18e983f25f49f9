"""What the debate panel sees in `bench msc-response`'s head-to-head on memory helpfulness.

THEANINE's paper (Fig. 5, App. E) compares two agents' *retrieved memories* at a turn — which
agent's memories benefit the response more — not their responses. ``compare="memories"`` (the
default) shows the panel each system's retrieved memory (the context its response step got) as
the two items to compare; ``compare="responses"`` (ours, the former default) shows the two
responses. Either way the panel sees the speakers' earlier conversations and the current one
(ours: the paper does not say what its judge saw besides the memories), and the task is the
pairwise one with both orders shown.
"""

from __future__ import annotations

from typing import Any, Literal

from ...datasets.msc_release import MSCDialogue
from ...debate.samples import Sample

ASPECT = "memory helpfulness"
Compare = Literal["memories", "responses"]
NOTHING = "(nothing retrieved)"

MEMORY_RULE = (
    "Here the two items to compare are not replies: each is what one dialogue agent retrieved from its memory of "
    "the speakers' earlier conversations, for writing the next turn of the current conversation (the last "
    "message shown). Judge only 'memory helpfulness': whose retrieved memories would help more to write that next "
    "turn — relevant to where the conversation is now, true to what was said before, showing how things changed "
    "since — not which text is longer. Memories that are off-topic, wrong about the past or would mislead the "
    "reply count against an agent; if both are equally useful (or equally useless), it is a tie."
)
RESPONSE_RULE = (
    "Both responses continue the same conversation; the speakers have talked before (their earlier "
    "conversations are in the context). Judge only 'memory helpfulness': which response makes better use of what "
    "was said in those earlier conversations — remembers what matters, stays consistent with it, follows how "
    "things changed since — while still fitting the current conversation. A response that ignores the past where "
    "it matters, or gets it wrong, loses; if neither uses the past or both use it equally well, it is a tie."
)


def compared(record: dict[str, Any], compare: Compare) -> str:
    """The item of one system's unit record the panel compares."""
    if compare == "responses":
        return str(record["response"])
    return str(record.get("context") or "").strip() or NOTHING


def pair_sample(ep: MSCDialogue, i: int, key: str, ra: dict[str, Any], rb: dict[str, Any], compare: Compare) -> Sample:
    """The pairwise sample for turn ``i`` of ``ep``: ``ra``'s item as answer 1, ``rb``'s as answer 2."""
    dialogue = ep.current.turns[:i]
    past = "\n\n".join(
        f"Conversation of {s.date:%Y-%m-%d}:\n" + "\n".join(f"{t.role}: {t.content}" for t in s.turns) for s in ep.past
    )
    history = "\n".join(f"{t.role}: {t.content}" for t in dialogue)
    return Sample(
        id=key,
        question=f"{dialogue[-1].role}: {dialogue[-1].content}",
        answer_1=compared(ra, compare),
        answer_2=compared(rb, compare),
        context=f"Their earlier conversations:\n{past}\n\nThe current conversation so far:\n{history}",
        aspects=[ASPECT],
        guidelines=MEMORY_RULE if compare == "memories" else RESPONSE_RULE,
    )
