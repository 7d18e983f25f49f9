"""Running an audit: plan the variants of every item, judge each (and each original) as one
keyed unit of one run directory, then pair every variant with its original and count flips.

One run, keyed units (``ITEM::original``, ``ITEM::PERTURBATION::VARIANT``): the normal unit
runner and ``RunDir`` give the completion cache, ``--resume`` (finished variants are kept, the
config hash refuses a changed judge, input or perturbation set) and the run lock; the viewer
reads it as any run. Judge-side perturbations (persona) get their own Evaluator on the same
model layer (one cache, one concurrency limit, one meter).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bench.base import run_units
from ..bench.executor import error_text
from ..debate.samples import Sample
from ..evaluation.config import EvalConfig, config_hash
from ..evaluation.evaluator import Evaluator
from ..evaluation.summary import OFFLINE_NOTE
from ..models import UsageTotals
from ..models.reach import watch_endpoints
from ..records.audit import ORIGINAL, AuditSummary, AuditUnit, KeptUnit, read_summary
from ..runs.directory import RunDir
from ..runs.files import file_sha256
from ..runs.progress import RunProgress
from ..util.errors import ConfigError
from ..util.heap import release_freed
from ..util.plugins import load_plugins
from .config import AuditConfig
from .flips import audited, bias_summaries
from .inputs import load_items
from .perturbations import BUILT_IN, PERTURBATIONS, Context, Perturbation, Skip, get_perturbation, length_matched
from .report import headline, write_page, write_report

CONTROL_SUFFIX = "~length"
SAMPLE_FORMAT = 2  # bumped when variants are built differently, so --resume refuses old runs


@dataclass
class Unit:
    item: str
    perturbation: str
    variant: str
    sample: Sample
    favours: str | None = None
    swapped: bool = False
    judge: dict[str, Any] | None = None
    control: bool = False  # the length-matched control of ``variant``

    @property
    def key(self) -> str:
        if self.perturbation == ORIGINAL:
            return f"{self.item}::{ORIGINAL}"
        return f"{self.item}::{self.perturbation}::{self.variant}" + (CONTROL_SUFFIX if self.control else "")

    @property
    def judge_key(self) -> str:
        return json.dumps(self.judge or {}, sort_keys=True)


def choose(names: list[str] | None, task: str) -> tuple[list[Perturbation], dict[str, str]]:
    """The perturbations to run and, for those left out, why. Asked-for ones that do not apply
    to the task are an error; by default they are skipped with a note."""
    skipped: dict[str, str] = {}
    if names:
        # Verbosity first (the length effect the others are read against), then in the order asked.
        chosen = [get_perturbation(n) for n in sorted(dict.fromkeys(names), key=lambda n: n != "verbosity")]
        bad = [p for p in chosen if task not in p.tasks]
        if bad:
            raise ConfigError(
                f"--perturbation {bad[0].name}: applies to {', '.join(bad[0].tasks)} items, not to the {task} task"
            )
        return chosen, skipped
    chosen = []
    # The built-ins in the order the report reads best, then plugins' by name.
    order = {n: i for i, n in enumerate(BUILT_IN)}
    for n in sorted(PERTURBATIONS.names(), key=lambda n: (order.get(n, len(order)), n)):
        p = get_perturbation(n)
        if task in p.tasks:
            chosen.append(p)
        else:
            skipped[n] = f"applies to {', '.join(p.tasks)} items only (this audit's task is {task})"
    return chosen, skipped


def _controls(p: Perturbation, s: Sample, variants: list[Unit]) -> list[Unit]:
    """Length-matched controls of the variants that add words and favour an answer."""
    out = []
    for u in variants:
        if not p.length_control or u.favours is None or u.swapped:
            continue
        ctrl = length_matched(s, u.sample)
        if ctrl is not None:
            out.append(
                Unit(
                    item=u.item,
                    perturbation=u.perturbation,
                    variant=u.variant,
                    sample=ctrl,
                    favours=u.favours,
                    judge=u.judge,
                    control=True,
                )
            )
    return out


def plan(
    items: list[Sample],
    chosen: list[Perturbation],
    ctx: Context,
    explicit: bool,
    skipped: dict[str, str],
    length_control: bool = True,
) -> tuple[list[Unit], list[Perturbation]]:
    units = [Unit(item=s.id, perturbation=ORIGINAL, variant=ORIGINAL, sample=s) for s in items]
    ran = []
    for p in chosen:
        try:
            mine = []
            for s in items:
                variants = p(s, ctx)
                names = [v.name for v in variants]
                if len(set(names)) != len(names):
                    raise ConfigError(f"perturbation '{p.name}': two variants of item '{s.id}' share a name")
                made = [
                    Unit(
                        item=s.id,
                        perturbation=p.name,
                        variant=v.name,
                        sample=v.sample.model_copy(update={"id": s.id}),
                        favours=v.favours,
                        swapped=v.swapped,
                        judge=dict(v.judge) or None,
                    )
                    for v in variants
                ]
                mine += made + (_controls(p, s, made) if length_control else [])
        except Skip as e:
            if explicit:
                raise ConfigError(f"--perturbation {p.name}: {e}") from None
            skipped[p.name] = str(e)
            continue
        except ConfigError:
            raise
        except Exception as e:  # a plugin's bug: one line naming it, before any model call
            raise ConfigError(f"perturbation '{p.name}' failed on an item ({error_text(e)})") from None
        units += mine
        ran.append(p)
    return units, ran


def _source_digest(p: Perturbation) -> str:
    """A perturbation's code and texts: a changed perturbation makes --resume refuse the run."""
    try:
        src = inspect.getsource(inspect.getmodule(p.fn) or p.fn)
    except (OSError, TypeError):
        src = p.fn.__qualname__
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _evaluators(judge: EvalConfig, units: list[Unit]) -> dict[str, Evaluator]:
    base = Evaluator(judge)
    out = {json.dumps({}): base}
    for u in units:
        if u.judge_key not in out:
            out[u.judge_key] = Evaluator(EvalConfig.merged(judge.model_dump(), u.judge or {}), layer=base.layer)
    return out


