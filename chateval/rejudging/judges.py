"""The judges a graded set is scored under.

- ``recorded``: the verdicts in the file (per item: the share of runs that accepted it; the
  item's verdict is the majority of its runs, a tie counting as not accepted). A file with
  several recorded judges (a bench run's single and debate judges) gives one column each,
  ``recorded:<judge>``; ``recorded:<judge>`` picks one.
- ``f1``: LoCoMo's official answer F1 (chateval.bench.locomo.metrics); the item's verdict is
  F1 >= the threshold. Offline: no model.
- ``official``: our LongMemEval/LoCoMo-style single judge (a yes/no reply; chateval.bench.judge).
- ``panel``: a debate preset (default chateval_default, the ChatEval panel) on the correctness task;
  ``preset:NAME`` any other preset.
- ``template:PATH``: a judge prompt template the user supplies (Jinja; sees question, gold,
  response, question_type); its sha256 goes into the run's config. Its reply is accepted when
  it says yes / correct / true (or JSON with such a label).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ..bench.locomo.metrics import locomo_f1, token_f1
from ..util.errors import ConfigError
from .sets import GradedItem

Kind = Literal["recorded", "f1", "official", "panel", "template"]
OFFLINE_KINDS = ("recorded", "f1")


class JudgeSpec(BaseModel):
    name: str  # the column label ("recorded", "f1", "official", "panel", "preset:x", "template:y")
    kind: Kind
    preset: str | None = None  # panel
    template: str | None = None  # template: the file
    template_sha256: str | None = None
    recorded: str | None = None  # recorded: the judge name in the file (None: every one)

    @property
    def offline(self) -> bool:
        """Scored from the file alone (no model)."""
        return self.kind in OFFLINE_KINDS

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name).strip("_") or "judge"


def parse_judge(text: str) -> JudgeSpec:
    t = text.strip()
    if t == "recorded" or t.startswith("recorded:"):
        return JudgeSpec(name=t, kind="recorded", recorded=t.partition(":")[2] or None)
    if t == "f1":
        return JudgeSpec(name="f1", kind="f1")
    if t == "official":
        return JudgeSpec(name="official", kind="official")
    if t == "panel":
        return JudgeSpec(name="panel", kind="panel", preset="chateval_default")
    if t.startswith("preset:") and t[7:]:
        return JudgeSpec(name=t, kind="panel", preset=t[7:])
    if t.startswith("template:") and t[9:]:
        path = Path(t[9:])
        try:
            raw = path.read_bytes()
            raw.decode("utf-8")
        except OSError as e:
            raise ConfigError(f"--judges {t}: cannot read the template ({e.strerror or e})") from None
        except UnicodeDecodeError:
            raise ConfigError(f"--judges {t}: the template is not UTF-8 text") from None
        return JudgeSpec(
            name=f"template:{path.stem}",
            kind="template",
            template=str(path),
            template_sha256=hashlib.sha256(raw).hexdigest(),
        )
    raise ConfigError(
        f"--judges: unknown judge '{t}' (recorded, recorded:NAME, f1, official, panel, preset:NAME, template:PATH)"
    )


def parse_judges(values: list[str]) -> list[JudgeSpec]:
    specs = [parse_judge(x) for v in values for x in v.split(",") if x.strip()]
    if not specs:
        raise ConfigError("--judges: give at least one judge")
    names = [s.name for s in specs]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise ConfigError(f"--judges: '{dup}' given twice")
    return specs


class ItemScore(BaseModel):
    """One item under one judge: ``value`` is its per-item score (recorded: the share of runs
    that accepted it; f1: the F1; an LLM judge: 0/1), ``accepted`` its verdict."""

    value: float | None
    accepted: bool | None
    runs: dict[str, bool] | None = None  # recorded: run -> verdict


def recorded_names(items: list[GradedItem]) -> list[str]:
    return list(dict.fromkeys(v.judge for it in items for v in it.verdicts))


def score_recorded(item: GradedItem, judge: str | None) -> ItemScore:
    runs = {v.run: v.accepted for v in item.verdicts if judge is None or v.judge == judge}
    if not runs:
        return ItemScore(value=None, accepted=None)
    yes = sum(runs.values())
    return ItemScore(value=yes / len(runs), accepted=2 * yes > len(runs), runs=runs)


def score_f1(item: GradedItem, gold: str, threshold: float) -> ItemScore:
    cat = item.category
    f = locomo_f1(int(cat), item.answer, gold) if cat is not None and cat.isdigit() else token_f1(item.answer, gold)
    return ItemScore(value=f, accepted=f >= threshold)


_YES = re.compile(r"\b(yes|correct|true|accept(ed)?)\b", re.I)
_NO = re.compile(r"\b(no|incorrect|wrong|false|reject(ed)?)\b", re.I)


def read_reply(text: str) -> bool | None:
    """A template judge's verdict from its reply: JSON with a label/verdict/correct field, else
    the first yes/correct/true or no/incorrect/wrong/false word; None when it says neither."""
    s = text.strip()
    m = re.search(r"\{.*\}", s, re.S)
    if m:
        try:
            data = json.loads(m.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict):
            for key in ("correct", "label", "verdict", "judgment", "answer"):
                v = data.get(key)
                if isinstance(v, bool):
                    return v
                if isinstance(v, str):
                    return read_reply(v)
    yes, no = _YES.search(s), _NO.search(s)
    if yes and (not no or yes.start() < no.start()):
        return True
    if no:
        return False
    return None
