"""The Python API: ``Evaluator`` judges single items or whole files with a debate panel."""

from __future__ import annotations

import asyncio
import importlib.metadata as md
from pathlib import Path
from typing import Any, Callable

from ..models.budget import cap_reached, set_unit, skip_unit
from .config import DEFAULT_PERSONAS, EvalConfig, config_hash, find_preset, load_preset, redact_url
from ..debate import NO_PERSONA, JudgeResult, Panel, Persona, PersonaLibrary, Sample
from ..debate.tasks import get_task
from ..util.errors import ConfigError
from .report import label_agreement, write_report
from .inputs import InvalidLine, load_samples
from ..util.interrupts import watch_sigint
from ..models.dryrun import DryRunEstimate, adaptive_notes, dry_run
from ..models.providers import env_secrets
from ..models import CompletionCache, GenParams, ModelLayer, ModelSpec, RetryPolicy
from ..models.reach import watch_endpoints
from ..util.prompts import get_prompts
from ..util.plugins import load_plugins
from ..runs.directory import SAMPLES, RunDir, file_sha256, read_jsonl
from .summary import summarize_judged

SampleCallback = Callable[[JudgeResult], None]


def resolve_personas(cfg: EvalConfig, library: PersonaLibrary) -> list[Persona]:
    if cfg.framing == "none":
        # ChatEval's single-agent setting: one judge, one turn, no persona to choose.
        if (cfg.agents or 1) != 1 or cfg.turns != 1:
            raise ConfigError(f"--framing none is the single-agent setting: one agent for one turn "
                              f"(got --agents {cfg.agents or 1} --turns {cfg.turns}); use --agents 1 --turns 1 "
                              "or the `single` preset")
        return [NO_PERSONA]
    names = list(cfg.personas) if cfg.personas else DEFAULT_PERSONAS[: cfg.agents or 2]
    n = cfg.agents or len(names)
    if len(names) < n:
        # Grow a preset's panel for --agents N with ChatEval's roles not yet on it.
        names += [p for p in DEFAULT_PERSONAS if p not in names][: n - len(names)]
        if len(names) < n:
            raise ConfigError(f"--agents {n} needs {n} personas; give them with --personas a,b,...")
    return [library.get(name) for name in names[:n]]


def layer_from_config(cfg: EvalConfig) -> ModelLayer:
    """The model layer an EvalConfig describes (model, generation, retries, limit, cache)."""
    return ModelLayer(
        ModelSpec.parse(cfg.model, cfg.base_url),
        params=GenParams(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed),
        retry=RetryPolicy(max_retries=cfg.max_retries, timeout_s=cfg.timeout_s, base_delay_s=cfg.retry_base_delay_s),
        max_connections=cfg.max_connections,
        cache=CompletionCache(cfg.cache_dir) if cfg.cache else None,
        structured=cfg.structured,
        secrets=env_secrets(),
    )


