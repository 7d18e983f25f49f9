"""Pure functions for the maths of the scored memory systems (no state, no I/O).

MemoryBank (Zhong et al., AAAI 2024, arXiv 2305.10250)
    Ebbinghaus retention  R = exp(-t / S).  t: time since the memory was last recalled (or
    created), in days in the paper; S: memory strength, 1 when the memory is written, S += 1 on
    each recall, and a recall resets t to 0.

MemoryBank, released code (zhongwanjun/MemoryBank-SiliconFriend,
memory_bank/memory_retrieval/forget_memory.py, HEAD 3869efc "update memory forgetting mechanism")
    ``forgetting_curve(t, S)`` returns ``math.exp(-t / 5*S)``. Python reads that as
    exp((-t / 5) * S) = exp(-t * S / 5): time is scaled by 1/5 and, against the docstring's
    intent, a stronger memory decays *faster*. t is a whole number of calendar days
    (``(d2 - d1).days`` on '%Y-%m-%d' dates). Forgetting is a random draw, not a threshold: a
    memory is dropped for good when ``random.random() > R`` (kept with probability R); session
    summaries are not subject to the draw. Recall sets strength += 1 and last_recall_date = today.

Generative Agents (Park et al., UIST 2023, arXiv 2304.03442)
    recency = 0.995 ** (hours since last access); importance: an LLM rating 1-10 at write time;
    relevance: cosine(query, memory). Each component is min-max normalised to [0, 1] over the
    candidate set, then score = a*recency + b*importance + c*relevance (a = b = c = 1).

Hou, Tamoto & Miyashita, CHI EA 2024 ("My agent understands me better: integrating dynamic
human-like memory recall and consolidation in LLM-based agents")
    p_n(t) = (1 - exp(-r * exp(-t / g_n))) / (1 - exp(-1))
    r: relevance (cosine); t: time since the previous recall; g_0 = 1 and on each recall
    g_n = g_{n-1} + S(t), S(t) = (1 - exp(-t)) / (1 + exp(-t)) (= tanh(t/2)); a memory is
    recalled when p > k = 0.86. With t in units of 1e7 s the paper's Table 1 is reproduced
    within 0.001 (``hou_time_unit`` shows that no unit reproduces all four rows to the printed
    three decimals).

Hou et al., released code (tamoharu/Agent-Memory-CHI24, memory/utils/memory_model.py, core.py)
    The same two formulas, but t is a message counter (ids of stored messages), not seconds;
    each candidate (cosine >= 0.8) is consolidated with S(t) *before* its p is computed; no
    p > k test: the single most probable candidate is recalled and put in the prompt.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import datetime

DAY_S = 86_400.0
HOUR_S = 3_600.0


def elapsed(since: datetime, now: datetime, unit_s: float) -> float:
    """Time from ``since`` to ``now`` in units of ``unit_s`` seconds; never negative (a query
    dated before a memory's last recall counts as no time elapsed, not as negative time)."""
    return max(0.0, (now - since).total_seconds() / unit_s)


# --- MemoryBank ---------------------------------------------------------------------------
def memorybank_retention(t: float, strength: float) -> float:
    """R = exp(-t / S) (paper). ``t`` in the caller's unit (days in the paper), S >= 1."""
    if strength <= 0:
        raise ValueError("memory strength must be positive")
    return math.exp(-max(0.0, t) / strength)


def whole_days(since: datetime, now: datetime) -> int:
    """Calendar-day difference of the two dates, as the released code computes t."""
    return max(0, (now.date() - since.date()).days)


def memorybank_retention_released(days: int, strength: float) -> float:
    """The released code's ``math.exp(-t / 5*S)`` = exp(-t * S / 5), operator precedence kept."""
    return math.exp(-max(0, days) / 5 * strength)


def memorybank_released_forgets(days: int, strength: float, rng: random.Random) -> bool:
    """One forgetting draw as in the released code: forget when a uniform draw exceeds R."""
    return rng.random() > memorybank_retention_released(days, strength)


# --- Generative Agents --------------------------------------------------------------------
def ga_recency(hours: float, decay: float = 0.995) -> float:
    """decay ** hours since the memory was last accessed (paper: 0.995 per game hour)."""
    return decay ** max(0.0, hours)


def min_max(values: Sequence[float]) -> list[float]:
    """Min-max normalise to [0, 1]. A constant column (including a single candidate) maps to
    all 0: a component that does not separate the candidates adds no evidence to any of them.
    Any constant gives the same ranking (the reference code uses 0.5); 0 keeps the reported
    score equal to the sum of the components that did discriminate."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12:
        return [0.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


def ga_scores(
    recency: Sequence[float],
    importance: Sequence[float],
    relevance: Sequence[float],
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> list[float]:
    """score_i = a*norm(recency)_i + b*norm(importance)_i + c*norm(relevance)_i over the candidates."""
    if not (len(recency) == len(importance) == len(relevance)):
        raise ValueError("recency, importance and relevance must have one value per candidate")
    a, b, c = weights
    return [a * x + b * y + c * z for x, y, z in zip(min_max(recency), min_max(importance), min_max(relevance))]


# --- Hou et al. 2024 ----------------------------------------------------------------------
HOU_THRESHOLD = 0.86
HOU_TIME_UNIT_S = 1e7  # reproduces the paper's Table 1
_HOU_NORM = 1.0 - math.exp(-1.0)


def hou_recall_probability(r: float, t: float, g: float) -> float:
    """p(t) = (1 - exp(-r * exp(-t / g))) / (1 - exp(-1)); equals 1 at r = 1, t = 0."""
    if g <= 0:
        raise ValueError("consolidation g must be positive")
    return (1.0 - math.exp(-r * math.exp(-max(0.0, t) / g))) / _HOU_NORM


def hou_consolidation_step(t: float) -> float:
    """S(t) = (1 - exp(-t)) / (1 + exp(-t)): 0 at t = 0, tends to 1 for long intervals, so
    recalls spaced far apart consolidate a memory more than recalls in quick succession."""
    t = max(0.0, t)
    return (1.0 - math.exp(-t)) / (1.0 + math.exp(-t))


def hou_consolidate(g: float, t: float) -> float:
    """g_n = g_{n-1} + S(t), t: time since the previous recall."""
    return g + hou_consolidation_step(t)


def hou_time_unit(r: float, t: float, g: float, p: float) -> float | None:
    """The time unit u for which p(r, t/u, g) = p exactly (closed form; t in the caller's unit,
    e.g. seconds). None when no elapsed time gives p: p at or above its t = 0 value, or p <= 0."""
    inner = 1.0 - p * _HOU_NORM
    if not 0.0 < inner < 1.0 or r <= 0:
        return None
    decay = -math.log(inner) / r  # = exp(-x), x = t / (g u)
    if not 0.0 < decay < 1.0:
        return None
    return t / (g * -math.log(decay))


def hou_min_relevance(k: float = HOU_THRESHOLD) -> float:
    """The smallest r for which p can exceed k (at t = 0): r > -ln(1 - k (1 - e^-1)).
    About 0.784 for k = 0.86; memories less relevant than this are never recalled."""
    inner = 1.0 - k * _HOU_NORM
    return -math.log(inner) if inner > 0 else math.inf
