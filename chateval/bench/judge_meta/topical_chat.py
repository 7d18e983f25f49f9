"""`chateval bench topical-chat`: turn-level correlation of judges and metrics with human
ratings on USR Topical-Chat (Mehri & Eskenazi 2020) — ChatEval Table 2.

60 dialogue contexts x 6 responses (Original Ground Truth, New Human Generated, Argmax Decoding,
Nucleus Decoding p = 0.3 / 0.5 / 0.7) = 360 rows, each rated by 3 annotators. The human score
of an aspect is the annotators' mean (naturalness = Natural, coherence = Maintains Context,
engagingness = Engaging, groundedness = Uses Knowledge). For each aspect, Spearman's rho and
Kendall's tau-b between a metric and the human mean are computed over all rows at once (pooled,
as UniEval's correlation_for_dialog does; no per-context grouping).

Rows of the report:
- non-LLM baselines (chateval.bench.text_metrics), computed offline into OUT/baselines. The
  reference of a response is the 'Original Ground Truth' response of the same context. For the
  ground-truth row itself the reference would be the response itself (a perfect score that
  measures nothing): by default that row is left out of the reference-based metrics (n = 300),
  or, with --gt-reference new-human, scored against the context's 'New Human Generated'
  response instead (n = 360).
- the debate judge (score task with the aspects) under each setting / sweep point.

What the judge is shown: the dialogue history minus its last turn plus the knowledge fact as the
sample's ``context``, the last turn as the ``question`` (the message being answered), the
response as the ``answer``, and the aspect definitions as ``guidelines``. No reference response:
the judge rates reference-free, as ChatEval and G-Eval do on this data.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ...datasets.common import DatasetError
from ...datasets.topical_chat import (
    ASPECTS,
    GROUND_TRUTH,
    NEW_HUMAN,
    OTHER_SCORES,
    SCALES,
    UNIEVAL,
    USR,
    TCRow,
    load_topical_chat,
)
from ...debate.panel import JudgeResult
from ...evaluation.judges import Judges
from ...runs.progress import RunProgress
from ...util.errors import ConfigError
from .. import plots
from ..comparisons import score_comparisons
from ..config import JudgeMetaConfig
from ..records import CorrelationSettingsSummary
from ..registry import benchmark
from ..selection import resolve_data
from ..summaries import setting_rows
from ..text_metrics import DESCRIPTIONS
from .judge_meta import Item, JudgeMetaBenchmark
from .plots import Chart, bars, fmt
from .topical_baselines import baseline_names, run_baselines
from .topical_chat_settings import DESCRIPTION, GATE_METRICS, TopicalChatConfig
from .topical_correlations import correlation_bars, correlation_block, correlation_table, metric_cells, metric_headers
from .topical_samples import build_aspect_sample, build_sample, merge_aspect_results


def assign_references(rows: list[TCRow], gt_reference: str = "exclude") -> None:
    """reference = the context's Original Ground Truth response; for that row itself, None
    (``exclude``) or the context's New Human Generated response (``new-human``)."""
    by_ctx: dict[int, dict[str, str]] = {}
    for r in rows:
        by_ctx.setdefault(r.context_index, {})[r.system] = r.response
    for r in rows:
        sys = by_ctx[r.context_index]
        if r.system == GROUND_TRUTH:
            r.reference = sys.get(NEW_HUMAN) if gt_reference == "new-human" else None
        else:
            r.reference = sys.get(GROUND_TRUTH)


def _own(config: JudgeMetaConfig) -> TopicalChatConfig:
    # JudgeMetaBenchmark's hooks take its config type; run() passes an instance of config_model.
    return cast(TopicalChatConfig, config)


