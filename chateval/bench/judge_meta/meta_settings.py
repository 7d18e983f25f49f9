"""The judge meta-evaluation benchmarks' settings and sweeps: which panels to run, and each
one's overrides of the base judge configuration.

Settings. ``multi`` is the panel as configured (by default ChatEval's: one_by_one, 2 agents —
General Public and Critic —, 2 turns; --preset/--strategy/--agents/--turns/--personas change it).
``single`` is ChatEval's single-agent setting: one judge, one turn, no persona or panel framing
(``framing: none``). A sweep varies one dimension of ``multi``: ``agents=1,2,3`` /
``turns=1,2,3`` / ``strategy=a,b`` / ``personas=diverse,same`` (diverse: the panel's personas,
ChatEval's roles by default; same: the ``annotator`` persona for every agent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ...debate.samples import Sample
from ...evaluation.config import DEFAULT_PERSONAS, EvalConfig
from ...util.errors import ConfigError
from ..config import JudgeMetaConfig
from .sweeps import parse_sweep

SETTINGS: tuple[Literal["single", "multi"], ...] = ("single", "multi")
ESCALATE_SETTING = "multi-escalate"  # with --escalate: multi screened by the single judge
SAME_PERSONA = "annotator"
SINGLE_JUDGE = {"agents": 1, "turns": 1, "framing": "none"}  # ChatEval's single-agent setting


@dataclass
class Item:
    key: str
    sample: Sample
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Setting:
    name: str  # directory name and table label: single, multi, agents-3, strategy-simultaneous
    overrides: dict[str, Any]
    dim: str | None = None
    value: Any = None
    run_dir: str = ""  # the sub-run holding its results (another setting's, when they coincide)
    config: EvalConfig | None = None

    @property
    def label(self) -> str:
        return self.name if self.dim is None else f"{self.dim}={self.value}"


def panel_size(cfg: EvalConfig) -> int:
    return cfg.agents or (len(cfg.personas) if cfg.personas else 2)


def setting_overrides(base: EvalConfig, name: str, dim: str | None = None, value: Any = None) -> dict[str, Any]:
    if name == "single":
        # One agent, one turn: nothing to escalate to and no round to skip.
        return dict(SINGLE_JUDGE) | {"escalate": False, "stop_early": False}
    if name == ESCALATE_SETTING:
        return {"escalate": True}
    if dim is None:
        return {}
    if dim in ("agents", "turns", "strategy"):
        return {dim: value}
    n = panel_size(base)
    if value == "same":
        return {"agents": n, "personas": [SAME_PERSONA] * n}
    return {"agents": n, "personas": base.personas or DEFAULT_PERSONAS[:n]}


def plan(config: JudgeMetaConfig, base: EvalConfig) -> tuple[list[Setting], dict[str, list[Setting]]]:
    """The settings to run (named ones first, then each sweep's points) and the sweeps."""
    sweeps_raw = [parse_sweep(s) for s in config.sweep]
    dims = [d for d, _ in sweeps_raw]
    if len(set(dims)) != len(dims):
        raise ConfigError("--sweep: each dimension may be swept once per command")
    names = config.setting or ([] if sweeps_raw else list(SETTINGS))
    settings = [Setting(n, setting_overrides(base, n)) for n in dict.fromkeys(names)]
    if base.escalate and "multi" in names:
        # --escalate: the panel alone (multi) and the escalated panel side by side, so the
        # report pairs their agreement with the humans item by item (the cache makes the second
        # nearly free: its single-judge and panel calls repeat the other settings').
        settings = [s if s.name != "multi" else Setting("multi", {"escalate": False}) for s in settings]
        settings.append(Setting(ESCALATE_SETTING, setting_overrides(base, ESCALATE_SETTING)))
    sweeps: dict[str, list[Setting]] = {}
    for dim, values in sweeps_raw:
        sweeps[dim] = [Setting(f"{dim}-{v}", setting_overrides(base, "multi", dim, v), dim, v) for v in values]
    return settings, sweeps
