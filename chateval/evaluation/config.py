"""Evaluation settings: one pydantic model, merged CLI-over-preset-over-default."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..util.endpoints import EndpointFields, parse_debater_models
from ..util.errors import ConfigError
from ..util.options import check_base_url, check_dir, check_names, merge_layers, opt
from ..util.paths import search_path
from ..util.plugins import load_plugins
from ..util.registry import did_you_mean
from ..util.secrets import redact_url
from ..util.yamlfiles import load_mapping

# The order in which personas are added when only --agents is given (ChatEval's five roles).
DEFAULT_PERSONAS = ["general_public", "critic", "news_author", "psychologist", "scientist"]


class LayerSettings(BaseModel):
    """The model layer's limits, shared by every command: concurrency, retries, timeouts, cache."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    structured: Literal["auto", "on", "off"] = opt(
        "auto",
        "JSON-schema response_format on typed steps and verdicts: auto asks and stops asking an "
        "endpoint that answers it with HTTP 400; on always; off never (prompts describe the schema anyway)",
    )
    base_url: str | None = opt(
        None,
        "the model endpoint (required for openai-compatible, else CHATEVAL_BASE_URL; overrides other providers' "
        "defaults); several URLs, comma-separated or "
        "with the flag repeated, form a pool: each call goes to the least busy endpoint",
        repeat=True,
    )
    max_connections: int = opt(8, "model calls in flight at once, shared by all calls", ge=1)
    max_retries: int = opt(4, "retries on 429/5xx/timeouts/connection errors", ge=0)
    timeout_s: float = opt(120.0, "seconds per model call attempt", flags=["--timeout"], gt=0)
    retry_base_delay_s: float = opt(
        1.0, "seconds before the first retry, doubled each retry, with jitter", flags=["--retry-base-delay"], ge=0
    )
    cache: bool = opt(True, "use the on-disk completion cache")
    cache_dir: str | None = opt(
        None, "completion cache folder (default ~/.cache/chateval/completions or CHATEVAL_CACHE_DIR)"
    )

    _cache_dir = field_validator("cache_dir")(check_dir)
    _base_url = field_validator("base_url", mode="before")(check_base_url)


