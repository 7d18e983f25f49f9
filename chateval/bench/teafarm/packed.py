"""The TeaBag as a run holds it (issue 38 item 3): each conversation kept as its JSON text from
the moment it is generated (or read), parsed again when its questions are asked, so a run of
many conversations never keeps every summary, question and simulated session as live objects."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ...datasets.teabag import TeaBag, TeaConversation, TeaQuestion

PARSED = 64  # conversations kept parsed at once (groups in flight are far fewer)


class PackedBag:
    """``head``: the bag's fields but its conversations; ``texts``: conversation id -> its JSON
    text, in the bag's order."""

    def __init__(self, head: TeaBag, texts: dict[str, str]) -> None:
        self.head, self.texts = head, texts
        self._parsed: OrderedDict[str, TeaConversation] = OrderedDict()

    def __len__(self) -> int:
        return len(self.texts)

    def conversation(self, cid: str) -> TeaConversation:
        tc = self._parsed.get(cid)
        if tc is None:
            tc = self._parsed[cid] = TeaConversation.model_validate_json(self.texts[cid])
            if len(self._parsed) > PARSED:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(cid)
        return tc

    def question(self, cid: str, qid: str) -> tuple[TeaConversation, TeaQuestion]:
        tc = self.conversation(cid)
        return tc, next(q for q in tc.questions if q.id == qid)

    def head_dump(self) -> dict[str, Any]:
        """The bag's fields but its conversations, as ``model_dump(mode="json")`` gives them."""
        return self.head.model_dump(mode="json", exclude={"conversations"})

    def dumped(self) -> Iterator[dict[str, Any]]:
        """Each conversation as ``model_dump(mode="json")`` gives it, one at a time (teabag.json)."""
        return (json.loads(t) for t in self.texts.values())

    def first(self, n: int) -> TeaBag:
        """The bag with its first ``n`` conversations (the report's examples)."""
        return self.head.model_copy(update={"conversations": [self.conversation(c) for c in list(self.texts)[:n]]})
