"""The Python API: ``Evaluator`` judges single items or whole files with a debate panel."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..debate import JudgeResult, Panel, Sample
from ..models import ModelLayer
from ..models.budget import set_unit, unit_budget
from ..models.dryrun import DryRunEstimate, adaptive_notes, dry_run
from ..models.reach import watch_endpoints
from ..runs.directory import RunDir, read_jsonl
from ..runs.files import file_sha256
from ..runs.folder import SAMPLES
from ..util.interrupts import watch_sigint
from ..util.plugins import load_plugins
from .config import EvalConfig, config_hash, find_preset, load_preset
from .inputs import InvalidLine, load_samples
from .judges import Judges, layer_from_config, package_versions, resolve_personas
from .report import label_agreement, write_report
from .summary import judged_totals

SampleCallback = Callable[[JudgeResult], None]


def _rebuilt_evaluator(config: EvalConfig, layer: ModelLayer) -> Evaluator:
    return Evaluator(config, layer=layer)


class Evaluator:
    """A debate-panel judge.

    >>> ev = Evaluator(model="offline")                     # or Evaluator.from_preset("chateval_default")
    >>> result = ev.compare_sync("Q?", "answer A", "answer B")
    >>> result.verdict.winner                               # '1', '2' or 'tie'
    """

    def __init__(self, config: EvalConfig | None = None, *, layer: ModelLayer | None = None, **settings: Any) -> None:
        self.config = EvalConfig.merged(config.model_dump() if config else {}, settings)
        self.judges = Judges(self.config, layer=layer)  # the panels; bad personas, strategies, tasks fail here
        self.library, self.personas = self.judges.library, self.judges.personas
        self.prompts, self.layer = self.judges.prompts, self.judges.layer

    def __reduce__(self) -> tuple[Any, ...]:
        # To a Ray worker: its config and model layer (which pickles as its settings).
        return (_rebuilt_evaluator, (self.config, self.layer))

    @classmethod
    def from_preset(cls, preset: str, **settings: Any) -> Evaluator:
        dirs = settings.get("persona_dirs")  # presets are looked up in the built-in strategies/
        load_plugins(settings.get("plugins") or [])  # first: a preset may name a task a plugin registers
        data = load_preset(find_preset(preset, None if dirs is None else []))
        return cls(EvalConfig.merged(data, {k: v for k, v in settings.items()}))

    @property
    def is_offline(self) -> bool:
        return self.layer.spec.is_offline

    def panel(self, task: str) -> Panel:
        return self.judges.panel(task)

    # --- single items -------------------------------------------------------------------
    async def judge(self, sample: Sample, task: str | None = None) -> JudgeResult:
        return await self.judges.judge(sample, task)

    async def compare(
        self,
        question: str,
        answer_1: str,
        answer_2: str,
        *,
        context: Any = None,
        reference: str | None = None,
        id: str = "sample",
    ) -> JudgeResult:
        return await self.judge(
            Sample(
                id=id, question=question, answer_1=answer_1, answer_2=answer_2, context=context, reference=reference
            ),
            "pairwise",
        )

    async def score(
        self,
        question: str,
        answer: str,
        *,
        context: Any = None,
        reference: str | None = None,
        aspects: list[str] | None = None,
        id: str = "sample",
    ) -> JudgeResult:
        return await self.judge(
            Sample(
                id=id,
                question=question,
                answer=answer,
                context=context,
                reference=reference,
                aspects=aspects or self.config.aspects,
            ),
            "score",
        )

    async def check(
        self, question: str, answer: str, reference: str, *, context: Any = None, id: str = "sample"
    ) -> JudgeResult:
        return await self.judge(
            Sample(id=id, question=question, answer=answer, reference=reference, context=context), "correctness"
        )

    def compare_sync(self, *args: Any, **kwargs: Any) -> JudgeResult:
        return asyncio.run(self.compare(*args, **kwargs))

    def score_sync(self, *args: Any, **kwargs: Any) -> JudgeResult:
        return asyncio.run(self.score(*args, **kwargs))

    def check_sync(self, *args: Any, **kwargs: Any) -> JudgeResult:
        return asyncio.run(self.check(*args, **kwargs))

    # --- files --------------------------------------------------------------------------
    def run_config(self) -> dict[str, Any]:
        """What config.json records: resolved settings, versions and the config hash."""
        return self.judges.run_config()

    async def evaluate(
        self, samples: list[Sample], *, on_result: SampleCallback | None = None, concurrency: int | None = None
    ) -> list[JudgeResult]:
        """Judge many samples concurrently (results in input order). Under a cost cap
        (``chateval.models.budget.cost_cap``) samples not started once it is reached are left out."""
        results: list[JudgeResult | None] = [None] * len(samples)

        def keep(i: int, r: JudgeResult) -> None:
            results[i] = r
            if on_result:
                on_result(r)

        await self.judge_each(samples, keep, concurrency)
        return [r for r in results if r is not None]

    async def judge_each(
        self, samples: Iterable[Sample], on_result: Callable[[int, JudgeResult], None], concurrency: int | None = None
    ) -> None:
        """Judge ``samples`` (read as they start), passing each result on as it finishes; nothing
        is kept here, so a run's memory does not grow with its length (``evaluate_file`` streams
        its records to disk)."""
        # Twice as many samples in flight as connections: a sample between two of its sequential
        # calls (parsing, building the next prompt) leaves its connection to another sample, so the
        # connection limit, not sample scheduling, is what bounds throughput.
        width = concurrency or 2 * self.layer.max_connections
        queue = enumerate(samples)  # workers take samples in input order, as they free up
        with watch_endpoints() as down:

            async def one(s: Sample) -> JudgeResult | None:
                if down:  # an endpoint cannot be reached: start nothing more
                    return None
                # --max-cost: the sample's estimated cost is reserved first; none starts that
                # would pass the cap (running ones finish)
                async with unit_budget() as started:
                    if not started:
                        return None
                    set_unit(s.id)  # this task's model calls belong to this sample (dry-run prefix sharing)
                    r = await self.judge(s)
                if down and r.status != "ok":
                    return None  # failed because the run is stopping: not recorded, so --resume redoes it
                return r

            async def worker() -> None:
                for i, s in queue:
                    # A task of its own per sample, as each had before: what a sample sets in its
                    # context (its unit, its cost account) never reaches the next one.
                    r = await asyncio.ensure_future(one(s))
                    if r is not None:
                        on_result(i, r)

            tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, width))]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                # on_result failed (a run that cannot be written): stop the other samples now, or
                # they would go on paying for calls whose results cannot be kept.
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        if down:
            raise down[0]  # after the finished results were passed on (evaluate_file keeps them)

    async def evaluate_file(
        self,
        path: str | Path,
        out: str | Path,
        *,
        resume: bool = False,
        overwrite: bool = False,
        limit: int | None = None,
        skip_invalid: bool = False,
        on_result: SampleCallback | None = None,
        on_start: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Judge every record of a JSONL file into a run directory; returns the summary."""
        cfg = self.config
        samples, invalid = load_samples(path, cfg.task, skip_invalid=skip_invalid, aspects=cfg.aspects)
        if limit is not None:
            samples = samples[:limit]
        config = self.file_run_config(path)
        with RunDir(out, config, resume=resume, overwrite=overwrite) as run:
            n_samples = len(samples)
            wanted = {s.id for s in samples}
            run.expect(s.id for s in samples)  # summary.json accounts for each of them
            # Each sample is let go once it starts (its record holds what the run keeps), so the
            # inputs and the summary's running totals are never both in memory whole.
            todo = deque(s for s in samples if s.id not in run.done)
            del samples
            if on_start:
                on_start(n_samples, n_samples - len(todo))

            def record(_: int, r: JudgeResult) -> None:
                run.append(r.model_dump(mode="json"))  # on disk as it finishes; not kept here
                if on_result:
                    on_result(r)

            def taken() -> Iterator[Sample]:
                while todo:
                    yield todo.popleft()

            try:
                with watch_sigint():  # a real Ctrl-C stops the run; user code's KeyboardInterrupt fails its sample
                    await self.judge_each(taken(), record)
            finally:
                todo.clear()
                # A second pass over samples.jsonl, a record at a time, into running totals (each
                # record kept only as the few fields the task's summary reads): not held whole.
                records = (r for r in run.iter_records() if r.get("id") in wanted)
                summary = self.run_summary(records, n_samples, config, invalid)
                run.write_summary(summary)  # adds n_expected, n_missing and complete from samples.jsonl
                if run.write_error is None:
                    write_report(run.path, summary)
        return summary

    async def dry_run_file(
        self,
        path: str | Path,
        *,
        limit: int | None = None,
        skip_invalid: bool = False,
        resume_from: str | Path | None = None,
    ) -> DryRunEstimate:
        """What judging the file would send (calls, tokens, cost), simulated: every call is
        answered locally and metered (``chateval.models.dryrun``); no run directory, no cache.
        ``resume_from``: a run directory whose finished samples (status ok) are left out, as
        --resume would (read only: not locked, not checked against this config)."""
        samples, _ = load_samples(path, self.config.task, skip_invalid=skip_invalid, aspects=self.config.aspects)
        if limit is not None:
            samples = samples[:limit]
        notes = adaptive_notes(self.config.escalate, self.config.stop_early)
        if resume_from is not None and (Path(resume_from) / SAMPLES).exists():
            done = {str(r.get("id")) for r in read_jsonl(Path(resume_from) / SAMPLES)[0] if r.get("status") == "ok"}
            left = [s for s in samples if s.id not in done]
            notes.append(f"--resume: {len(samples) - len(left)} samples already done in {resume_from} are not counted")
            samples = left
        with dry_run() as meter:
            results = await self.evaluate(samples)
        return meter.estimate(units=len(samples), failed_units=sum(r.status != "ok" for r in results), notes=notes)

    def file_run_config(self, path: str | Path) -> dict[str, Any]:
        """config.json of a run over the file ``path``: the input's content is part of the run's
        identity, so --resume refuses another file."""
        config = self.run_config() | {"input": str(path)}
        config["judging"] = config["judging"] | {"input_sha256": file_sha256(path)}
        config["config_hash"] = config_hash(config["judging"])
        return config

    def run_summary(
        self,
        records: Iterable[dict[str, Any]],
        n_samples: int,
        config: dict[str, Any],
        invalid: list[InvalidLine] | None = None,
    ) -> dict[str, Any]:
        """summary.json of a run over ``n_samples`` samples from its records (any order; read once)."""
        cfg = self.config
        totals = judged_totals(records)
        summary = totals.summary(task=cfg.task, model=self.layer.label, offline=self.is_offline)
        return summary | {
            "task": cfg.task,
            "strategy": cfg.strategy,
            "agents": len(self.personas),
            "turns": cfg.turns,
            "config_hash": config["config_hash"],
            "complete": len(totals.views) == n_samples,
            "invalid_lines": [i.model_dump() for i in invalid or []],
            "agreement": label_agreement(totals.views, cfg.task),
        }

    def evaluate_file_sync(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return asyncio.run(self.evaluate_file(*args, **kwargs))

    async def aclose(self) -> None:
        await self.layer.close()


# layer_from_config, package_versions and resolve_personas live with Judges; importable from here as before.
__all__ = [
    "Evaluator",
    "InvalidLine",
    "Judges",
    "layer_from_config",
    "load_plugins",
    "package_versions",
    "resolve_personas",
]
