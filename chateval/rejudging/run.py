"""Running a rejudge: read and check every set and judge, judge each set's answers with the LLM
judges (each set x judge one run directory, ``OUT/<set>/<judge>``, through the unit runner:
completion cache, --resume, --max-cost, local or Ray executor), score every set under every judge,
compare the judges, and write summary.json, report.md and, for `chateval view`, config.json and
samples.jsonl (one line per set and item: its verdict under every judge)."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..bench.base import run_units
from ..bench.executor import Execution, connect, import_ray, reset, use
from ..datasets.errata import load_errata
from ..datasets.locate import find_data, find_data_file
from ..evaluation.config import config_hash
from ..models import UsageTotals
from ..models.prices import apply_price_specs
from ..runs.directory import RunDir
from ..runs.folder import RunLock
from ..runs.progress import RunProgress
from ..util.errors import ConfigError
from .card import judge_prompts, set_card
from .config import RejudgeConfig
from .judges import ItemScore, JudgeSpec, parse_judges, recorded_names, score_f1, score_recorded
from .judging import LLMJudge, unit_fn
from .loaders import load_set, parse_spec
from .output import rows_of, write_items
from .records import RejudgeSummary, write_rejudge
from .report import write_report
from .score import Column, errata_result, make_score, set_result, stated_check
from .sets import GradedSet
from .summary import compare_sets

LAYER_KEYS = (
    "structured",
    "base_url",
    "max_connections",
    "max_retries",
    "timeout_s",
    "retry_base_delay_s",
    "cache",
    "cache_dir",
)


def load_sets(cfg: RejudgeConfig) -> list[GradedSet]:
    """Every input's sets. An input names a path or a catalog data set (``locomo-audit-wrong``,
    ``zep-locomo/zep_locomo_grades.json``), read from the data folder as ``--data`` reads it; the
    set records the file it read (path and sha256)."""
    sets: list[GradedSet] = []
    lme = str(find_data(cfg.lme_data, "LongMemEval")) if cfg.lme_data else None
    for spec in cfg.inputs:
        path, label, wrong = parse_spec(spec)
        sets += load_set(find_data_file(path, "graded answers"), label, fmt=cfg.format, wrong=wrong, lme_data=lme)
    labels = [s.label for s in sets]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup:
        raise ConfigError(f"two sets are labelled '{dup}': name them with FILE:LABEL")
    if cfg.limit is not None:
        for s in sets:
            s.items = s.items[: cfg.limit]
    return sets


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "set"


def build_judges(cfg: RejudgeConfig, specs: list[JudgeSpec]) -> dict[str, LLMJudge]:
    base = {"model": cfg.model, "temperature": cfg.temperature} | {k: getattr(cfg, k) for k in LAYER_KEYS}
    out: dict[str, LLMJudge] = {}
    layer = None
    for s in specs:
        if not s.offline:
            out[s.name] = LLMJudge(s, base, layer=layer)
            layer = out[s.name].layer  # one model layer: one cache, one limit, one meter
    return out


def _check_out(cfg: RejudgeConfig, out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: --out must be a directory (a file is in the way)")
    if (out / "summary.json").exists() and not (cfg.resume or cfg.overwrite):
        raise ConfigError(
            f"{out}: already holds a rejudge; use --resume to continue it, --overwrite to replace it, or choose another --out"
        )


async def arejudge(config: RejudgeConfig | dict[str, Any], *, progress: RunProgress | None = None) -> RejudgeSummary:
    """Score graded answer sets under several judges and compare them (see the package docstring)."""
    cfg = config if isinstance(config, RejudgeConfig) else RejudgeConfig.merged(config)
    apply_price_specs(cfg.price)
    specs = parse_judges(cfg.judges)
    sets = load_sets(cfg)
    errata = load_errata(find_data_file(cfg.errata, "errata")) if cfg.errata else None
    judges = build_judges(cfg, specs)
    out = Path(cfg.out)
    _check_out(cfg, out)
    execution = Execution("ray", cfg.ray_address, None, None, ()) if cfg.executor == "ray" else None
    if execution is None and cfg.ray_address:
        raise ConfigError("--ray-address needs --executor ray")
    if execution is not None:
        import_ray()
    usage = UsageTotals()
    failed = 0
    results = {}
    with RunLock(out):
        if cfg.overwrite and not cfg.resume:
            for name in ("summary.json", "report.md", "samples.jsonl", "config.json", "view.html"):
                (out / name).unlink(missing_ok=True)
        started = execution is not None and connect(execution)
        token = use(execution or Execution())
        rows: list[dict[str, Any]] = []
        kept: dict[str, tuple[GradedSet, dict[str, Column]]] = {}
        notes: list[str] = []
        try:
            for s in sets:
                corrected: dict[str, str] = {}
                recorded = _recorded_columns(s, specs)
                if not recorded and any(x.kind == "recorded" for x in specs):
                    notes.append(f"{s.label}: no recorded verdicts in the set (no `recorded` column for it)")
                cols: dict[str, Column] = {}
                for name, who in recorded.items():
                    cols[name] = {it.id: score_recorded(it, who) for it in s.items}
                if errata is not None:
                    er, corrected = errata_result(s, errata, cols, list(recorded), cfg.f1_threshold)
                offline = {name: True for name in cols}
                fixed: dict[str, Column] = {}
                for spec in specs:
                    if spec.kind == "f1":
                        cols["f1"] = {it.id: score_f1(it, it.gold, cfg.f1_threshold) for it in s.items}
                        fixed["f1"] = {
                            it.id: score_f1(it, corrected.get(it.id, it.gold), cfg.f1_threshold) for it in s.items
                        }
                        offline["f1"] = True
                    elif not spec.offline:
                        j = judges[spec.name]
                        raw, fix, n_failed, u = await _llm_column(cfg, s, j, corrected, out, progress)
                        cols[spec.name], fixed[spec.name] = raw, fix
                        offline[spec.name] = j.evaluator.is_offline
                        failed += n_failed
                        usage.merge(u)
                res = set_result(s, cols, offline, resamples=cfg.resamples, seed=cfg.bootstrap_seed)
                if errata is not None:
                    res.errata = er
                    _corrected_scores(res, s, cols, fixed, corrected, offline, cfg)
                recorded_cols = [c for c in cols if c.startswith("recorded")]
                if len(recorded_cols) == 1:
                    res.stated = stated_check(s, cols[recorded_cols[0]])
                prompts = judge_prompts(s, specs, list(cols), judges)
                res.protocol_card = set_card(s, prompts, _model(judges)).model_dump(mode="json")
                results[s.label] = res
                rows += rows_of(s, cols)
                kept[s.label] = (s, cols)
        finally:
            reset(token)
            if started:
                import_ray().shutdown()
            for layer in {id(j.layer): j.layer for j in judges.values()}.values():
                await layer.close()
        model = _model(judges)
        summary = RejudgeSummary(
            judges=[s.name for s in specs],
            offline_judges=[s.name for s in specs if s.offline],
            model=model,
            sets=results,
            f1_threshold=cfg.f1_threshold,
            resamples=cfg.resamples,
            seed=cfg.bootstrap_seed,
            complete=failed == 0,
            n_failed=failed,
            usage=usage.model_dump(),
            notes=notes,
        )
        if len(results) == 1:  # one set: its card is the run's (the viewer shows it, `view A B` compares it)
            summary.protocol_card = next(iter(results.values())).protocol_card
        compare_sets(summary, kept, resamples=cfg.resamples, seed=cfg.bootstrap_seed)
        out.mkdir(parents=True, exist_ok=True)
        write_items(out, cfg, sets, errata, summary, rows)
        write_rejudge(out, summary)
        write_report(out, summary)
    return summary


def _model(judges: dict[str, LLMJudge]) -> str | None:
    return next((j.layer.label for j in judges.values()), None)


def _recorded_columns(s: GradedSet, specs: list[JudgeSpec]) -> dict[str, str | None]:
    """Column name -> the recorded judge it reads (``recorded`` alone: one column per judge in the
    file, named ``recorded`` when there is only one)."""
    names = recorded_names(s.items)
    out: dict[str, str | None] = {}
    for spec in specs:
        if spec.kind != "recorded":
            continue
        if spec.recorded is not None:
            if spec.recorded not in names:
                raise ConfigError(
                    f"--judges {spec.name}: set '{s.label}' has no verdicts of '{spec.recorded}' (it has: {', '.join(names) or 'none'})"
                )
            out[spec.name] = spec.recorded
        elif len(names) == 1:
            out["recorded"] = names[0]
        else:
            out |= {f"recorded:{n}": n for n in names}
    return out


def _corrected_scores(
    res: Any,
    s: GradedSet,
    cols: dict[str, Column],
    fixed: dict[str, Column],
    corrected: dict[str, str],
    offline: dict[str, bool],
    cfg: RejudgeConfig,
) -> None:
    opts: dict[str, Any] = {"wrong": s.is_wrong, "resamples": cfg.resamples, "seed": cfg.bootstrap_seed}
    for name, score in res.scores.items():
        if name in fixed:
            score.corrected = make_score(name, offline[name], s.items, fixed[name], **opts)
        else:  # recorded verdicts were given against the raw gold: the items whose gold stands
            keep = [it for it in s.items if it.id not in corrected]
            score.corrected = make_score(name, True, keep, cols[name], **opts)
            score.corrected.note = "recorded verdicts: only the items whose gold stands"


async def _llm_column(
    cfg: RejudgeConfig, s: GradedSet, j: LLMJudge, corrected: dict[str, str], out: Path, progress: RunProgress | None
) -> tuple[Column, Column, int, UsageTotals]:
    judging = j.config() | {"set": s.label, "set_sha256": s.sha256, "corrected": sorted(corrected)}
    config = {"kind": "rejudge-judge", "judging": judging, "config_hash": config_hash(judging)}
    units = [(it.id, (it, it.gold, it.id)) for it in s.items]
    units += [(f"{i}::corrected", (it, corrected[i], f"{i}::corrected")) for it in s.items if (i := it.id) in corrected]
    if progress:
        progress.totals, progress.label = j.layer.totals, f"{s.label} · {j.spec.name}"
    with RunDir(
        out / _slug(s.label) / j.spec.slug, config, resume=cfg.resume, overwrite=cfg.overwrite, key="key"
    ) as run:
        try:
            await run_units(
                units, unit_fn(j), run, progress=progress, workers=cfg.workers or 2 * j.layer.max_connections
            )
        finally:
            wanted = {k for k, _ in units}
            records = {r["key"]: r for r in run.records() if r.get("key") in wanted}
            n_failed = sum(1 for k in wanted if records.get(k, {}).get("status") != "ok")
            usage = UsageTotals()
            for r in records.values():
                if r.get("usage"):
                    usage.merge(UsageTotals.model_validate(r["usage"]))
            run.write_summary(
                {"kind": "rejudge-judge", "n_expected": len(units), "n_failed": n_failed, "usage": usage.model_dump()}
            )

    def col(suffix: str) -> Column:
        out_: Column = {}
        for it in s.items:
            r = records.get(it.id + suffix) or (records.get(it.id) if suffix else None) or {}
            ok = r.get("status") == "ok"
            out_[it.id] = ItemScore(value=float(r["accepted"]) if ok else None, accepted=r["accepted"] if ok else None)
        return out_

    return col(""), col("::corrected"), n_failed, usage


def rejudge(
    *inputs: str, out: str, judges: list[str] | str | None = None, progress: bool = False, **options: Any
) -> RejudgeSummary:
    """Score graded answer sets under several judges (the Python API of ``chateval rejudge``).

    >>> s = rejudge("fc_cot.json:cot", "ap_v1.json:wrong", out="rj/", judges="recorded,f1")
    >>> s.sets["cot"].scores["recorded"].accuracy

    An input is a path or, after ``chateval data get``, a data set's name (``locomo-audit-wrong:ap:wrong``,
    ``locomo-audit-fc/fc_gpt-4o-mini_cot:cot``; ``errata="locomo-audit"``), as on the command line.

    Works inside a running event loop too (a notebook): the run then happens on a worker thread."""
    data: dict[str, Any] = {"inputs": list(inputs), "out": str(out), **options}
    if judges is not None:
        data["judges"] = judges
    cfg = RejudgeConfig.merged(data)
    bar = None
    if progress:
        from rich.console import Console

        bar = RunProgress(UsageTotals(), Console(stderr=True), label="judgements")
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arejudge(cfg, progress=bar))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chateval-rejudge") as pool:
        return pool.submit(asyncio.run, arejudge(cfg, progress=bar)).result()
