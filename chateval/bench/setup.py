"""What the memory benchmarks share: model layers, embedder, systems, and the two judges."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..debate.samples import Sample
from ..debate.transcript import turn_records
from ..evaluation.config import config_hash, redact_url
from ..evaluation.judges import Judges, package_versions
from ..memory import MEMORY_SYSTEMS, MemorySystem
from ..memory import systems as _systems  # noqa: F401  (registers the built-in systems)
from ..memory.blind import BLINDING
from ..memory.embeddings import Embedder, make_embedder
from ..memory.sampling import combine, load_sampling
from ..memory.systems.http_agent import HttpSettings
from ..memory.systems.http_reach import check_reachable
from ..memory.vector import collection_prefix
from ..models import CallLog, CompletionCache, GenParams, ModelLayer, ModelSpec, RetryPolicy, UsageTotals
from ..models.providers import env_secrets
from ..runs.files import file_sha256
from ..util.errors import ConfigError
from ..util.plugins import import_object
from ..util.prompts import get_prompts
from .config import MemoryBenchConfig
from .executor import current
from .judge import (
    OFFICIAL_JUDGE,
    OFFICIAL_MAX_TOKENS,
    SINGLE_JUDGE,
    ZEP_JUDGE,
    JudgeInputs,
    guidelines_for,
    official_correct,
    zep_correct,
    zep_inputs,
)


@dataclass
class SystemSpec:
    """A system under test: its name in records and --set, and its class (the run builds one
    system of it per unit or conversation, with the run's model layer, embedder and call log)."""

    name: str
    cls: type[MemorySystem]


def _name(cls: type[MemorySystem]) -> str:
    """The name a class was registered under (set on the class itself, not inherited), else
    its class name."""
    return vars(cls).get("name") or cls.__name__


def resolve_system(spec: Any) -> SystemSpec:
    """A registered name, an import path ``package.module:Class`` or a MemorySystem subclass.

    An instance is refused: the run builds a fresh system per unit (or conversation), several at
    once, each bound to the run's model layer, embedder, call log and Qdrant prefix; one user-built
    object can be none of these, and copying one that holds clients is not reliable."""
    obj = spec
    if isinstance(spec, str):
        obj = import_object(spec) if ":" in spec else MEMORY_SYSTEMS.get(spec)
    if isinstance(obj, MemorySystem):
        cls, name = type(obj), _name(type(obj))
        raise ConfigError(
            f"systems: got an instance of {cls.__name__}; give the class ({cls.__name__}) or its "
            f"name '{name}' (the run builds one per unit), and its settings as "
            f"settings={{'{name}': {{...}}}}"
        )
    if isinstance(obj, type) and issubclass(obj, MemorySystem):
        return SystemSpec(name=_name(obj), cls=obj)
    raise ConfigError(
        f"system {spec!r}: not a memory system (a chateval.memory.MemorySystem subclass, its "
        "registered name or an import path package.module:Class)"
    )


def check_settings(settings: dict[str, dict[str, Any]], systems: list[SystemSpec]) -> dict[str, dict[str, Any]]:
    names = [s.name for s in systems]
    for system, kv in settings.items():
        if system not in names:
            key, value = next(iter(kv.items()), ("KEY", "VALUE"))
            raise ConfigError(
                f"--set '{system}.{key}={value}': system '{system}' is not in --systems ({', '.join(names) or 'none'})"
            )
    return {n: dict(settings.get(n, {})) for n in names}


_SECRET_KEYS = ("password", "secret", "token", "api_key", "apikey")


def _redact_value(key: str, value: Any) -> Any:
    if any(s in key.lower() for s in _SECRET_KEYS) and value:
        return "***"
    if isinstance(value, str) and value.startswith(("http://", "https://", "bolt://", "neo4j://")):
        return redact_url(value)  # an agent's or a database's URL: no user:password, no query values
    return value


def redact_settings(settings: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Settings as written to config.json: values of secret-looking keys and URL credentials are masked."""
    return {system: {k: _redact_value(k, v) for k, v in kv.items()} for system, kv in settings.items()}


class MemoryBench:
    """Built once per run from the benchmark's config."""

    def __init__(self, config: MemoryBenchConfig, *, need_judges: bool = True) -> None:
        self.config, self.need_judges = config, need_judges
        self.specs = [resolve_system(s) for s in config.systems]  # unknown names fail before any work
        dup = [n for i, n in enumerate(s.name for s in self.specs) if n in [x.name for x in self.specs[:i]]]
        if dup:
            raise ConfigError(f"--systems: '{dup[0]}' is given twice")
        self.systems: list[str] = [s.name for s in self.specs]
        self.settings = check_settings(config.settings, self.specs)
        for spec in self.specs:  # invalid settings fail before any work too
            parsed = spec.cls.parse_settings(self.settings[spec.name])
            if isinstance(parsed, HttpSettings):  # a dead agent: one line now, not a failure per unit
                check_reachable(parsed)
        self.workers = config.workers
        cache = None if not config.cache else CompletionCache(config.cache_dir)
        secrets = env_secrets()
        retry = RetryPolicy(
            max_retries=config.max_retries, timeout_s=config.timeout_s, base_delay_s=config.retry_base_delay_s
        )
        self.sampling = combine(load_sampling(config.sampling), config.temperature, config.step_temperature)
        temperature, steps = self.sampling.resolved()
        self.answer_layer = ModelLayer(
            ModelSpec.parse(config.answer_model, config.base_url),
            retry=retry,
            max_connections=config.max_connections,
            cache=cache,
            secrets=secrets,
            params=GenParams(temperature=temperature),
            structured=config.structured,
            step_temperatures=steps,
        )
        self.judge_spec = config.judge_model or config.answer_model
        if self.judge_spec == config.answer_model and self.sampling.deterministic:
            self.judge_layer = self.answer_layer
        else:  # the judges keep their own (deterministic) parameters whatever the systems sample at
            self.judge_layer = self.answer_layer.derive(
                ModelSpec.parse(self.judge_spec, config.base_url), params=GenParams(), step_temperatures={}
            )
        self.judge_mode: str = config.judge
        self.judge_protocol: str = config.judge_protocol
        # The official protocol's generation settings (LongMemEval's evaluate_qa.py): greedy, a
        # short plain reply.
        self.official_judge_layer = self.judge_layer.derive(
            params=GenParams(temperature=0.0, max_tokens=OFFICIAL_MAX_TOKENS)
        )
        self.prompts = get_prompts(tuple(config.prompt_dirs))
        self.embedder: Embedder = make_embedder(
            config.embedder,
            cache=config.cache,
            layer=self.answer_layer,
            base_url=config.embedder_base_url or config.base_url,
            batch_size=config.embedder_batch_size,
        )
        if embedding := [spec.name for spec in self.specs if spec.cls.uses_embedder]:
            try:  # a missing extra: one line now, not a failure per unit
                self.embedder.check_available()
            except ConfigError as e:  # say who needs it and the way round it
                raise ConfigError(
                    f"{e}, for {', '.join(embedding)}; or --embedder hash (no model, for trying the "
                    "pipeline); an agent that embeds nothing declares uses_embedder = False"
                ) from None
        # The debate judge (--judge debate/both), built from the benchmark's config like every panel.
        self.debate_judges: Judges | None = None
        if need_judges and self.judge_mode in ("debate", "both"):
            self.debate_judges = self.panel_judges({"task": "correctness"})
        if config.qdrant_url and not config.qdrant_url.startswith(("http://", "https://")):
            raise ConfigError(f"--qdrant-url '{redact_url(config.qdrant_url)}': expected an http(s):// URL")
        if config.qdrant_url:
            from ..memory.vector import check_server

            check_server(config.qdrant_url)  # every unit would fail otherwise: say so once, up front
        # Qdrant collections of this run: chateval-<run folder>-<6 hex>-<system>-<8 hex>, deleted
        # as each unit's system closes.
        self.collection_prefix = collection_prefix(Path(config.out).name, uuid.uuid4().hex[:6])

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent to a Ray worker as its settings: the worker builds its own model layers, embedder,
        # caches and clients (none of which can cross a process boundary).
        return (_rebuilt, (self.config, self.need_judges))

    def panel_judges(self, task_settings: dict[str, Any]) -> Judges:
        """A debate panel of --judge-preset on the judge model and its layer, with
        ``task_settings`` (e.g. ``{"task": "pairwise", "swap": True}``) on top."""
        settings = task_settings | {"model": self.judge_spec, "structured": self.config.structured}
        return Judges.from_preset(self.config.judge_preset, settings, layer=self.judge_layer)

    def embedding_usage(self) -> dict[str, Any] | None:
        """This run's remote embedding calls (step "embed"); None for a local embedder."""
        client = getattr(self.embedder, "client", None)
        if client is None:
            return None
        usage = client.log.totals()
        if (remote := current().meters.embedding_usage) is not None:  # the Ray workers' calls
            usage.merge(remote)
        return usage.model_dump()

    def embedding_work(self) -> dict[str, Any]:
        """What this run embedded (this process and, with --executor ray, its workers): texts
        actually encoded (cache misses) and the time it took, summed over the processes (a
        resumed run counts its own attempt only; a warm embedding cache makes both small)."""
        remote = current().meters  # with --executor ray the workers embed: their work counts too
        return {
            "embedder": self.embedder.name,
            "computed": self.embedder.computed + remote.embedded,
            "embed_s": round(self.embedder.embed_s + remote.embed_s, 3),
        }

    def resolved_settings(self) -> dict[str, dict[str, Any]]:
        """Every system's settings with defaults filled in (what config.json records)."""
        return {s.name: s.cls.parse_settings(self.settings[s.name]).model_dump(mode="json") for s in self.specs}

    def spec(self, name: str) -> SystemSpec:
        return next(s for s in self.specs if s.name == name)

    def new_system(self, name: str, log: CallLog) -> MemorySystem:
        """A fresh system for one unit (or group of cases)."""
        spec = self.spec(name)
        system = spec.cls(
            self.answer_layer,
            settings=self.settings[name],
            embedder=self.embedder,
            qdrant=self.config.qdrant_url,
            log=log,
        )
        system.collection_prefix = collection_prefix(name, base=self.collection_prefix)
        # --reader-max-tokens (LongMemEval, LoCoMo): the answer step's output limit
        system.answer_max_tokens = getattr(self.config, "reader_max_tokens", None)
        return system

    def release(self, name: str, system: MemorySystem) -> None:
        """Close a unit's system (synchronous callers: a Qdrant deletion then runs as a task of
        the running loop, awaited by ``vector.settle()`` before the run returns)."""
        system.close()

    async def arelease(self, name: str, system: MemorySystem) -> None:
        await system.aclose()

    @asynccontextmanager
    async def system(self, name: str, log: CallLog) -> AsyncIterator[MemorySystem]:
        system = self.new_system(name, log)
        try:
            yield system
        finally:
            await self.arelease(name, system)

    def run_config(self, extra: dict[str, Any]) -> dict[str, Any]:
        """config.json: everything that changes results is in ``judging`` (hashed for --resume)."""
        judging = {
            "systems": self.systems,
            "settings": redact_settings(self.resolved_settings()),
            "system_classes": {s.name: f"{s.cls.__module__}:{s.cls.__qualname__}" for s in self.specs},
            "answer_model": self.answer_layer.label,
            "base_url": redact_url(self.answer_layer.spec.base_url),
            "judge": self.judge_mode,
            "judge_protocol": self.judge_protocol,
            "judge_model": self.judge_layer.label,
            "embedder": self.embedder.name,
            "embedder_base_url": redact_url(getattr(getattr(self.embedder, "client", None), "url", None)),
            "judge_panel": self.debate_judges.run_config()["judging"] if self.debate_judges else None,
            # What a system under test is given (issue 34): earlier runs saw the data set's ids
            # and gold labels, so they do not resume into blinded ones.
            "blinding": BLINDING,
        } | extra
        if getattr(self.config, "reader_max_tokens", None) is not None:  # likewise recorded only when set
            judging["reader_max_tokens"] = self.config.reader_max_tokens  # type: ignore[attr-defined]
        if not self.sampling.deterministic:  # recorded only when set: a default run keeps its identity
            judging["sampling"] = self.sampling.model_dump()
        if extra.get("data"):  # the data's content is part of the run's identity (--resume refuses another)
            judging["data_sha256"] = file_sha256(extra["data"])
        return {
            "judging": judging,
            "config_hash": config_hash(judging),
            "versions": package_versions(),
            "offline": self.ran_offline(extra),
            "qdrant": "server" if self.config.qdrant_url else "embedded",
        }

    def ran_offline(self, extra: dict[str, Any]) -> bool:
        """Whether the offline model did any of this run's work: the answers (only systems answer;
        baseline rankers and a file of answers use no model), the judgements (unless none are
        made), or TeaFarm's questions. An unused model left at its ``offline`` default is not."""
        answers = bool(self.systems) and self.answer_layer.spec.is_offline
        judged = bool(self.debate_judges) or (extra.get("uses_judge", True) and self.judge_mode in ("single", "both"))
        generated = str(extra.get("generator_model") or "") == "offline"
        return answers or (judged and self.judge_layer.spec.is_offline) or generated

    async def judge(
        self,
        *,
        question: str,
        gold: str,
        response: str,
        question_type: str,
        abstention: bool,
        rule: str = "",
        context: str | None = None,
    ) -> dict[str, Any]:
        """Judge one answer with the configured judge(s); returns verdicts, agreement and usage.
        ``rule`` replaces the question type's judging instructions (both judges); ``context``
        is shown to the panel only (the single judge sees question, gold answer and response)."""
        out: dict[str, Any] = {}
        usage = UsageTotals()
        if self.judge_mode in ("single", "both"):
            log = CallLog()
            inputs = JudgeInputs(
                question=question,
                gold=gold,
                response=response,
                question_type=question_type,
                abstention=abstention,
                rule=rule,
            )
            if self.judge_protocol == "official":
                reply = await OFFICIAL_JUDGE.run(self.official_judge_layer, inputs, log=log, prompts=self.prompts)
                out["single"] = {"correct": official_correct(reply), "reason": reply[:200], "protocol": "official"}
            elif self.judge_protocol == "zep":  # Zep's own LongMemEval grader (judge.py, below the default judge)
                grade = await ZEP_JUDGE.run(self.judge_layer, zep_inputs(inputs), log=log, prompts=self.prompts)
                out["single"] = {"correct": zep_correct(grade), "reason": grade.is_correct[:200], "protocol": "zep"}
            else:
                verdict = await SINGLE_JUDGE.run(self.judge_layer, inputs, log=log, prompts=self.prompts)
                out["single"] = {"correct": verdict.correct, "reason": verdict.reason}
            usage.merge(log.totals())
        if self.judge_mode in ("debate", "both") and self.debate_judges is not None:
            result = await self.debate_judges.judge(
                Sample(
                    id="judge",
                    question=question,
                    answer=response,
                    reference=gold,
                    context=context,
                    guidelines=rule or guidelines_for(question_type, abstention),
                    meta={"abstention": abstention},
                ),
                "correctness",
            )
            panel = result.verdict
            out["debate"] = {
                "correct": None if panel is None else panel.correct,
                "tie": bool(panel and panel.tie),
                "votes": panel.votes if panel else {},
                "status": result.status,
                "error": result.error,
                "agents": [a.model_dump() for a in result.agents],
                "transcript": turn_records(result.transcript),
            }
            usage.merge(result.usage)
        if "single" in out and "debate" in out:
            d = out["debate"]["correct"]
            out["agreement"] = None if d is None else d == out["single"]["correct"]
        primary = out.get("single", out.get("debate", {}))
        out["correct"] = primary.get("correct")
        out["usage"] = usage.model_dump()
        return out


def _rebuilt(config: MemoryBenchConfig, need_judges: bool) -> MemoryBench:
    return MemoryBench(config, need_judges=need_judges)


def judge_error(verdict: dict[str, Any]) -> str | None:
    """Why a judgement is unusable (a judge that failed after its retries), or None. A unit with
    such a verdict is failed — counted, redone by --resume, exit 1 — never scored as it is."""
    debate = verdict.get("debate")
    if debate is not None and debate.get("status") != "ok":
        return f"judge (debate): {debate.get('error') or 'failed'}"
    return None
