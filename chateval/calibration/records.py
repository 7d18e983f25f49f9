"""The records of a calibration run, written and read in one place: the settings asked for, each
setting's agreement with the human reference (with intervals), its cost per item and its paired
difference from the baseline (the single judge), and the run's summary. ``read_calibration``
is what the report, the viewer and a user's notebook read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from ..paired import PairedDifference
from ..records.run import read_run
from ..runs.directory import write_summary_file
from ..runs.envelope import check
from ..util.errors import InputError

FORMAT_VERSION = 1
SUMMARY = "summary.json"
KIND: Literal["calibration"] = "calibration"


class CalibrationSetting(BaseModel):
    """One judge setting of the grid: a preset (a strategies/ name, a YAML file, or ``single``)
    and EvalConfig overrides on top of it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    preset: str | None = None
    overrides: dict[str, Any] = Field(default_factory=dict)

    def spec(self) -> str:
        """The setting as ``--setting`` spells it."""
        parts = [self.preset] if self.preset else []
        for k, v in self.overrides.items():
            parts.append(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")
        return f"{self.name}={','.join(parts)}"


class Stat(BaseModel):
    """A statistic with its 95% percentile-bootstrap interval over items (value None = undefined)."""

    value: float | None
    ci95: list[float] | None = None
    n: int = 0
    reason: str | None = None


class Panel(BaseModel):
    """The judge a setting resolved to."""

    model: str
    strategy: str
    agents: int
    turns: int
    personas: list[str]
    aggregate: str
    swap: bool


class PerItem(BaseModel):
    """Cost per judged item: model calls (answered + from the cache: what the judge needs), tokens
    (prompt + completion, cached ones included) and USD (None when a price is unknown; cache hits
    at the price they had when answered, so the cost does not depend on which setting ran first)."""

    calls: float
    tokens: float
    cost_usd: float | None
    tokens_approx: bool = False


class SettingResult(BaseModel):
    setting: CalibrationSetting
    run_dir: str  # relative to the calibration directory
    panel: Panel
    config: dict[str, Any]  # the resolved EvalConfig (public form): what --write-preset writes
    n_items: int
    n_ok: int
    n_failed: int
    complete: bool
    agreement: dict[str, Stat]  # accuracy, kappa | spearman, kendall
    usage: dict[str, Any]  # the sub-run's UsageTotals
    per_item: PerItem
    # The paired difference (this setting minus the baseline) per metric: chateval.paired's record.
    vs_baseline: dict[str, PairedDifference] = Field(default_factory=dict)
    wall_time_s: float = 0.0
    # A setting with samples > 1: how far its repeats agree, and each repeat's agreement with the
    # labels (run-to-run variance); the sub-run's summary.json self_consistency.
    self_consistency: dict[str, Any] | None = None


class Ceiling(BaseModel):
    """The annotators' agreement with each other (leave-one-out; see chateval.stats.labels)."""

    n_items: int  # items with two or more annotators
    n_pairs: int  # (item, annotator) pairs
    agreement: dict[str, Stat]
    # Chance-corrected agreement of all the annotators at once: krippendorff_alpha, fleiss_kappa
    # (chateval.calibration.multirater); a value None says why in its reason.
    multi_rater: dict[str, Stat] = Field(default_factory=dict)


class CalibrationSummary(BaseModel):
    format_version: int = FORMAT_VERSION
    kind: Literal["calibration"] = KIND
    input: str
    input_format: Literal["evaluate", "faireval", "topical-chat"]
    task: str  # a registered task format (a plugin's too)
    n_items: int
    n_reference: int  # items with a usable human reference
    n_multi_annotated: int
    n_clusters: int | None = None  # when items name a cluster: every bootstrap and paired test draws clusters whole
    model: str
    offline: bool
    note: str | None = None
    primary_metric: str  # what "agrees best" means: kappa (labels) or spearman (scores)
    baseline: str
    settings: dict[str, SettingResult]  # by name, in grid order (the viewer reads each one's panel)
    ceiling: Ceiling | None = None
    # Every pair of settings' agreement with each other on the items both judged: Cohen's kappa
    # (labels) or Spearman's rho averaged over aspects (scores); judge_agreement_metric says which.
    judge_agreement: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    judge_agreement_metric: str | None = None
    best: str | None = None  # the highest primary metric (an exact tie: the cheaper setting)
    # The answer (chateval.calibration.recommend): the cheapest of the settings statistically
    # indistinguishable from the best (their paired difference from it has p >= 0.05), the
    # paired difference of every other setting from the best (primary metric), the settings no
    # other one beats on both cost and agreement, and the sentence the report opens with.
    recommended: str | None = None
    indistinguishable: list[str] = Field(default_factory=list)  # the best's statistical ties, cheapest first
    vs_best: dict[str, PairedDifference] = Field(default_factory=dict)
    pareto: list[str] = Field(default_factory=list)  # cheapest first
    recommendation: str = ""
    beats_baseline: bool | None = None  # best's primary-metric difference from the baseline is significant and > 0
    conclusion: str = ""
    resamples: int
    seed: int
    complete: bool
    wall_time_s: float = 0.0
    headline: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def comparisons(self) -> list[PairedDifference]:
        """Every paired difference, as the other summaries list them (chateval.paired.read_comparisons)."""
        return [d for r in self.settings.values() for d in r.vs_baseline.values()]

    def setting(self, name: str) -> SettingResult:
        return self.settings[name]


def write_calibration(out: str | Path, summary: CalibrationSummary) -> Path:
    path = Path(out) / SUMMARY
    write_summary_file(path, summary.model_dump(mode="json"))
    return path


def read_calibration(out: str | Path) -> CalibrationSummary:
    """A calibration directory's summary as the typed record (one-line error when it is not one)."""
    path = Path(out)
    if not path.is_dir() and path.name == SUMMARY:
        path = path.parent  # its summary.json named
    run = read_run(path, samples=False, subruns=False)
    if run.summary is None or run.kind != "calibrate":
        raise InputError(f'{path / SUMMARY}: not a calibration summary (no "kind": "{KIND}")')
    return check(CalibrationSummary, run.summary.data(), str(path / SUMMARY))


def is_calibration(path: str | Path) -> bool:
    try:
        data = json.loads((Path(path) / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("kind") == KIND
