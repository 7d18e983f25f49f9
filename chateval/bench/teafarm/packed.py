"""The TeaBag as the answering units read it (issue 38 item 3): each conversation held as its
JSON text, parsed again when its questions are asked, so a run of many conversations does not
keep every summary, question and simulated session as live objects."""

from __future__ import annotations

from collections import OrderedDict

from ...datasets.teabag import TeaBag, TeaConversation, TeaQuestion

PARSED = 64  # conversations kept parsed at once (groups in flight are far fewer)


class PackedBag:
    def __init__(self, bag: TeaBag, only: set[str] | None = None) -> None:
        self._text: dict[str, str] = {
            c.id: c.model_dump_json() for c in bag.conversations if only is None or c.id in only
        }
        self._parsed: OrderedDict[str, TeaConversation] = OrderedDict()

    def conversation(self, cid: str) -> TeaConversation:
        tc = self._parsed.get(cid)
        if tc is None:
            tc = self._parsed[cid] = TeaConversation.model_validate_json(self._text[cid])
            if len(self._parsed) > PARSED:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(cid)
        return tc

    def question(self, cid: str, qid: str) -> tuple[TeaConversation, TeaQuestion]:
        tc = self.conversation(cid)
        return tc, next(q for q in tc.questions if q.id == qid)
