"""``--write-preset``: the best setting of a calibration as a preset YAML that ``evaluate
--preset`` (and a calibration's ``--setting name=FILE.yaml``) takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..evaluation.config import EvalConfig
from ..runs.files import atomic_write
from ..util.errors import ConfigError
from .records import CalibrationSummary

# What a preset carries: the judge (panel and model), not the endpoint, the cache or the task.
PRESET_KEYS = (
    "strategy",
    "turns",
    "personas",
    "framing",
    "aggregate",
    "swap",
    "summary_mode",
    "hold_scores",
    "aspects",
    "model",
    "temperature",
    "max_tokens",
    "seed",
    "structured",
)
ALWAYS = ("strategy", "turns", "personas")


def check_preset_path(path: str, *, overwrite: bool) -> Path:
    """Checked before anything runs: a .yaml/.yml file in an existing folder."""
    p = Path(path)
    if p.suffix not in (".yaml", ".yml"):
        raise ConfigError(f"--write-preset {path}: the file name must end in .yaml or .yml")
    if p.is_dir():
        raise ConfigError(f"--write-preset {path}: a folder is in the way")
    if not p.parent.is_dir():
        raise ConfigError(f"--write-preset {path}: folder {p.parent} does not exist")
    if p.exists() and not overwrite:
        raise ConfigError(f"--write-preset {path}: the file exists (--overwrite replaces it)")
    return p


def preset_of(config: dict[str, Any]) -> dict[str, Any]:
    """The preset keys of a resolved config: strategy, turns and personas always; the rest when
    they differ from EvalConfig's defaults."""
    defaults = EvalConfig().model_dump()
    out = {
        k: config[k] for k in PRESET_KEYS if config.get(k) is not None and (k in ALWAYS or config[k] != defaults.get(k))
    }
    if out.get("framing") == "none":  # the single-agent judge has no persona to name
        out.pop("personas", None)
    return out


def write_preset(path: Path, summary: CalibrationSummary) -> Path:
    best = summary.setting(summary.best or summary.baseline)
    metric = summary.primary_metric
    stat = best.agreement.get(metric)
    value = "undefined" if stat is None or stat.value is None else f"{stat.value:.3f}"
    head = (
        f"# Written by chateval calibrate: setting '{best.setting.name}' agreed best with the human labels of\n"
        f"# {summary.input} ({metric} {value} over {stat.n if stat else 0} items"
        f"{'; OFFLINE model: a pipeline check, not an LLM result' if summary.offline else ''}).\n"
        f"# {summary.conclusion}\n"
    )
    atomic_write(path, head + yaml.safe_dump(preset_of(best.config), sort_keys=False, allow_unicode=True))
    return path