class EvalConfig(LayerSettings):
    """The debate panel and its model: every setting of ``chateval evaluate`` (and of the judge
    meta-benchmarks), with its help text; the CLI builds its options from these fields."""

    model_config = ConfigDict(extra="forbid")

    task: str = opt("pairwise", "what the panel judges: pairwise, score, correctness, or a task a plugin registers")
    strategy: str = opt("one_by_one", "communication strategy (see `chateval strategies`)")
    personas: list[str] | None = opt(None, "comma-separated persona names (see `chateval personas`)")
    agents: int | None = opt(None, "number of debaters", ge=1)
    turns: int = opt(2, "debate rounds", ge=1)
    aggregate: Literal["vote", "mean"] | None = opt(
        None,
        "mean of the debaters' scores (default when the format asks for scores: pairwise, score) or "
        "majority vote (default when it names a winner: correctness)",
    )
    swap: bool = opt(False, "pairwise: judge both answer orders and combine per agent (position calibration)")
    summary_mode: Literal["append", "replace"] = opt(
        "append",
        "simultaneous_summarizer: append each round's summary to every debater's history (ChatEval) "
        "or replace the history with the latest summary",
    )
    keep_raw_history: bool = opt(False, "older spelling of --summary-mode append", hidden=True)
    hold_scores: bool = opt(False, "tell debaters to hold their scores until the last round (ChatEval does not)")
    framing: Literal["panel", "none"] = opt(
        "panel",
        "panel: each judge gets its persona and the panel framing; none: ChatEval's single-agent "
        "setting, one judge with no persona and no panel framing (needs --agents 1 --turns 1; personas are "
        "not used; the `single` preset)",
    )
    prompt_layout: Literal["shared-prefix", "persona-first"] = opt(
        "shared-prefix",
        "debater system prompts: the task and data first, identical for every debater so "
        "provider prompt caches reuse them (shared-prefix, as ChatEval's template orders them), or the "
        "persona first (persona-first, the earlier layout)",
    )
    aspects: list[str] | None = opt(None, "score task: aspects to rate (e.g. naturalness,coherence)")
    escalate: bool = opt(
        False,
        "pairwise: the single judge (one turn, no persona or panel framing) answers in both orders first; "
        "the panel debates only the items where its two verdicts differ (judge benchmarks: "
        "adds a multi-escalate setting beside the panel-only multi, compared paired)",
    )
    stop_early: bool = opt(
        False,
        "debaters end each round with a provisional verdict; once all state the same one "
        "(pairwise: winner; correctness: verdict; score: identical scores), the remaining "
        "rounds are skipped",
    )

    model: str = opt(
        "offline", "offline (default) or PROVIDER/<model>: openai, openai-compatible, azure, gemini, anthropic, ollama"
    )
    debater_models: dict[str, EndpointFields] = opt(
        dict,
        "one debater's own model spec: NAME=PROVIDER/MODEL, or NAME.FIELD=VALUE for its base_url, "
        "api_key_env (the variable holding its key), price (IN,OUT USD per million tokens) or "
        "max_connections (NAME: a persona of the panel; a preset gives a mapping)",
        flags=["--debater-model"],
        repeat=True,
        metavar="NAME[.FIELD]=VALUE",
    )
    temperature: float = opt(0.0, "sampling temperature", ge=0)
    samples: int = opt(
        1,
        "self-consistency: judge each item N times (needs --temperature above 0); the verdict is the "
        "majority of the N, and each item reports how far its repeats agree",
        ge=1,
    )
    max_tokens: int | None = opt(1024, "completion token limit per call", ge=1)
    seed: int | None = opt(None, "sampling seed, where the endpoint supports one")

    persona_dirs: list[str] = opt(list, "extra folder of persona YAML files", flags=["--persona-dir"], repeat=True)
    prompt_dirs: list[str] = opt(
        list, "extra folder of prompt templates (overrides by name)", flags=["--prompt-dir"], repeat=True
    )
    plugins: list[str] = opt(
        list,
        "a .py file, package folder or module to import first (e.g. one registering a custom strategy)",
        flags=["--plugin"],
        repeat=True,
    )

    _names = field_validator("personas", "aspects")(check_names)

    @field_validator("debater_models", mode="before")
    @classmethod
    def _debater_models(cls, v: Any) -> Any:
        """The command line gives a list of NAME[.FIELD]=VALUE; a preset a mapping."""
        return parse_debater_models(v) if isinstance(v, list) else v

    @model_validator(mode="after")
    def _registered_task(self) -> EvalConfig:
        """The task must be registered: a built-in, or one of the plugins this config loads
        (they are imported here first, as the Evaluator would)."""
        load_plugins(self.plugins)
        # Here, not at import: the command line builds its options from this model at start-up,
        # and the debate package (autogen, the model layer) is not needed to show --help.
        from ..debate.tasks import TASKS, task_names

        if self.task not in TASKS:
            hint = did_you_mean(self.task, task_names())
            raise ConfigError(
                f"setting 'task' (--task): unknown task '{self.task}'{hint} (known: {', '.join(task_names())})"
            )
        return self

    @model_validator(mode="after")
    def _samples_need_temperature(self) -> EvalConfig:
        if self.samples > 1 and self.temperature <= 0:
            raise ConfigError(
                f"setting 'samples' (--samples {self.samples}): repeats need --temperature above 0 "
                "(at temperature 0 they would agree by construction)"
            )
        return self

    @classmethod
    def merged(cls, *layers: dict[str, Any]) -> EvalConfig:
        """Later layers win; ``None`` in a layer means 'not given'."""
        return merge_layers(cls, *layers)

    # Settings that change verdicts; the run's config hash covers these (plus persona texts
    # and template sources), so --resume refuses a run made with different ones.
    JUDGING_FIELDS: ClassVar[tuple[str, ...]] = (
        "task",
        "strategy",
        "turns",
        "aggregate",
        "swap",
        "keep_raw_history",
        "summary_mode",
        "hold_scores",
        "framing",
        "prompt_layout",
        "structured",
        "aspects",
        "escalate",
        "stop_early",
        "model",
        "base_url",
        "debater_models",
        "temperature",
        "samples",
        "max_tokens",
        "seed",
    )

    def judging_payload(self) -> dict[str, Any]:
        data = self.model_dump()
        out = {k: data[k] for k in self.JUDGING_FIELDS}
        out["base_url"] = redact_url(out["base_url"])
        out["debater_models"] = _redacted(out["debater_models"])
        # Added in issue 37: hashed only when set, so runs made before keep their hash (--resume)
        for key, default in (("debater_models", {}), ("samples", 1)):
            if out[key] == default:
                del out[key]
        return out

    def public(self) -> dict[str, Any]:
        """The config as written to config.json: no secrets (keys live only in the environment)."""
        data = self.model_dump()
        data["base_url"] = redact_url(data["base_url"])
        data["debater_models"] = _redacted(data["debater_models"])
        return data


def _redacted(models: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Debaters' own endpoints without credentials (a key's variable name is no secret)."""
    return {name: m | {"base_url": redact_url(m.get("base_url"))} for name, m in models.items()}


def find_preset(name: str, extra_dirs: list[str] | None = None) -> Path:
    p = Path(name)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.is_file():
            raise ConfigError(f"{p}: preset file not found")
        return p
    for d in search_path("strategies", extra_dirs):
        for ext in (".yaml", ".yml"):
            cand = d / f"{name}{ext}"
            if cand.is_file():
                return cand
    known = sorted({f.stem for d in search_path("strategies", extra_dirs) if d.is_dir() for f in d.glob("*.y*ml")})
    raise ConfigError(f"unknown preset '{name}'{did_you_mean(name, known)} (known: {', '.join(known)})")


def load_preset(path: Path) -> dict[str, Any]:
    data = load_mapping(path, "preset")
    unknown = sorted(set(data) - set(EvalConfig.model_fields))
    if unknown:
        raise ConfigError(f"{path}: unknown setting '{unknown[0]}'")
    try:
        EvalConfig.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"{path}: field '{'.'.join(map(str, err['loc']))}': {err['msg'].lower()}") from None
    return data


def config_hash(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
