"""Running a calibration: validate the whole grid, judge the labelled items under every setting
(each a normal evaluate run directory, ``OUT/<setting>``, through the unit runner: completion
cache, --resume, --limit, local or Ray executor), then compare the settings with the human
reference and with the baseline, and write the report."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..bench.base import run_units
from ..bench.executor import Execution, connect, import_ray, reset, use
from ..bench.summaries import records_of
from ..debate.tasks import get_task
from ..evaluation.config import EvalConfig
from ..evaluation.evaluator import Evaluator
from ..evaluation.inputs import load_samples
from ..evaluation.report import write_report
from ..evaluation.summary import OFFLINE_NOTE
from ..models.prices import apply_price_specs
from ..runs.directory import RunDir
from ..runs.folder import RunLock
from ..runs.progress import RunProgress
from ..util.errors import ConfigError
from ..util.plugins import load_plugins
from . import metrics as M
from .config import CalibrateConfig
from .grid import DEFAULT_GRID, load_grid, parse_setting, resolve, with_baseline
from .multirater import annotator_agreement, judge_agreement
from .preset import check_preset_path, write_preset
from .recommend import recommend
from .records import CalibrationSetting, CalibrationSummary, Ceiling, Panel, PerItem, SettingResult, write_calibration
from .report import conclude
from .report import write_report as write_calibration_report
from .sources import Source, prepare

LAYER_KEYS = ("model", "base_url", "temperature", "max_tokens", "seed", "structured")
TOP_FILES = ("summary.json", "report.md")


def grid_of(cfg: CalibrateConfig) -> list[CalibrationSetting]:
    settings = list(cfg.settings)
    if cfg.grid:
        settings += load_grid(cfg.grid)
    return with_baseline(settings or list(DEFAULT_GRID), cfg.baseline)


def build(cfg: CalibrateConfig, source: Source, settings: list[CalibrationSetting]) -> dict[str, Evaluator]:
    """An Evaluator per setting (bad presets, personas or strategies fail here, before any call);
    settings with the same model settings share one model layer (one cache, one limit)."""
    base = EvalConfig.merged(source.defaults, cfg.base_settings(), {"task": source.task})
    if base.swap and source.task != "pairwise":
        raise ConfigError(f"--swap applies only to pairwise judging (this input is {source.task})")
    layers: dict[tuple[Any, ...], Any] = {}
    out = {}
    for s in settings:
        where = f"setting '{s.name}'"
        ec = resolve(s, base, where)
        if ec.swap and source.task != "pairwise":
            raise ConfigError(f"{where}: swap applies only to pairwise judging (this input is {source.task})")
        key = tuple(getattr(ec, k) for k in LAYER_KEYS)
        try:
            ev = Evaluator(ec, layer=layers.get(key))
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        layers.setdefault(key, ev.layer)
        out[s.name] = ev
    return out


def _check_dirs(cfg: CalibrateConfig, out: Path, settings: list[CalibrationSetting]) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: --out must be a directory (a file is in the way)")
    if cfg.resume or cfg.overwrite:
        return
    taken = [s.name for s in settings if (out / s.name / "config.json").exists()]
    if taken or (out / "summary.json").exists():
        where = out / taken[0] if taken else out
        raise ConfigError(
            f"{where}: already holds a run; use --resume to continue it, --overwrite to replace it, "
            "or choose another --out"
        )


async def acalibrate(
    config: CalibrateConfig | dict[str, Any], *, progress: RunProgress | None = None
) -> CalibrationSummary:
    """Run a calibration (see the package docstring); returns its summary, also written to
    ``OUT/summary.json``."""
    cfg = config if isinstance(config, CalibrateConfig) else CalibrateConfig.merged_from(config)
    load_plugins(cfg.plugins)
    apply_price_specs(cfg.price)
    out = Path(cfg.out)
    settings = grid_of(cfg)
    preset_path = check_preset_path(cfg.write_preset, overwrite=cfg.overwrite) if cfg.write_preset else None
    source = prepare(cfg.input, out, fmt=cfg.format, task=cfg.task, write=False)
    if source.text is None:  # a file of the user's: every line is checked before anything is written
        checked = load_samples(source.path, source.task)[0]
        if source.task == "score" and cfg.aspects is None:
            # {aspect: number} labels: the judge rates those aspects (unless --aspects says otherwise).
            score = get_task("score")
            keys = M.aspects_of([score.reference(x.label) for x in checked])
            if keys != ["score"]:
                source.defaults["aspects"] = keys
    evaluators = build(cfg, source, settings)
    _check_dirs(cfg, out, settings)
    execution = Execution("ray", cfg.ray_address, None, None, tuple(cfg.plugins)) if cfg.executor == "ray" else None
    if execution is None and cfg.ray_address:
        raise ConfigError("--ray-address needs --executor ray")
    if execution is not None:
        import_ray()
    aspects = evaluators[settings[0].name].config.aspects
    with RunLock(out):
        source.write()  # a converted data set: our own lines, from its validated rows
        samples = load_samples(source.path, source.task, aspects=aspects)[0]
        if cfg.limit is not None:
            samples = samples[: cfg.limit]
        if cfg.overwrite and not cfg.resume:
            for name in TOP_FILES:
                (out / name).unlink(missing_ok=True)
            for png in [*out.glob("agreement_*.png"), out / "cost_agreement.png"]:
                png.unlink(missing_ok=True)
        started = execution is not None and connect(execution)
        token = use(execution or Execution())
        try:
            if progress and evaluators[settings[0].name].is_offline:
                progress.note("offline model: verdicts are deterministic heuristics, not LLM judgements.")
            runs = {}
            for i, s in enumerate(settings, 1):
                if progress:  # whose items the lines below are (a log showed five unnamed [1/4] runs)
                    spec = "" if s.spec() == f"{s.name}={s.name}" else f" ({s.spec()})"
                    progress.note(f"setting {i}/{len(settings)}: {s.name}{spec}")
                runs[s.name] = await _run_setting(cfg, s, evaluators[s.name], source, samples, out, progress)
        finally:
            reset(token)
            if started:
                import_ray().shutdown()
            for layer in {id(ev.layer): ev.layer for ev in evaluators.values()}.values():
                await layer.close()
        summary = _summarise(cfg, source, settings, evaluators, samples, runs)
        write_calibration(out, summary)
        write_calibration_report(out, summary)
        if preset_path is not None and summary.best:
            write_preset(preset_path, summary)
    return summary


async def _run_setting(
    cfg: CalibrateConfig,
    s: CalibrationSetting,
    ev: Evaluator,
    source: Source,
    samples: list[Any],
    out: Path,
    progress: RunProgress | None,
) -> dict[str, Any]:
    """One setting's sub-run: an evaluate run directory (its config, records, summary, report)."""
    config = ev.file_run_config(source.path) | {
        "calibration": {"setting": s.model_dump(), "input": str(source.given), "input_format": source.format}
    }
    if progress:
        progress.totals, progress.label = ev.layer.totals, s.name

    async def unit(sample: Any) -> dict[str, Any]:
        return (await ev.judge(sample)).model_dump(mode="json")

    preds: dict[str, Any] = {}  # item -> the setting's verdict, as the comparisons read it

    def read_back(run: RunDir) -> Iterator[dict[str, Any]]:
        """The sub-run's records from samples.jsonl, a line at a time: the summary sums them as
        they pass and only each verdict is kept (a large calibration is never held whole)."""
        for r in records_of(run, (x.id for x in samples)):
            if r.get("status") == "ok":
                preds[r["key"]] = M.predicted(source.task, r)
            yield r

    with RunDir(out / s.name, config, resume=cfg.resume, overwrite=cfg.overwrite, key="key") as run:
        try:
            await run_units(
                [(x.id, x) for x in samples],
                unit,
                run,
                progress=progress,
                workers=cfg.workers or 2 * ev.layer.max_connections,
                keep=None,
            )
        finally:
            summary = ev.run_summary(read_back(run), len(samples), config)
            run.write_summary(summary)
            write_report(run.path, summary)
    return {"summary": summary, "preds": preds}


