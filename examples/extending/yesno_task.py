"""A task format in a plugin file: ``yesno`` asks the panel whether the response answers the
question that was asked (labels: "yes" / "no").

    chateval evaluate items.jsonl --task yesno --plugin examples/extending/yesno_task.py --out runs/yesno
    chateval calibrate items.jsonl --task yesno --plugin examples/extending/yesno_task.py --out runs/cal
    chateval view runs/yesno

Each input line is {"id", "question", "answer", "label": "yes" | "no"} (the label is optional;
several annotators: a list of labels). The base class, TaskFormat, already treats a task with
``classes`` as a classifier: the panel votes over the debaters' ``choice``, the summary counts
the verdicts, the report gives accuracy and Cohen's kappa against the labels, calibrate ranks
settings by kappa, and the viewer shows the choice. This file adds what is particular to the
task: its fields, its prompts, how a reply is read and how the offline model answers it.
An installed package registers the class under the ``chateval.tasks`` entry point group instead::

    [project.entry-points."chateval.tasks"]
    yesno = "my_package.tasks:YesNo"
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ValidationError

from chateval.debate.offline_heuristics import quality
from chateval.debate.parsing import VerdictParseError
from chateval.debate.tasks import TASKS, TaskFormat
from chateval.models import parse_json_reply


class YesNoOut(BaseModel):
    """The verdict's JSON schema, sent to endpoints that take structured output."""

    reasoning: str = ""
    verdict: Literal["yes", "no"]


SYSTEM = """\
{% include "_fences_note.j2" %}

Task: decide whether the response answers the question that was asked. Answer "yes" when it \
addresses that question (rightly or wrongly), "no" when it answers another question, evades it \
or says nothing useful.

{% include "_data_blocks.j2" %}

The response to check:
{{ answer | fence("RESPONSE") }}
"""

VERDICT = """\
{% if structured %}
Reply with a JSON object: "reasoning" (a few sentences) and "verdict", either "yes" or "no".
{% else %}
Give your reasoning in a few sentences, then end your reply with exactly one line:
Verdict: yes
or
Verdict: no
{% endif %}
"""

_VERDICT_LINE = re.compile(r"verdict\s*\**\s*[:=]\s*\**\s*(yes|no)\b", re.IGNORECASE)


@TASKS.register("yesno")
class YesNo(TaskFormat):
    name = "yesno"
    description = "whether a response answers the question that was asked"
    required = ("question", "answer")
    schema = YesNoOut
    classes = ("yes", "no")
    prompts = {"yesno_system.j2": SYSTEM, "yesno_verdict.j2": VERDICT}

    def read(self, text, sample, verdict):
        if text.lstrip().startswith(("{", "```")):
            try:
                verdict.choice = YesNoOut.model_validate(parse_json_reply(text)).verdict
                return
            except (ValueError, ValidationError) as e:
                raise VerdictParseError(f"JSON verdict does not match the schema: {str(e).splitlines()[0]}") from None
        lines = [line for line in text.strip().splitlines() if line.strip()][-8:]
        found = [m for line in lines if (m := _VERDICT_LINE.search(line))]
        if not found:
            raise VerdictParseError("no 'Verdict: yes|no' line at the end of the reply")
        verdict.choice = found[-1].group(1).lower()

    def offline_verdict(self, inp, fmt, reasoning):
        # The offline model's heuristic: the 1-10 quality of the answer for this persona.
        choice = "yes" if quality(inp.sample.answer, inp.sample, inp.persona) >= 5 else "no"
        if fmt is not None:
            return fmt.model_validate({"reasoning": reasoning, "verdict": choice})
        return f"{reasoning}\nVerdict: {choice}"
