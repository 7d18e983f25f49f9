"""The grid of judge settings a calibration compares: the default grid, ``--setting`` strings and
``--grid`` files, each resolved to an EvalConfig (and checked by building its Evaluator) before
anything runs.

``--setting NAME=SPEC``: SPEC is comma-separated; its first item may be a preset (a strategies/
name, a YAML file, or ``single``), the others are ``key=value`` EvalConfig settings. A list value
(personas) goes on after its key: ``panel=one_by_one_3x2,personas=critic,scientist,turns=3``;
so do a mixed panel's ``debater_models`` (``--debater-model``'s NAME[.FIELD]=VALUE items):
``mixed=one_by_one_3x2,debater_models=critic=anthropic/claude-3-5-haiku-latest,scientist=openai/gpt-4o-mini``.

``--grid FILE.yaml``: ``settings:`` as a list of ``{name, preset?, key: value...}`` or a mapping
``{name: {preset?, key: value...}}``.

``single`` is ChatEval's single-agent setting as ``bench faireval`` builds it: one agent, one
turn, no persona and no panel framing in its prompt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..bench.judge_meta.meta_settings import setting_overrides
from ..evaluation.config import EvalConfig, find_preset, load_preset
from ..util.errors import ConfigError
from ..util.options import merge_layers
from ..util.yamlfiles import load_mapping
from .records import CalibrationSetting

SINGLE = "single"
# ChatEval's single judge, its default panel, and the three strategies at 3 agents x 2 turns.
DEFAULT_GRID = (
    CalibrationSetting(name="single", preset=SINGLE),
    CalibrationSetting(name="chateval_default", preset="chateval_default"),
    CalibrationSetting(name="one_by_one_3x2", preset="one_by_one_3x2"),
    CalibrationSetting(name="simultaneous_3x2", preset="simultaneous_3x2"),
    CalibrationSetting(name="simultaneous_summarizer_3x2", preset="simultaneous_summarizer_3x2"),
)
# What a setting may change: the judge, not the task (the input fixes it), the run's plumbing
# (cache, connections, retries: shared by all settings) or plugins (loaded once).
SETTING_KEYS = tuple(
    k
    for k in EvalConfig.model_fields
    if k
    not in (
        "task",
        "plugins",
        "prompt_dirs",
        "cache",
        "cache_dir",
        "max_connections",
        "max_retries",
        "timeout_s",
        "retry_base_delay_s",
        "keep_raw_history",
    )
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def parse_setting(text: str) -> CalibrationSetting:
    """``NAME=PRESET,key=value,...`` -> a CalibrationSetting (ConfigError naming the string)."""
    where = f"--setting '{text}'"
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not spec.strip():
        raise ConfigError(f"{where}: expected NAME=PRESET or NAME=key=value,... (e.g. big=one_by_one_3x2,turns=3)")
    preset: str | None = None
    overrides: dict[str, Any] = {}
    current: str | None = None
    for i, item in enumerate(p.strip() for p in spec.split(",")):
        if not item:
            raise ConfigError(f"{where}: an empty item")
        key, eq, raw = item.partition("=")
        if eq and current == "debater_models" and key.strip().replace("-", "_") not in SETTING_KEYS:
            overrides[current].append(item)  # another debater's NAME[.FIELD]=VALUE
        elif eq:
            current = key.strip().replace("-", "_")
            if current in overrides:
                raise ConfigError(f"{where}: '{current}' is given twice")
            listed = current in ("personas", "aspects", "persona_dirs", "debater_models")
            overrides[current] = [raw.strip()] if listed else _value(raw)
        elif i == 0:
            preset = item
        elif current in ("personas", "aspects", "persona_dirs"):
            overrides[current].append(item)
        else:
            raise ConfigError(f"{where}: '{item}' is not key=value (only the first item may name a preset)")
    return check_setting(CalibrationSetting(name=name, preset=preset, overrides=overrides), where)


def check_setting(s: CalibrationSetting, where: str) -> CalibrationSetting:
    if not _NAME.match(s.name):
        raise ConfigError(
            f"{where}: setting name '{s.name}' must be letters, digits, '_', '.' or '-' (it names the sub-run's folder)"
        )
    bad = [k for k in s.overrides if k not in SETTING_KEYS]
    if bad:
        hint = " (the input fixes the task)" if bad[0] == "task" else ""
        raise ConfigError(f"{where}: '{bad[0]}' is not a judge setting{hint} (known: {', '.join(SETTING_KEYS)})")
    return s


def load_grid(path: str | Path) -> list[CalibrationSetting]:
    """The settings of a --grid YAML/JSON file."""
    data = load_mapping(Path(path), "grid")
    unknown = sorted(set(data) - {"settings"})
    if unknown:
        raise ConfigError(f"{path}: unknown key '{unknown[0]}' (a grid file has 'settings')")
    raw = data.get("settings")
    if isinstance(raw, dict):
        raw = [
            {"name": k, **(v or {})} if isinstance(v, (dict, type(None))) else {"name": k, "preset": v}
            for k, v in raw.items()
        ]
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            f"{path}: 'settings' must be a non-empty list of {{name, preset, key: value}} "
            "or a mapping name -> {preset, key: value}"
        )
    out = []
    for i, entry in enumerate(raw):
        where = f"{path}: settings[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(entry).__name__}")
        entry = {str(k).replace("-", "_"): v for k, v in entry.items()}
        name = entry.pop("name", None)
        if not isinstance(name, str):
            raise ConfigError(f"{where}: 'name' missing (it names the sub-run's folder)")
        preset = entry.pop("preset", None)
        if preset is not None and not isinstance(preset, str):
            raise ConfigError(f"{where}: 'preset' must be a name or a file")
        where = f"{path}: setting '{name}'"
        out.append(check_setting(CalibrationSetting(name=name, preset=preset, overrides=entry), where))
    return out


def with_baseline(settings: list[CalibrationSetting], baseline: str) -> list[CalibrationSetting]:
    """The grid, checked for unique names, with the baseline in it (the single judge is added
    first when the grid lacks it and it is the baseline)."""
    names = [s.name for s in settings]
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup:
        raise ConfigError(f"setting '{dup}' is given twice (each setting names its own sub-run)")
    if baseline not in names:
        if baseline != SINGLE:
            raise ConfigError(f"--baseline '{baseline}': no setting has that name (settings: {', '.join(names)})")
        settings = [DEFAULT_GRID[0], *settings]
    return settings


def resolve(s: CalibrationSetting, base: EvalConfig, where: str) -> EvalConfig:
    """The EvalConfig of a setting: the base (command-line) settings, then its preset, then its
    own values (errors name the setting)."""
    if s.preset == SINGLE:
        preset = setting_overrides(base, SINGLE)  # the same single judge as `bench faireval`'s row
    elif s.preset:
        try:
            preset = load_preset(find_preset(s.preset))
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        preset.pop("task", None)  # the input fixes the task
    else:
        preset = {}
    try:
        return merge_layers(EvalConfig, base.model_dump(), preset, s.overrides)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
