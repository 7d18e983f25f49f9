"""What the judge meta-evaluation benchmarks (FairEval, Topical-Chat) share: command-line
options, one resumable run directory per setting (the settings and sweeps themselves are in
meta_settings.py, the tables and plots that compare them, ChatEval Tables 1-4 and Figure 3, in
report.py).

Layout of --out: one sub-run per setting (``OUT/single``, ``OUT/multi``, ``OUT/agents-3``,
``OUT/strategy-simultaneous``, ...), each a normal run directory (config.json, samples.jsonl,
summary.json, report.md) that --resume continues on its own. Two settings that resolve to the
same judge (e.g. ``agents-2`` and ``turns-2``) share one sub-run. ``OUT/summary.json`` and
``OUT/report.md`` (+ PNG plots) compare them.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from ...debate.panel import JudgeResult
from ...evaluation.config import EvalConfig, config_hash, find_preset, load_preset
from ...evaluation.judges import Judges
from ...evaluation.summary import OFFLINE_NOTE, JudgedTotals
from ...models.prices import apply_price_specs
from ...paired import PairedDifference, dump_comparisons
from ...runs.directory import RunDir, merge_accounts, write_summary_file
from ...runs.folder import RunLock, check_top_folder, clear_top_report
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from ..base import Benchmark, run_units
from ..comparisons import setting_pairs
from ..config import JudgeMetaConfig
from ..records import JudgeItemRecord, SettingsSummary, SettingSummary
from ..selection import select
from ..summaries import records_of
from .meta_settings import ESCALATE_SETTING, Item, Setting, plan
from .plots import Chart
from .report import OFFLINE_JUDGE, write_report, write_setting_report
from .sweeps import SWEEP_DIMS, parse_sweep  # noqa: F401  (SWEEP_DIMS, parse_sweep re-exported)

META_MAX_TOKENS = 512  # ChatEval's completion limit per judge call (its configs' max_tokens)
# Bumped when the way samples are built from the data changes, so --resume refuses old runs.
SAMPLE_FORMAT = 1
# What every judge meta-benchmark's reports read of a unit's record (a failed one's error, listed).
VIEW_FIELDS = ("key", "status", "error")


# --- the benchmark base class ---------------------------------------------------------------
class JudgeMetaBenchmark(Benchmark):
    """A dataset of human-labelled items judged under one or more panel settings."""

    task: ClassVar[str]
    title: ClassVar[str]
    config_model: ClassVar[type[JudgeMetaConfig]] = JudgeMetaConfig
    distributable = True  # each item is judged on its own
    data_path: Path | None = None  # the data actually read (--data, or the default folder)
    swap_default: ClassVar[bool] = False
    record_type, summary_type, setting_summary_type = JudgeItemRecord, SettingsSummary, SettingSummary

    # -- hooks --
    @abstractmethod
    def load(self, config: JudgeMetaConfig) -> list[Item]: ...

    @abstractmethod
    def unit_record(self, item: Item, result: JudgeResult) -> dict[str, Any]: ...

    async def judge_item(self, judges: Judges, item: Item) -> dict[str, Any]:
        """One unit of samples.jsonl: by default one debate over the item's sample."""
        return self.unit_record(item, await judges.judge(item.sample))

    def view(self, record: dict[str, Any]) -> dict[str, Any]:
        """What the metrics, comparisons, reports and plots read of a unit's record (issue 38
        item 3): a setting's records are read once from samples.jsonl and only this much of each
        is kept (no debate transcripts, prompts, reasons or per-call usage; the usage and the
        panel's counts are summed as they stream by, in ``JudgedTotals``)."""
        return {k: record[k] for k in VIEW_FIELDS if k in record}

    @abstractmethod
    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """The benchmark's agreement metrics over one setting's records (their views)."""

    @abstractmethod
    def metric_headers(self) -> list[str]: ...

    @abstractmethod
    def metric_cells(self, metrics: dict[str, Any]) -> list[str]: ...

    @abstractmethod
    def charts(self, summaries: Sequence[dict[str, Any]]) -> list[Chart]:
        """The comparison figures over these settings, one per unit (e.g. accuracy in %, and
        kappa on its own axis), with one value per summary in each series."""

    def base_defaults(self, config: JudgeMetaConfig) -> dict[str, Any]:
        # Free-text verdicts ending in score lines, as ChatEval parses them (its unreadable-reply
        # rule then applies as in its code); --structured auto/on (or a preset) asks for JSON.
        return {"task": self.task, "swap": self.swap_default, "max_tokens": META_MAX_TOKENS, "structured": "off"}

    def data_config(self, config: JudgeMetaConfig) -> dict[str, Any]:
        """Benchmark-level settings that change results (hashed into every sub-run)."""
        return {}

    def setting_report(self, path: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
        """Extra report.md lines for one sub-run (and any plots it writes into ``path``)."""
        return []

    def extra_sections(self, out: Path, summary: dict[str, Any]) -> list[str]:
        """Extra top-level report sections (e.g. baselines) placed before the settings table."""
        return []

    def header_lines(self, summary: dict[str, Any]) -> list[str]:
        return []

    async def before_settings(
        self, config: JudgeMetaConfig, items: list[Item], out: Path, progress: RunProgress | None
    ) -> dict[str, Any]:
        """Work before the judge runs (e.g. offline baselines); returns summary additions."""
        return {}

    def judges(self, config: JudgeMetaConfig) -> bool:
        return True

    def compare_settings(
        self, names: tuple[str, str], records_a: list[dict[str, Any]], records_b: list[dict[str, Any]]
    ) -> list[PairedDifference]:
        """Paired differences of two settings' agreement with the humans on the same items."""
        return []

    def item_type(self, item: Item) -> str:
        """What --per-type groups by (a category)."""
        return str(item.meta.get("category") or "all")

    # -- the run --
    async def run(self, config: JudgeMetaConfig, progress: RunProgress | None) -> dict[str, Any]:
        items = select(self.load(config), config, key=lambda it: it.key, kind=self.item_type)
        out = Path(config.out)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"{out}: --out must be a directory")
        apply_price_specs(config.price)
        preset = load_preset(find_preset(config.preset)) if config.preset else {}
        base = EvalConfig.merged(self.base_defaults(config), preset, config.panel_settings(), {"task": self.task})
        if base.swap and self.task != "pairwise":
            raise ConfigError(f"--swap applies only to pairwise judging (FairEval), not to {self.name}")
        settings, sweeps = plan(config, base) if self.judges(config) else ([], {})
        everything = settings + [s for pts in sweeps.values() for s in pts]
        judges = self._build(base, everything)  # bad personas/strategies fail here, before any call
        distinct = _dedupe(everything, judges)
        self._check_dirs(out, [s.run_dir for s in distinct] + self.extra_dirs(config), config)
        check_top_folder(out)
        with RunLock(out):  # sub-runs lock themselves; this keeps a second process off the top level
            if config.overwrite and not config.resume:
                clear_top_report(out)
            return await self._run_all(config, items, out, settings, sweeps, judges, distinct, progress)

    async def _run_all(
        self,
        config: JudgeMetaConfig,
        items: list[Item],
        out: Path,
        settings: list[Setting],
        sweeps: dict[str, list[Setting]],
        judges: dict[str, Judges],
        distinct: list[Setting],
        progress: RunProgress | None,
    ) -> dict[str, Any]:

        summary: dict[str, Any] = {
            "benchmark": self.name,
            "data": str(self.data_path or config.data),
            "n_items": len(items),
        }
        layer = judges[distinct[0].name].layer if distinct else None
        try:
            summary |= await self.before_settings(config, items, out, progress)
            results: dict[str, dict[str, Any]] = {}
            self.setting_records: dict[str, list[dict[str, Any]]] = {}  # filled by _run_setting, per sub-run
            for s in distinct:
                setting_judges = judges[s.name]
                if progress:
                    progress.totals = setting_judges.layer.totals
                    progress.label = s.name
                results[s.run_dir] = await self._run_setting(
                    setting_judges, s, items, out / s.run_dir, config, progress
                )
        finally:
            if layer is not None:
                await layer.close()
        summary |= {
            "model": layer.label if layer else None,
            "offline": bool(layer and layer.spec.is_offline),
            "settings": {s.name: results[s.run_dir] for s in settings},
            "sweeps": {
                dim: [{"value": s.value, "setting": s.name, "run_dir": s.run_dir, **results[s.run_dir]} for s in pts]
                for dim, pts in sweeps.items()
            },
            "runs": {d: r for d, r in results.items()},
        }
        run_of: dict[str, str] = {}  # setting name -> its sub-run, named settings first
        for s in settings + [s for pts in sweeps.values() for s in pts]:
            run_of.setdefault(s.name, s.run_dir)
        comparisons: list[PairedDifference] = []
        pairs = setting_pairs(list(run_of), list(run_of.values()))
        if ESCALATE_SETTING in run_of and "multi" in run_of and (ESCALATE_SETTING, "multi") not in pairs:
            pairs.append((ESCALATE_SETTING, "multi"))  # what escalation costs in agreement, paired
        for a, b in pairs:
            comparisons += self.compare_settings(
                (a, b), self.setting_records[run_of[a]], self.setting_records[run_of[b]]
            )
        summary["comparisons"] = dump_comparisons(comparisons)
        summary["n_units"] = sum(r["n_units"] for r in results.values()) + summary.get("n_baseline_units", 0)
        summary["n_failed"] = sum(r["n_failed"] for r in results.values())
        # Every sub-run's accounting, summed: the whole benchmark is complete only if each is.
        summary |= merge_accounts([*results.values(), *([summary["baselines"]] if summary.get("baselines") else [])])
        summary["complete"] = all(r["complete"] for r in results.values()) and summary["n_missing"] == 0
        # Each sub-run reports the wall time of all its attempts; the settings run one after another.
        summary["wall_time_s"] = sum(r["wall_time_s"] for r in results.values()) + (summary.get("baselines") or {}).get(
            "wall_time_s", 0.0
        )
        if summary["offline"]:
            summary["note"] = OFFLINE_NOTE
        write_summary_file(out / "summary.json", summary, self.summary_type)
        write_report(self, out, summary, settings, sweeps)
        return summary

    def extra_dirs(self, config: JudgeMetaConfig) -> list[str]:
        return []

    def _build(self, base: EvalConfig, settings: list[Setting]) -> dict[str, Judges]:
        """Each setting's judges, built from the base panel with the setting's overrides."""
        out: dict[str, Judges] = {}
        layer = None
        for s in settings:
            s.config = EvalConfig.merged(base.model_dump(), s.overrides)
            # One model layer for every setting: one cache, one concurrency limit, one meter.
            out[s.name] = Judges(s.config, layer=layer)
            layer = out[s.name].layer
        return out

    def _check_dirs(self, out: Path, dirs: list[str], config: JudgeMetaConfig) -> None:
        if config.resume or config.overwrite:
            return
        taken = [d for d in dirs if (out / d / "config.json").exists() or (out / d / "samples.jsonl").exists()]
        if taken:
            raise ConfigError(
                f"{out / taken[0]}: already holds a run; use --resume to continue it, "
                "--overwrite to replace it, or choose another --out"
            )

    def run_config(self, judges: Judges, setting: Setting, config: JudgeMetaConfig) -> dict[str, Any]:
        """config.json of one setting's sub-run."""
        panel = judges.run_config()
        judging = panel["judging"] | {"benchmark": self.name, "sample_format": SAMPLE_FORMAT} | self.data_config(config)
        return panel | {
            "judging": judging,
            "config_hash": config_hash(judging),
            "benchmark": self.name,
            "setting": setting.name,
            "data": str(self.data_path or config.data),
        }

    async def _run_setting(
        self,
        judges: Judges,
        setting: Setting,
        items: list[Item],
        path: Path,
        config: JudgeMetaConfig,
        progress: RunProgress | None,
    ) -> dict[str, Any]:
        run_config = self.run_config(judges, setting, config)

        async def unit(item: Item) -> dict[str, Any]:
            return await self.judge_item(judges, item)

        with RunDir(
            path,
            run_config,
            resume=config.resume,
            overwrite=config.overwrite,
            key="key",
            record_type=self.record_type,
            summary_type=self.setting_summary_type,
        ) as run:
            keys = [it.key for it in items]
            try:
                await run_units(
                    [(it.key, it) for it in items], unit, run, workers=config.workers, progress=progress, keep=None
                )
            finally:
                # One pass over samples.jsonl: each record's usage and counts summed, its view kept.
                totals, views = JudgedTotals(), []
                for r in records_of(run, keys):
                    totals.add(r)
                    views.append(self.view(r))
                self.setting_records[setting.run_dir] = views
                summary = self._setting_summary(judges, setting, totals, views, len(items), run_config)
                run.write_summary(summary)  # adds the wall time of every attempt
            write_setting_report(self, path, summary, views)
        return summary

    def _setting_summary(
        self,
        judges: Judges,
        setting: Setting,
        totals: JudgedTotals,
        records: list[dict[str, Any]],
        n_items: int,
        run_config: dict[str, Any],
    ) -> dict[str, Any]:
        base = totals.summary(task=self.task, model=judges.layer.label, offline=judges.is_offline)
        cfg = judges.config
        out = {
            "setting": setting.name,
            "run_dir": setting.run_dir,
            "model": judges.layer.label,
            "offline": judges.is_offline,
            "judge": OFFLINE_JUDGE if judges.is_offline else judges.layer.label,
            "panel": {
                "strategy": cfg.strategy,
                "agents": len(judges.personas),
                "turns": cfg.turns,
                "personas": [p.slug for p in judges.personas],
                "swap": cfg.swap,
                "escalate": cfg.escalate,
                "stop_early": cfg.stop_early,
                "aggregate": judges.panel(cfg.task).aggregate,
            },
            "n_units": n_items,
            "n_done": len(records),
            "n_ok": base["n_ok"],
            "n_failed": base["n_failed"],
            "failed_ids": base["failed_ids"],
            "complete": len(records) == n_items and base["n_failed"] == 0,
            "agent_verdicts": base["agent_verdicts"],
            "parse_errors": base["parse_errors"],
            "reasked": base["reasked"],
            "usage": base["usage"],
            "mean_latency_s": base["mean_latency_s"],
            "config_hash": run_config["config_hash"],
            "metrics": self.metrics(records),
        }
        for k in ("verdicts", "order_disagreement_rate", "mean_score", "escalation", "stop_early"):
            if k in base:
                out[k] = base[k]
        if judges.is_offline:
            out["note"] = OFFLINE_NOTE
        return out


def _dedupe(settings: list[Setting], judges: dict[str, Judges]) -> list[Setting]:
    """Give each setting a sub-run; settings with the same judge share the first one's."""
    by_hash: dict[str, Setting] = {}
    distinct = []
    for s in settings:
        h = judges[s.name].run_config()["config_hash"]
        if h in by_hash:
            s.run_dir = by_hash[h].run_dir
        else:
            s.run_dir = s.name
            by_hash[h] = s
            distinct.append(s)
    return distinct