def _summarise(
    cfg: CalibrateConfig,
    source: Source,
    settings: list[CalibrationSetting],
    evaluators: dict[str, Evaluator],
    samples: list[Any],
    runs: dict[str, dict[str, Any]],
) -> CalibrationSummary:
    task = source.task
    # Items that are not independent name their cluster (Topical-Chat: the context; a user's file:
    # a `cluster` field): bootstraps and paired tests then resample and permute whole clusters.
    clusters = {x.id: str(x.meta["cluster"]) for x in samples if x.meta.get("cluster") is not None} or None
    items = M.Items(task, {x.id: x.label for x in samples}, clusters)
    preds = {name: run["preds"] for name, run in runs.items()}
    base = cfg.baseline
    opts = {"resamples": cfg.resamples, "seed": cfg.bootstrap_seed}
    results: dict[str, SettingResult] = {}
    for s in settings:
        ev, summ = evaluators[s.name], runs[s.name]["summary"]
        vs = (
            {}
            if s.name == base
            else {m: d for m, d in M.paired_vs(items, s.name, preds[s.name], base, preds[base], **opts).items()}
        )
        results[s.name] = SettingResult(
            setting=s,
            run_dir=s.name,
            panel=_panel(ev),
            config=_public(ev),
            n_items=len(samples),
            n_ok=summ["n_ok"],
            n_failed=summ["n_failed"],
            complete=summ["complete"] and summ["n_failed"] == 0,
            agreement=M.setting_agreement(items, preds[s.name], **opts),
            usage=summ["usage"],
            per_item=_per_item(summ),
            vs_baseline=vs,
            wall_time_s=summ.get("wall_time_s", 0.0),
            self_consistency=summ.get("self_consistency"),
        )
    first = evaluators[settings[0].name]
    ceiling = M.ceiling(items, **opts)
    between_metric, between = judge_agreement(items, {s.name: preds[s.name] for s in settings})
    summary = CalibrationSummary(
        input=str(source.given),
        input_format=source.format,
        task=task,
        n_items=len(samples),
        n_reference=len(items.reference),
        n_clusters=None if clusters is None else len(set(clusters.values()) | (set(items.reference) - set(clusters))),
        n_multi_annotated=sum(1 for lab in items.raw.values() if isinstance(lab, list) and len(lab) > 1),
        model=first.layer.label,
        offline=first.is_offline,
        note=OFFLINE_NOTE if first.is_offline else None,
        primary_metric=items.format.primary_metric,
        baseline=base,
        settings=results,
        ceiling=(
            Ceiling(
                n_items=ceiling[0], n_pairs=ceiling[1], agreement=ceiling[2], multi_rater=annotator_agreement(items)
            )
            if ceiling
            else None
        ),
        judge_agreement=between,
        judge_agreement_metric=between_metric,
        resamples=cfg.resamples,
        seed=cfg.bootstrap_seed,
        complete=all(r.complete for r in results.values()),
        wall_time_s=sum(r.wall_time_s for r in results.values()),
    )
    conclude(summary)
    m = summary.primary_metric
    best = summary.best
    vs_best = {
        name: M.paired_vs(items, name, preds[name], best, preds[best], **opts)[m]
        for name in results
        if best is not None and name != best
    }
    return recommend(summary, vs_best)