def run_config(
    cfg: AuditConfig, ev: Evaluator, ran: list[Perturbation], evaluators: dict[str, Evaluator], source: str
) -> dict[str, Any]:
    config = ev.run_config()
    judging = config["judging"] | {
        "audit": True,
        "sample_format": SAMPLE_FORMAT,
        "input_sha256": file_sha256(cfg.input),
        "input_format": source,
        "perturbations": {p.name: _source_digest(p) for p in ran},
        "judge_family": cfg.judge_family,
        "other_family": cfg.other_family,
        "score_threshold": cfg.score_threshold,
        "length_control": cfg.length_control,
        # Judge-side variants (persona): their panels' personas and templates.
        "variant_judges": {k: e.run_config()["config_hash"] for k, e in evaluators.items() if k != "{}"},
    }
    return config | {
        "judging": judging,
        "config_hash": config_hash(judging),
        "kind": "audit",
        "input": cfg.input,
        "audit": cfg.model_dump(exclude={"judge"}),
    }


async def arun(cfg: AuditConfig, progress: RunProgress | None = None) -> AuditSummary:
    """Audit ``cfg.judge`` on ``cfg.input``; writes the run directory and returns its summary."""
    load_plugins(cfg.judge.plugins)
    judge = cfg.judge
    items, source = load_items(cfg.input, judge.task)
    if cfg.limit is not None:
        items = items[: cfg.limit]
    chosen, skipped = choose(cfg.perturbations, judge.task)
    ctx = Context(task=judge.task, judge=judge, judge_family=cfg.judge_family, other_family=cfg.other_family)
    units, ran = plan(items, chosen, ctx, bool(cfg.perturbations), skipped, cfg.length_control)
    evaluators = _evaluators(judge, units)
    ev = evaluators["{}"]
    config = run_config(cfg, ev, ran, evaluators, source)

    async def judge_unit(u: Unit) -> dict[str, Any]:
        meta = {
            "key": u.key,
            "item": u.item,
            "perturbation": u.perturbation,
            "variant": u.variant,
            "favours": u.favours,
            "swapped": u.swapped,
            "judge": u.judge or {},
            "control": u.control,
        }
        try:
            result = await evaluators[u.judge_key].judge(u.sample)
            return AuditUnit(**result.model_dump(), **meta).model_dump(mode="json")
        except Exception as e:  # recorded as a failed variant (redone by --resume), the audit goes on
            return AuditUnit(
                id=u.item,
                task=judge.task,
                status="failed",
                error=error_text(e),
                **meta,
            ).model_dump(mode="json")

    if progress:
        progress.totals = ev.layer.totals
    try:
        # An endpoint refusing connections stops the audit (finished variants kept; see run_units).
        with (
            watch_endpoints() as down,
            RunDir(cfg.out, config, resume=cfg.resume, overwrite=cfg.overwrite, key="key") as run,
        ):
            wanted, n_items, n_units = {u.key for u in units}, len(items), len(units)
            try:
                await run_units(
                    [(u.key, u) for u in units], judge_unit, run, workers=cfg.workers, progress=progress, keep=None
                )
            finally:
                # The planned variants and the input items are done with: let go before the
                # summary and the page are built, so they are not held beside them.
                units.clear()
                items.clear()
                records, usage = read_units(run, wanted)
                summary = summarize(cfg, ev, records, ran, skipped, n_items, n_units, config["config_hash"], usage)
                del records
                data = summary.model_dump(mode="json")
                run.write_summary(data)  # adds the wall time of every attempt
                # Read back but for the variants, which the run's own models already are: not a
                # second model of every variant beside the first (issue 38 item 3).
                variants, data["variants"] = summary.variants, []
                summary = AuditSummary.model_validate(data)
                summary.variants = variants
                del data, variants
                write_report(Path(cfg.out), summary, page=False)
                # The page reads summary.json, not this model: its variants (one model each, about
                # 1.3 KiB) are let go while the page is built, its peak, and read back after, so the
                # returned summary is the same (issue 38 item 3).
                summary.variants = []
                release_freed()  # what the summary's phase freed, returned to the OS (util.heap)
                write_page(Path(cfg.out))
                summary.variants = read_summary(cfg.out).variants
    finally:
        await ev.layer.close()
    if down:
        raise down[0]
    return summary


