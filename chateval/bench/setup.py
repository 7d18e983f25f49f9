"""What the memory benchmarks share: model layers, embedder, systems, and the two judges."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..config import EvalConfig, find_preset, load_preset
from ..debate.samples import Sample
from ..errors import ConfigError
from ..evaluator import Evaluator, package_versions
from ..models import CallLog, CompletionCache, GenParams, ModelLayer, ModelSpec, RetryPolicy, UsageTotals
from ..memory import MEMORY_SYSTEMS, MemorySystem
from ..memory import systems as _systems  # noqa: F401  (registers the built-in systems)
from ..memory.embeddings import Embedder, make_embedder
from .lme_judge import SINGLE_JUDGE, JudgeInputs, guidelines_for


def add_memory_bench_options(p: argparse.ArgumentParser, *, systems_required: bool = True) -> None:
    g = p.add_argument_group("systems and models")
    g.add_argument("--systems", required=systems_required, type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                   help="comma-separated memory systems (see `chateval memory list`)")
    g.add_argument("--set", action="append", default=[], dest="settings", metavar="SYSTEM.KEY=VALUE",
                   help="a system setting, e.g. retrieval.k=10 (value read as JSON when it parses)")
    g.add_argument("--answer-model", "--model", dest="answer_model", default="offline",
                   help="model the systems use, and the judges unless --judge-model (default offline)")
    g.add_argument("--judge", choices=["single", "debate", "both"], default="single",
                   help="single: LongMemEval-style yes/no judge; debate: the panel's correctness task; both")
    g.add_argument("--judge-model", help="model for the judges (default: the answer model)")
    g.add_argument("--judge-preset", default="chateval_default", help="debate judge preset (default chateval_default)")
    g.add_argument("--base-url", help="endpoint for openai-compatible models (or CHATEVAL_BASE_URL)")
    g.add_argument("--embedder", default="local/all-MiniLM-L6-v2",
                   help="hash | local/all-MiniLM-L6-v2 (default) | openai/<model>")
    g.add_argument("--qdrant-url", help="a Qdrant server for the systems' vector stores (default: embedded, in memory)")
    g.add_argument("--max-connections", type=int, default=8)
    g.add_argument("--max-retries", type=int, default=4)
    g.add_argument("--timeout", type=float, default=120.0, dest="timeout_s")
    g.add_argument("--retry-base-delay", type=float, default=1.0, dest="retry_base_delay_s",
                   help="seconds before the first retry, doubled each retry, with jitter")
    g.add_argument("--no-cache", action="store_true", help="bypass the completion cache")
    g.add_argument("--cache-dir", help="completion cache folder")


def parse_settings(items: list[str], systems: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {s: {} for s in systems}
    for item in items:
        key, sep, raw = item.partition("=")
        system, dot, field = key.partition(".")
        if not sep or not dot or not field:
            raise ConfigError(f"--set '{item}': expected SYSTEM.KEY=VALUE, e.g. retrieval.k=10")
        if system not in out:
            raise ConfigError(f"--set '{item}': system '{system}' is not in --systems")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        out[system][field] = value
    return out


_SECRET_KEYS = ("password", "secret", "token", "api_key", "apikey")


def redact_settings(settings: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Settings as written to config.json: values of secret-looking keys are masked."""
    return {system: {k: ("***" if any(s in k.lower() for s in _SECRET_KEYS) and v else v) for k, v in kv.items()}
            for system, kv in settings.items()}