def _panel(ev: Evaluator) -> Panel:
    c = ev.config
    return Panel(
        model=" + ".join(ev.panel(c.task).endpoints()),  # a mixed panel names each endpoint
        strategy=c.strategy,
        agents=len(ev.personas),
        turns=c.turns,
        personas=[p.slug for p in ev.personas],
        aggregate=ev.panel(c.task).aggregate,
        swap=c.swap,
    )


def _public(ev: Evaluator) -> dict[str, Any]:
    return ev.config.public() | {"personas": [p.slug for p in ev.personas]}


def _per_item(summary: dict[str, Any]) -> PerItem:
    u, n = summary["usage"], max(1, summary["n_ok"] + summary["n_failed"])
    tokens = sum(
        u.get(k, 0) for k in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens", "cached_completion_tokens")
    )
    # Cache hits at the price they had when answered: settings that share calls (the first round
    # of one_by_one and simultaneous) cost the same whichever ran first.
    paid, saved = u.get("cost_usd"), u.get("cached_cost_usd", 0.0)
    cost = None if paid is None or saved is None else paid + saved
    return PerItem(
        calls=(u.get("calls", 0) + u.get("cached_calls", 0)) / n,
        tokens=tokens / n,
        cost_usd=None if cost is None else cost / n,
        tokens_approx=bool(u.get("tokens_approx")),
    )


def calibrate(
    input: str | Path | None = None,
    out: str | Path | None = None,
    *,
    settings: list[CalibrationSetting | str] | None = None,
    progress: bool = False,
    **options: Any,
) -> CalibrationSummary:
    """Calibrate judge settings against human labels (the Python API of ``chateval calibrate``).

    >>> s = calibrate("labels.jsonl", "calib/", model="offline")          # the default grid
    >>> s.recommended, s.recommendation, s.best, s.setting("single").agreement["kappa"].ci95

    ``settings``: CalibrationSetting objects or ``--setting`` strings (``"big=one_by_one_3x2,turns=3"``);
    other options are the fields of CalibrateConfig (grid, baseline, limit, resume, model, ...).
    Works inside a running event loop too (a notebook): the run then happens on a worker thread."""
    parsed = [s if isinstance(s, CalibrationSetting) else parse_setting(s) for s in settings or []]
    data = {
        "input": None if input is None else str(input),
        "out": None if out is None else str(out),
        "settings": parsed,
        **options,
    }
    cfg = CalibrateConfig.merged_from(data)
    bar = None
    if progress:
        from rich.console import Console

        from ..models import UsageTotals

        bar = RunProgress(UsageTotals(), Console(stderr=True), label="items")
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(acalibrate(cfg, progress=bar))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chateval-calibrate") as pool:
        return pool.submit(asyncio.run, acalibrate(cfg, progress=bar)).result()