def read_units(run: RunDir, wanted: set[str]) -> tuple[list[KeptUnit], UsageTotals]:
    """The run's variants in samples.jsonl's order, each validated whole (the same errors) and
    kept as what the summary reads of it (:class:`KeptUnit`: no debate, inputs or usage), and
    their usage summed: one pass over the file (issue 38 item 3)."""
    usage = UsageTotals()
    out = []
    for r in run.iter_records():
        if r.get("key") in wanted:
            unit = AuditUnit.model_validate(r)
            usage.merge(unit.usage)
            out.append(KeptUnit.of(unit))
    return out, usage


def summarize(
    cfg: AuditConfig,
    ev: Evaluator,
    records: Sequence[AuditUnit | KeptUnit],
    ran: list[Perturbation],
    skipped: dict[str, str],
    n_items: int,
    n_units: int,
    chash: str,
    usage: UsageTotals | None = None,
) -> AuditSummary:
    """The audit's summary from its variants; ``usage`` is theirs summed (as ``read_units`` gives
    it, from records kept without their usage), or None to sum it from ``records``."""
    judge = cfg.judge
    infos = [p.info() for p in ran]
    variants, missing = audited(records, judge.task, cfg.score_threshold)
    biases = bias_summaries(variants, infos, missing)
    if usage is None:  # records held whole: their own usage (a KeptUnit has none)
        usage = UsageTotals()
        for r in records:
            if isinstance(r, AuditUnit):
                usage.merge(r.usage)
    failed = [r for r in records if r.status != "ok"]
    summary = AuditSummary(
        input=cfg.input,
        task=judge.task,
        model=ev.layer.label,
        offline=ev.is_offline,
        note=OFFLINE_NOTE if ev.is_offline else None,
        judge={
            "strategy": judge.strategy,
            "agents": len(ev.personas),
            "turns": judge.turns,
            "personas": [p.slug for p in ev.personas],
            "swap": judge.swap,
        },
        perturbations=infos,
        skipped=skipped,
        n_items=n_items,
        n_units=n_units,
        n_ok=len(records) - len(failed),
        n_failed=len(failed),
        failed_keys=[r.key for r in failed],
        complete=len(records) == n_units,
        biases=biases,
        variants=variants,
        score_threshold=cfg.score_threshold if judge.task == "score" else None,
        usage=usage.model_dump(),
        calls_per_item=usage.calls / n_items if n_items else None,
        config_hash=chash,
    )
    summary.headline = headline(summary)
    return summary
