"""``Judges``: the debate panels one judge configuration describes — its model layer, personas,
prompts and a ``Panel`` per task — and the settings of it that config.json records.

The one place panels are built from an ``EvalConfig``: the ``Evaluator`` facade wraps a
``Judges``, and the benchmarks build theirs directly (the facade's file runs, dry runs and
summaries are not theirs to carry). It imports only downward (debate, models, util)."""

from __future__ import annotations

import importlib.metadata as md
from typing import Any

from ..debate import NO_PERSONA, JudgeResult, Panel, Persona, PersonaLibrary, Sample
from ..debate.personas import slugify
from ..debate.tasks import get_task
from ..models import CompletionCache, GenParams, ModelLayer, ModelSpec, RetryPolicy
from ..models.providers import env_secrets
from ..util.errors import ConfigError
from ..util.plugins import load_plugins
from ..util.prompts import get_prompts
from .config import DEFAULT_PERSONAS, EvalConfig, config_hash, find_preset, load_preset, redact_url
from .repeats import judge_repeated


def resolve_personas(cfg: EvalConfig, library: PersonaLibrary) -> list[Persona]:
    if cfg.framing == "none":
        # ChatEval's single-agent setting: one judge, one turn, no persona to choose.
        if (cfg.agents or 1) != 1 or cfg.turns != 1:
            raise ConfigError(
                f"--framing none is the single-agent setting: one agent for one turn "
                f"(got --agents {cfg.agents or 1} --turns {cfg.turns}); use --agents 1 --turns 1 "
                "or the `single` preset"
            )
        return [NO_PERSONA]
    names = list(cfg.personas) if cfg.personas else DEFAULT_PERSONAS[: cfg.agents or 2]
    n = cfg.agents or len(names)
    if len(names) < n:
        # Grow a preset's panel for --agents N with ChatEval's roles not yet on it.
        names += [p for p in DEFAULT_PERSONAS if p not in names][: n - len(names)]
        if len(names) < n:
            raise ConfigError(f"--agents {n} needs {n} personas; give them with --personas a,b,...")
    return with_debater_models([library.get(name) for name in names[:n]], cfg)


def with_debater_models(personas: list[Persona], cfg: EvalConfig) -> list[Persona]:
    """The panel's personas with the model specs ``debater_models`` gives them (over their files')."""
    if not cfg.debater_models:
        return personas
    by_slug = {slugify(name): name for name in cfg.debater_models}
    unknown = sorted(set(by_slug) - {p.slug for p in personas} - {slugify(p.name) for p in personas})
    if unknown:
        raise ConfigError(
            f"--debater-model '{by_slug[unknown[0]]}': no such debater on the panel "
            f"(debaters: {', '.join(p.slug for p in personas)})"
        )
    out = []
    for p in personas:
        own = cfg.debater_models.get(by_slug.get(p.slug, ""))
        out.append(p.model_copy(update=own.model_dump(exclude_none=True)) if own else p)
    return out


def persona_payload(p: Persona) -> dict[str, Any]:
    """A persona as the config hash covers it: its own endpoint's fields only when set (runs made
    before they existed keep their hash), the base URL without credentials."""
    data = p.model_dump()
    for key in ("base_url", "api_key_env", "price", "max_connections"):
        if data[key] is None:
            del data[key]
    if "base_url" in data:
        data["base_url"] = redact_url(data["base_url"])
    return data


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


