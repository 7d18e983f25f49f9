"""``--write-preset``: the recommended setting of a calibration as a preset YAML that ``evaluate
--preset`` (and a calibration's ``--setting name=FILE.yaml``) takes.

The preset is the judge the calibration measured, whole: every judge setting of the setting's
resolved config (escalation, early stopping, the endpoint, the prompt layout, persona and prompt
folders, plugins, ...), written explicitly rather than only where it differs from today's
defaults, so the preset judges as the sub-run did. The run's plumbing (the cache, connections,
retries, timeouts) and the task (the input fixes it) are left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..evaluation.config import EvalConfig
from ..runs.files import atomic_write
from ..util.errors import ConfigError
from ..util.secrets import MASK
from .records import CalibrationSummary

# Not the judge: what the run shares with every setting, and the task (fixed by the input).
PLUMBING = (
    "task",
    "cache",
    "cache_dir",
    "max_connections",
    "max_retries",
    "timeout_s",
    "retry_base_delay_s",
    "keep_raw_history",  # the older spelling of summary_mode, which is written
)
PATH_KEYS = ("persona_dirs", "prompt_dirs", "plugins")  # folders and .py files: absolute, to work from anywhere


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


def _absolute(value: str) -> str:
    p = Path(value)
    return str(p.resolve()) if p.exists() else value  # a module name stays a module name


def preset_of(config: dict[str, Any]) -> dict[str, Any]:
    """The judge settings of a resolved (public) config: every EvalConfig field but the plumbing,
    None values left out; the panel as its persona slugs (``agents`` their number), the
    single-agent setting (``framing: none``) as one agent without personas."""
    out: dict[str, Any] = {}
    for k in EvalConfig.model_fields:
        v = config.get(k)
        if k in PLUMBING or v is None or (k in PATH_KEYS and not v):
            continue
        out[k] = [_absolute(x) for x in v] if k in PATH_KEYS else v
    if out.get("framing") == "none":  # the single-agent judge has no persona to name
        out.pop("personas", None)
        out["agents"] = 1
    elif out.get("personas"):
        out["agents"] = len(out["personas"])
    return out


def write_preset(path: Path, summary: CalibrationSummary) -> Path:
    chosen = summary.setting(summary.recommended or summary.best or summary.baseline)
    metric = summary.primary_metric
    stat = chosen.agreement.get(metric)
    value = "undefined" if stat is None or stat.value is None else f"{stat.value:.3f}"
    head = (
        f"# Written by chateval calibrate: setting '{chosen.setting.name}' ({chosen.setting.spec()}), "
        f"recommended on\n# {summary.input} ({metric} {value} over {stat.n if stat else 0} items"
        f"{'; OFFLINE model: a pipeline check, not an LLM result' if summary.offline else ''}).\n"
        f"# {summary.recommendation or summary.conclusion}\n"
        "# Every judge setting of that sub-run is written out, so `evaluate --preset` judges as it did.\n"
    )
    body = yaml.safe_dump(preset_of(chosen.config), sort_keys=False, allow_unicode=True)
    if MASK in body:
        head += "# The endpoint carried credentials, masked here: put them back (or pass --base-url) before use.\n"
    atomic_write(path, head + body)
    return path
