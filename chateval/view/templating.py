"""The viewer's Jinja environment: autoescaping on (every record's text is escaped), the filters
and helpers its templates use."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from jinja2 import Environment, PackageLoader, Undefined, select_autoescape

from .format import headline_table, money, num
from .protocol import card_table, card_warnings
from .samples import anchor, card


@functools.cache  # compiled once per process: the server renders a chunk per request
def template_env() -> Environment:
    env = Environment(
        loader=PackageLoader("chateval.view", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = pretty
    env.filters["num"] = _num
    env.filters["fmt"] = num
    env.globals.update(
        anchor=anchor, card=card, pct=_pct, ci=_ci, headline_table=headline_table, money=money, rate=_is_rate
    )
    env.globals.update(protocol_card=card_table, protocol_warnings=card_warnings)
    # Row helpers in Python: Jinja's select filters cost ~0.2 ms a call, a third of a large page's time.
    env.globals.update(nested=_nested, any_gold=_any_gold, first_sample=_first_sample)
    return env


def _nested(v: Any) -> bool:
    """A mapping that holds a mapping: shown as a table of tables."""
    return isinstance(v, Mapping) and any(isinstance(x, Mapping) for x in v.values())


def _any_gold(lines: list[tuple[str, bool]]) -> bool:
    return any(gold for _, gold in lines)


def _first_sample(cells: list[list[Any]]) -> Any:
    """A row's first sample (of the first run that has the question)."""
    return next(samples for samples in cells if samples)[0]


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: Any) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}%, {100 * ci[1]:.1f}%]"


def pretty(v: Any) -> str:
    if isinstance(v, Undefined) or v is None:
        return "–"
    return v if isinstance(v, str) else json.dumps(v, indent=1, ensure_ascii=False)


def _is_rate(key: str) -> bool:
    """Summary numbers shown as percentages (the terminal's way); kappa and scores are not rates."""
    return key in {"accuracy", "majority_baseline", "chance", "order_disagreement_rate"}


def _num(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "–" if v is None else str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