@benchmark("topical-chat")
class TopicalChat(JudgeMetaBenchmark):
    description = DESCRIPTION
    task = "score"
    title = "Topical-Chat"
    gate_metrics = GATE_METRICS
    summary_type = CorrelationSettingsSummary

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        return setting_rows(
            summary, "mean Spearman", lambda m: ((m.get("judge") or m).get("avg") or {}).get("spearman")
        )

    config_model = TopicalChatConfig

    # -- data --
    def load(self, config: JudgeMetaConfig) -> list[Item]:
        config = _own(config)
        self.data_path = resolve_data(config.data, "topical_chat", (UNIEVAL, USR), "Topical-Chat")
        self.aspects = [a.lower() for a in (config.aspects or ASPECTS)]
        bad = [a for a in self.aspects if a not in ASPECTS + OTHER_SCORES]
        if bad:
            raise ConfigError(
                f"--aspects: '{bad[0]}' has no human score in Topical-Chat (known: {', '.join(ASPECTS + OTHER_SCORES)})"
            )
        config.aspects = self.aspects
        self.rows = load_topical_chat(self.data_path)
        missing = [a for a in self.aspects if any(a not in r.human for r in self.rows)]
        if missing:
            raise DatasetError(f"{self.data_path}: no human '{missing[0]}' score for some rows")
        assign_references(self.rows, config.gt_reference)
        self.baselines = baseline_names(config)
        if config.baselines_only and not self.baselines:
            raise ConfigError("--baselines-only with no --baselines: nothing to do")
        self.aspect_mode = config.aspect_mode
        return [Item(key=r.key, sample=build_sample(r, self.aspects), meta={"row": r}) for r in self.rows]

    def item_type(self, item: Item) -> str:
        return item.meta["row"].system  # --per-type N: N contexts' responses of each system

    def judges(self, config: JudgeMetaConfig) -> bool:
        return not _own(config).baselines_only

    def base_defaults(self, config: JudgeMetaConfig) -> dict[str, Any]:
        return super().base_defaults(config) | {"aspects": self.aspects}

    def data_config(self, config: JudgeMetaConfig) -> dict[str, Any]:
        return {"aspects_shown": self.aspects, "aspect_mode": _own(config).aspect_mode}

    def extra_dirs(self, config: JudgeMetaConfig) -> list[str]:
        return ["baselines"] if self.baselines else []

    # -- judge units --
    async def judge_item(self, judges: Judges, item: Item) -> dict[str, Any]:
        if self.aspect_mode == "joint":
            return await super().judge_item(judges, item)
        row: TCRow = item.meta["row"]
        start = time.perf_counter()
        results = await asyncio.gather(*(judges.judge(build_aspect_sample(row, a)) for a in self.aspects))
        per_aspect = dict(zip(self.aspects, results))
        record = self.unit_record(item, merge_aspect_results(item.key, per_aspect, time.perf_counter() - start))
        # Each aspect's debate in full (transcripts, verdicts, usage), for reading runs.
        return record | {"per_aspect": {a: r.model_dump(mode="json") for a, r in per_aspect.items()}}

    def unit_record(self, item: Item, result: JudgeResult) -> dict[str, Any]:
        row: TCRow = item.meta["row"]
        rec = result.model_dump(mode="json")
        v = result.verdict
        rec |= {
            "context_index": row.context_index,
            "system": row.system,
            "human": row.human,
            "pred": {a: (v.scores.get(a) if v else None) for a in self.aspects},
        }
        return rec

    def view(self, record: dict[str, Any]) -> dict[str, Any]:
        """The judge's and the humans' scores and the dialogue context (the comparisons' cluster):
        not the debates, per-aspect transcripts or reasons."""
        return super().view(record) | {k: record[k] for k in ("human", "pred", "context_index") if k in record}

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        ok = [r for r in records if r.get("status") == "ok"]
        return correlation_block([r["pred"] for r in ok], [r["human"] for r in ok], self.aspects, "the judge's score")

    def compare_settings(
        self, names: tuple[str, str], records_a: list[dict[str, Any]], records_b: list[dict[str, Any]]
    ) -> list[Any]:
        # Clusters: the responses to one dialogue context share it (and its raters).
        return score_comparisons(records_a, records_b, names, self.aspects, cluster="context_index")

    def metric_headers(self) -> list[str]:
        return metric_headers(self.aspects)

    def metric_cells(self, m: dict[str, Any]) -> list[str]:
        return metric_cells(m, self.aspects)

    def charts(self, summaries: Sequence[dict[str, Any]]) -> list[Chart]:
        """Spearman ρ per aspect and averaged (one unit: the table's ρ, data-driven lower limit)."""
        out = {f"{a} ρ": [s["metrics"]["aspects"][a]["spearman"]["value"] for s in summaries] for a in self.aspects}
        out["avg ρ"] = [s["metrics"]["avg"]["spearman"] for s in summaries]
        return [Chart("spearman", "Spearman ρ", "Spearman ρ", out, [s["n_ok"] for s in summaries])]

    # -- baselines --
    async def before_settings(
        self, config: JudgeMetaConfig, items: list[Item], out: Path, progress: RunProgress | None
    ) -> dict[str, Any]:
        config = _own(config)
        protocol = {"aspect_mode": config.aspect_mode}
        if not self.baselines:
            return protocol
        rows = [it.meta["row"] for it in items]
        summary = await run_baselines(
            config,
            rows,
            out / "baselines",
            metrics=self.baselines,
            aspects=self.aspects,
            benchmark=self.name,
            data=self.data_path,
            progress=progress,
        )
        return protocol | {"baselines": summary, "n_baseline_units": len(rows), "gt_reference": config.gt_reference}

    # -- reports --
    def header_lines(self, summary: dict[str, Any]) -> list[str]:
        scales = ", ".join(f"{a} {SCALES.get(a, '?')}" for a in self.aspects)
        protocol = (
            "**per-aspect**: one debate per aspect and response, with that aspect's criterion, rated on "
            "its USR scale (as above)"
            if summary.get("aspect_mode", "per-aspect") == "per-aspect"
            else "**joint**: one debate per response rating every aspect from 1 to 10"
        )
        return [
            f"Data: `{summary['data']}` — {summary['n_items']} responses. Human score = mean of 3 annotators "
            f"({scales}). ρ = Spearman, τ = Kendall tau-b (scipy), **turn-level, pooled over all rows** "
            "(one correlation per aspect, no per-context grouping). avg = mean over the aspects.",
            "",
            f"Judge protocol: {protocol}.",
            "",
        ]

    def extra_sections(self, out: Path, summary: dict[str, Any]) -> list[str]:
        rows: list[tuple[str, str, dict[str, Any]]] = []
        base = summary.get("baselines")
        if base:
            rows += [(m, "non-LLM baseline", b) for m, b in base["metrics"].items()]
        for name, s in summary.get("settings", {}).items():
            rows.append((f"judge: {name}" + (" (offline)" if s["offline"] else ""), s["judge"], s["metrics"]))
        if not rows:
            return []
        lines = ["## Correlations with human scores", ""] + correlation_table(rows, self.aspects)
        if base:
            ref = (
                "left out of the reference-based metrics (they would compare it with itself)"
                if summary.get("gt_reference") == "exclude"
                else "scored against the New Human Generated response"
            )
            lines += [
                f"Reference for ROUGE-L / BLEU-4 / BERTScore-style: the context's *Original Ground Truth* "
                f"response; the ground-truth row itself is {ref}.",
                "",
            ]
            lines += [f"- `{m}`: {DESCRIPTIONS[m]}" for m in base["metrics"]]
            lines += [f"- `{m}` skipped: {why}" for m, why in base.get("skipped", {}).items()]
            lines += ["", f"Baselines sub-run: `{out / 'baselines'}`.", ""]
        correlation_bars(
            out / "correlations.png",
            rows,
            "Topical-Chat: Spearman ρ with human scores (turn-level, pooled)",
            self.aspects,
        )
        return lines + ["![correlations](correlations.png)", ""]

    def setting_report(self, path: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
        m = summary["metrics"]
        ok = [r for r in records if r.get("status") == "ok"]
        lines = [
            "",
            "## Per aspect (turn-level, pooled)",
            "",
            "| aspect | n | Spearman ρ (p) | Kendall τ-b (p) | mean judge score | mean human score |",
            "|---|---|---|---|---|---|",
        ]
        for a in self.aspects:
            s, k = m["aspects"][a]["spearman"], m["aspects"][a]["kendall"]
            preds = [r["pred"].get(a) for r in ok if r["pred"].get(a) is not None]
            hum = [r["human"][a] for r in ok]
            cell = lambda c: "–" if c["value"] is None else f"{c['value']:.3f} ({c['p_value']:.2g})"  # noqa: E731
            lines.append(
                f"| {a} | {s['n']} | {cell(s)} | {cell(k)} | "
                f"{fmt(sum(preds) / len(preds) if preds else None, 2)} | {fmt(sum(hum) / len(hum) if hum else None, 2)} |"
            )
            for c in (s, k):
                if c.get("reason"):
                    lines.append(f"|  |  | undefined: {c['reason']} |  |  |  |")
        bars(
            path / "correlations.png",
            [plots.n_label(a, [m["aspects"][a]["spearman"]["n"]]) for a in self.aspects],
            {
                "Spearman ρ": [m["aspects"][a]["spearman"]["value"] for a in self.aspects],
                "Kendall τ-b": [m["aspects"][a]["kendall"]["value"] for a in self.aspects],
            },
            title=f"Topical-Chat {summary['setting']} (judge: {summary['judge']})",
            ylabel="correlation",
        )
        return lines + ["", "![correlations](correlations.png)"]