class MemoryBench:
    """Built once per run from the parsed arguments."""

    def __init__(self, args: argparse.Namespace, *, need_judges: bool = True) -> None:
        self.args = args
        self.systems: list[str] = list(args.systems or [])
        for name in self.systems:
            MEMORY_SYSTEMS.get(name)  # unknown names fail before any work
        self.settings = parse_settings(args.settings, self.systems)
        for name in self.systems:  # invalid settings fail before any work too
            MEMORY_SYSTEMS.get(name).parse_settings(self.settings[name])
        cache = None if args.no_cache else CompletionCache(args.cache_dir)
        secrets = [os.environ.get("OPENAI_API_KEY", ""), os.environ.get("CHATEVAL_API_KEY", "")]
        retry = RetryPolicy(max_retries=args.max_retries, timeout_s=args.timeout_s,
                            base_delay_s=getattr(args, "retry_base_delay_s", 1.0))
        self.answer_layer = ModelLayer(ModelSpec.parse(args.answer_model, args.base_url), retry=retry,
                                       max_connections=args.max_connections, cache=cache, secrets=secrets,
                                       params=GenParams())
        judge_spec = args.judge_model or args.answer_model
        self.judge_layer = (self.answer_layer if judge_spec == args.answer_model
                            else self.answer_layer.derive(ModelSpec.parse(judge_spec, args.base_url)))
        self.judge_mode: str = getattr(args, "judge", "single")
        self.embedder: Embedder = make_embedder(args.embedder, cache=not args.no_cache)
        self.evaluator: Evaluator | None = None
        if need_judges and self.judge_mode in ("debate", "both"):
            preset = load_preset(find_preset(args.judge_preset))
            self.evaluator = Evaluator(EvalConfig.merged(preset, {"task": "correctness", "model": judge_spec}),
                                       layer=self.judge_layer)
        if args.qdrant_url and not args.qdrant_url.startswith(("http://", "https://")):
            raise ConfigError(f"--qdrant-url '{args.qdrant_url}': expected an http(s):// URL")
        if args.qdrant_url:
            from ..memory.vector import check_server

            check_server(args.qdrant_url)  # every unit would fail otherwise: say so once, up front

    def make_system(self, name: str, log: CallLog) -> MemorySystem:
        cls = MEMORY_SYSTEMS.get(name)
        return cls(self.answer_layer, settings=self.settings[name], embedder=self.embedder,
                   qdrant=self.args.qdrant_url, log=log)

    def config(self, extra: dict[str, Any]) -> dict[str, Any]:
        """config.json: everything that changes results is in ``judging`` (hashed for --resume)."""
        from ..config import config_hash

        judging = {
            "systems": self.systems, "settings": redact_settings(self.settings), "answer_model": self.answer_layer.label,
            "judge": self.judge_mode, "judge_model": self.judge_layer.label, "embedder": self.embedder.name,
            "judge_panel": self.evaluator.run_config()["judging"] if self.evaluator else None,
        } | extra
        return {"judging": judging, "config_hash": config_hash(judging), "versions": package_versions(),
                # Only the baseline rankers run without any model: then nothing is "offline".
                "offline": bool(self.systems or self.evaluator or extra.get("uses_judge", True))
                and (self.answer_layer.spec.is_offline or self.judge_layer.spec.is_offline),
                "qdrant": "server" if self.args.qdrant_url else "embedded"}

    async def judge(self, *, question: str, gold: str, response: str, question_type: str,
                    abstention: bool) -> dict[str, Any]:
        """Judge one answer with the configured judge(s); returns verdicts, agreement and usage."""
        out: dict[str, Any] = {}
        usage = UsageTotals()
        if self.judge_mode in ("single", "both"):
            log = CallLog()
            verdict = await SINGLE_JUDGE.run(self.judge_layer, JudgeInputs(
                question=question, gold=gold, response=response, question_type=question_type,
                abstention=abstention), log=log)
            out["single"] = {"correct": verdict.correct, "reason": verdict.reason}
            usage.merge(log.totals())
        if self.judge_mode in ("debate", "both") and self.evaluator is not None:
            result = await self.evaluator.judge(Sample(
                id="judge", question=question, answer=response, reference=gold,
                guidelines=guidelines_for(question_type, abstention), meta={"abstention": abstention},
            ), "correctness")
            verdict = result.verdict
            out["debate"] = {
                "correct": None if verdict is None else verdict.correct,
                "tie": bool(verdict and verdict.tie), "votes": verdict.votes if verdict else {},
                "status": result.status, "error": result.error,
                "agents": [a.model_dump() for a in result.agents],
            }
            usage.merge(result.usage)
        if "single" in out and "debate" in out:
            d = out["debate"]["correct"]
            out["agreement"] = None if d is None else d == out["single"]["correct"]
        primary = out.get("single", out.get("debate", {}))
        out["correct"] = primary.get("correct")
        out["usage"] = usage.model_dump()
        return out