def package_versions() -> dict[str, str]:
    out = {}
    for pkg in ("chateval", "autogen-agentchat", "autogen-ext", "openai", "pydantic", "jinja2"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _rebuilt_evaluator(config: EvalConfig, layer: ModelLayer) -> "Evaluator":
    return Evaluator(config, layer=layer)


class Evaluator:
    """A debate-panel judge.

    >>> ev = Evaluator(model="offline")                     # or Evaluator.from_preset("chateval_default")
    >>> result = ev.compare_sync("Q?", "answer A", "answer B")
    >>> result.verdict.winner                               # '1', '2' or 'tie'
    """

    def __init__(self, config: EvalConfig | None = None, *, layer: ModelLayer | None = None, **settings: Any) -> None:
        self.config = EvalConfig.merged(config.model_dump() if config else {}, settings)
        cfg = self.config
        load_plugins(cfg.plugins)
        self.library = PersonaLibrary(cfg.persona_dirs)
        self.personas = resolve_personas(cfg, self.library)
        self.prompts = get_prompts(tuple(cfg.prompt_dirs))
        self.layer = layer or layer_from_config(cfg)
        self._panels: dict[str, Panel] = {}
        self.panel(cfg.task)  # validate the configured task's panel now, not at the first sample

    def __reduce__(self) -> tuple[Any, ...]:
        # To a Ray worker: its config and model layer (which pickles as its settings).
        return (_rebuilt_evaluator, (self.config, self.layer))

    @classmethod
    def from_preset(cls, preset: str, **settings: Any) -> "Evaluator":
        dirs = settings.get("persona_dirs")  # presets are looked up in the built-in strategies/
        load_plugins(settings.get("plugins") or [])  # first: a preset may name a task a plugin registers
        data = load_preset(find_preset(preset, None if dirs is None else []))
        return cls(EvalConfig.merged(data, {k: v for k, v in settings.items()}))

    @property
    def is_offline(self) -> bool:
        return self.layer.spec.is_offline

    def panel(self, task: str) -> Panel:
        if task not in self._panels:
            cfg = self.config
            fmt = get_task(task)
            method = cfg.aggregate or fmt.default_aggregate
            self._panels[task] = Panel(
                task=task, personas=self.personas, strategy=cfg.strategy, turns=cfg.turns,
                aggregate=method, layer=self.layer, prompts=self.prompts,
                swap=cfg.swap and task == "pairwise", keep_raw_history=cfg.keep_raw_history,
                structured=cfg.structured, summary_mode=cfg.summary_mode, hold_scores=cfg.hold_scores,
                framing=cfg.framing, layout=cfg.prompt_layout,
                # --escalate is refused for a configured task it does not apply to; the API's other
                # tasks (score/check on a pairwise judge) simply run without it, like --swap.
                escalate=cfg.escalate and (task == "pairwise" or task == cfg.task), stop_early=cfg.stop_early,
            )
        return self._panels[task]

    # --- single items -------------------------------------------------------------------
    async def judge(self, sample: Sample, task: str | None = None) -> JudgeResult:
        return await self.panel(task or self.config.task).judge(sample)

    async def compare(self, question: str, answer_1: str, answer_2: str, *, context: Any = None,
                      reference: str | None = None, id: str = "sample") -> JudgeResult:
        return await self.judge(Sample(id=id, question=question, answer_1=answer_1, answer_2=answer_2,
                                       context=context, reference=reference), "pairwise")

    async def score(self, question: str, answer: str, *, context: Any = None, reference: str | None = None,
                    aspects: list[str] | None = None, id: str = "sample") -> JudgeResult:
        return await self.judge(Sample(id=id, question=question, answer=answer, context=context,
                                       reference=reference, aspects=aspects or self.config.aspects), "score")

    async def check(self, question: str, answer: str, reference: str, *, context: Any = None,
                    id: str = "sample") -> JudgeResult:
        return await self.judge(Sample(id=id, question=question, answer=answer, reference=reference,
                                       context=context), "correctness")

    def compare_sync(self, *args: Any, **kwargs: Any) -> JudgeResult:
        return asyncio.run(self.compare(*args, **kwargs))

    def score_sync(self, *args: Any, **kwargs: Any) -> JudgeResult:
        return asyncio.run(self.score(*args, **kwargs))

    def check_sync(self, *args: Any, **kwargs: Any) -> JudgeResult:
        return asyncio.run(self.check(*args, **kwargs))

    # --- files --------------------------------------------------------------------------
    def run_config(self) -> dict[str, Any]:
        """What config.json records: resolved settings, versions and the config hash."""
        cfg = self.config
        panel = self.panel(cfg.task)
        judging = cfg.judging_payload() | {
            "base_url": redact_url(self.layer.spec.base_url),  # the effective one (CHATEVAL_BASE_URL too)
            "aggregate": panel.aggregate,
            "personas": [p.model_dump() for p in self.personas],
            "templates": panel.prompts.source_digest(panel.templates()),  # with the task's own templates
        }
        return {
            "config": cfg.public() | {"personas": [p.slug for p in self.personas]},
            "model": self.layer.label,
            "offline": self.is_offline,
            "judging": judging,
            "config_hash": config_hash(judging),
            "versions": package_versions(),
        }

    async def evaluate(self, samples: list[Sample], *, on_result: SampleCallback | None = None,
                       concurrency: int | None = None) -> list[JudgeResult]:
        """Judge many samples concurrently (results in input order). Under a cost cap
        (``chateval.models.budget.cost_cap``) samples not started once it is reached are left out."""
        # Twice as many samples in flight as connections: a sample between two of its sequential
        # calls (parsing, building the next prompt) leaves its connection to another sample, so the
        # connection limit, not sample scheduling, is what bounds throughput.
        limit = asyncio.Semaphore(concurrency or 2 * self.layer.max_connections)
        with watch_endpoints() as down:

            async def one(s: Sample) -> JudgeResult | None:
                async with limit:
                    if down:  # an endpoint cannot be reached: start nothing more
                        return None
                    if cap_reached():  # --max-cost: no new sample once the cap is spent; running ones finish
                        skip_unit()
                        return None
                    set_unit(s.id)  # this task's model calls belong to this sample (dry-run prefix sharing)
                    r = await self.judge(s)
                if down and r.status != "ok":
                    return None  # failed because the run is stopping: not recorded, so --resume redoes it
                if on_result:
                    on_result(r)
                return r

            tasks = [asyncio.ensure_future(one(s)) for s in samples]
            try:
                results = list(await asyncio.gather(*tasks))
            except BaseException:
                # on_result failed (a run that cannot be written): stop the other samples now, or
                # they would go on paying for calls whose results cannot be kept.
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        if down:
            raise down[0]  # after the finished results were passed on (evaluate_file keeps them)
        return [r for r in results if r is not None]

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
            run.expect(s.id for s in samples)  # summary.json accounts for each of them
            todo = [s for s in samples if s.id not in run.done]
            if on_start:
                on_start(len(samples), len(samples) - len(todo))

            def record(r: JudgeResult) -> None:
                run.append(r.model_dump(mode="json"))
                if on_result:
                    on_result(r)

            try:
                with watch_sigint():  # a real Ctrl-C stops the run; user code's KeyboardInterrupt fails its sample
                    await self.evaluate(todo, on_result=record)
            finally:
                wanted = {s.id for s in samples}
                summary = self.run_summary([r for r in run.records() if r.get("id") in wanted], len(samples),
                                           config, invalid)
                run.write_summary(summary)  # adds n_expected, n_missing and complete from samples.jsonl
                if run.write_error is None:
                    write_report(run.path, summary)
        return summary

    async def dry_run_file(self, path: str | Path, *, limit: int | None = None, skip_invalid: bool = False,
                           resume_from: str | Path | None = None) -> DryRunEstimate:
        """What judging the file would send (calls, tokens, cost), simulated: every call is
        answered locally and metered (``chateval.models.dryrun``); no run directory, no cache.
        ``resume_from``: a run directory whose finished samples (status ok) are left out, as
        --resume would (read only: not locked, not checked against this config)."""
        samples, _ = load_samples(path, self.config.task, skip_invalid=skip_invalid, aspects=self.config.aspects)
        if limit is not None:
            samples = samples[:limit]
        notes = adaptive_notes(self.config)
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

    def run_summary(self, records: list[dict[str, Any]], n_samples: int, config: dict[str, Any],
                    invalid: list[InvalidLine] | None = None) -> dict[str, Any]:
        """summary.json of a run over ``n_samples`` samples from its records (any order)."""
        cfg = self.config
        summary = summarize_judged(records, task=cfg.task, model=self.layer.label, offline=self.is_offline)
        return summary | {
            "task": cfg.task, "strategy": cfg.strategy, "agents": len(self.personas), "turns": cfg.turns,
            "config_hash": config["config_hash"], "complete": len(records) == n_samples,
            "invalid_lines": [i.model_dump() for i in invalid or []],
            "agreement": label_agreement(records, cfg.task),
        }

    def evaluate_file_sync(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return asyncio.run(self.evaluate_file(*args, **kwargs))

    async def aclose(self) -> None:
        await self.layer.close()


__all__ = ["Evaluator", "InvalidLine", "load_plugins", "resolve_personas"]
