"""The Python API of the audit: ``audit(input, out, **settings)``."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..evaluation.config import EvalConfig, find_preset, load_preset
from ..records.audit import AuditSummary
from ..runs.progress import RunProgress
from .config import AuditConfig
from .run import arun


def make_config(
    input: str,
    out: str,
    *,
    preset: str | None = None,
    judge: EvalConfig | dict[str, Any] | None = None,
    **settings: Any,
) -> AuditConfig:
    """An AuditConfig from a preset, judge settings (an EvalConfig or a dict, as for
    ``Evaluator``) and the audit's own settings; judge settings may also be given as keywords."""
    judge_layer = judge.model_dump(exclude_unset=True) if isinstance(judge, EvalConfig) else dict(judge or {})
    judge_kw = {k: settings.pop(k) for k in list(settings) if k in EvalConfig.model_fields}
    base = load_preset(find_preset(preset)) if preset else {}
    cfg = EvalConfig.merged(base, judge_layer, judge_kw)
    return AuditConfig.merged({"input": str(input), "out": str(out), "judge": cfg}, settings)


def audit(
    input: str,
    out: str,
    *,
    preset: str | None = None,
    judge: EvalConfig | dict[str, Any] | None = None,
    progress: RunProgress | None = None,
    **settings: Any,
) -> AuditSummary:
    """Audit a judge on a file: ``chateval.audit("items.jsonl", "runs/audit", model="offline",
    agents=2, perturbations=["position", "verbosity"])``. Writes the run directory (as the CLI
    does) and returns its summary. Works inside a running event loop too (on a worker thread)."""
    cfg = make_config(input, out, preset=preset, judge=judge, **settings)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun(cfg, progress))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chateval-audit") as pool:
        return pool.submit(asyncio.run, arun(cfg, progress)).result()