class Judges:
    """The panels of one judge configuration. ``layer`` shares a model layer (one cache, one
    connection limit, one meter) with other judges; by default the config's own is built.

    >>> judges = Judges.from_preset("chateval_default", {"task": "correctness", "model": "offline"})
    >>> result = await judges.judge(Sample(id="q1", question="Q?", answer="A", reference="A"))
    """

    def __init__(self, config: EvalConfig, *, layer: ModelLayer | None = None) -> None:
        self.config = config
        load_plugins(config.plugins)
        self.library = PersonaLibrary(config.persona_dirs)
        self.personas = resolve_personas(config, self.library)
        self.prompts = get_prompts(tuple(config.prompt_dirs))
        self.layer = layer or layer_from_config(config)
        self._panels: dict[str, Panel] = {}
        self._repeats: dict[str, list[Panel]] = {}
        self.panel(config.task)  # validate the configured task's panel now, not at the first sample

    @classmethod
    def from_preset(cls, preset: str, settings: dict[str, Any], *, layer: ModelLayer | None = None) -> Judges:
        """The preset (a strategies/ name or a YAML file) with ``settings`` on top."""
        load_plugins(settings.get("plugins") or [])  # first: a preset may name a task a plugin registers
        return cls(EvalConfig.merged(load_preset(find_preset(preset)), settings), layer=layer)

    def __reduce__(self) -> tuple[Any, ...]:
        # To a Ray worker: its config and model layer (which pickles as its settings).
        return (_rebuilt, (self.config, self.layer))

    @property
    def is_offline(self) -> bool:
        return self.layer.spec.is_offline

    def panel(self, task: str) -> Panel:
        if task not in self._panels:
            self._panels[task] = self._build(task, self.layer)
        return self._panels[task]

    def repeats(self, task: str) -> list[Panel]:
        """--samples N: the panel and N-1 repeats of it, each keeping its own replies in the cache
        (the first shares the plain judge's, so a run without --samples is its first repeat)."""
        if task not in self._repeats:
            self._repeats[task] = [self.panel(task)] + [
                self._build(task, self.layer.derive(cache_salt=f"sample {i + 1}"))
                for i in range(1, self.config.samples)
            ]
        return self._repeats[task]

    def _build(self, task: str, layer: ModelLayer) -> Panel:
        cfg = self.config
        fmt = get_task(task)
        method = cfg.aggregate or fmt.default_aggregate
        return Panel(
            task=task,
            personas=self.personas,
            strategy=cfg.strategy,
            turns=cfg.turns,
            aggregate=method,
            layer=layer,
            prompts=self.prompts,
            swap=cfg.swap and task == "pairwise",
            keep_raw_history=cfg.keep_raw_history,
            structured=cfg.structured,
            summary_mode=cfg.summary_mode,
            hold_scores=cfg.hold_scores,
            framing=cfg.framing,
            layout=cfg.prompt_layout,
            # --escalate is refused for a configured task it does not apply to; the API's other
            # tasks (score/check on a pairwise judge) simply run without it, like --swap.
            escalate=cfg.escalate and (task == "pairwise" or task == cfg.task),
            stop_early=cfg.stop_early,
        )

    async def judge(self, sample: Sample, task: str | None = None) -> JudgeResult:
        """One sample judged by the panel of ``task`` (default: the configured task); with
        --samples N by N repeats of it, the majority verdict with their spread."""
        task = task or self.config.task
        if self.config.samples > 1:
            return await judge_repeated(self.repeats(task), sample)
        return await self.panel(task).judge(sample)

    def run_config(self) -> dict[str, Any]:
        """What config.json records: resolved settings, versions and the config hash (over
        ``judging``, everything that changes verdicts: settings, persona texts, template sources)."""
        cfg = self.config
        panel = self.panel(cfg.task)
        judging = cfg.judging_payload() | {
            "base_url": redact_url(self.layer.spec.base_url),  # the effective one (CHATEVAL_BASE_URL too)
            "aggregate": panel.aggregate,
            "personas": [persona_payload(p) for p in self.personas],
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

    async def aclose(self) -> None:
        await self.layer.close()


def _rebuilt(config: EvalConfig, layer: ModelLayer) -> Judges:
    return Judges(config, layer=layer)


__all__ = ["Judges", "layer_from_config", "package_versions", "resolve_personas", "with_debater_models"]
