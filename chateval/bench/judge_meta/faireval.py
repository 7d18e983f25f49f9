"""`chateval bench faireval`: how well the judge agrees with human preference labels on FairEval
(Wang et al. 2023) — ChatEval Table 1 (accuracy and Cohen's kappa), Tables 3-4 and Figure 3
with --sweep.

80 Vicuna questions; Assistant 1 is ChatGPT (gpt-3.5-turbo), Assistant 2 is Vicuna-13B, as in
ChatEval. The human label is the annotators' majority: ChatGPT better, Vicuna better, or tie.
The judge's 3-way verdict (1 / 2 / tie) is compared with it. Position calibration (both answer
orders, scores averaged per agent) is on by default (--no-swap turns it off).

A question the judge answered but whose verdict could not be read (after the one re-ask) counts
as a tie in accuracy and kappa, as ChatEval's evaluation code scores an unreadable reply;
``--unreadable exclude`` leaves such questions out instead. Either way their number is reported.
Failed calls (no answer at all) are always left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ...datasets.faireval import FILE, load_faireval
from ...debate.panel import JudgeResult
from ...debate.samples import Sample
from ...stats.agreement import KAPPA_RESAMPLES, KAPPA_SEED, kappa_ci95
from .. import plots
from ..comparisons import label_comparisons
from ..config import JudgeMetaConfig
from ..registry import benchmark
from ..selection import resolve_data
from ..stats import wilson
from ..summaries import setting_rows
from .agreement import accuracy, cohen_kappa, confusion
from .faireval_settings import DESCRIPTION, GATE_METRICS, FairEvalConfig, Unreadable
from .judge_meta import Item, JudgeMetaBenchmark
from .plots import KAPPA_RANGE, Chart, fmt, fmt_ci

LABELS = ("1", "2", "tie")
NAMES = {"1": "ChatGPT (Assistant 1)", "2": "Vicuna-13B (Assistant 2)", "tie": "tie"}


def unreadable(record: dict[str, Any]) -> bool:
    """The judge replied, but no debater's verdict could be read (not a failed call)."""
    agents = record.get("agents") or []
    return record.get("status") != "ok" and bool(agents) and all(a.get("parse_error") for a in agents)


def scored(records: list[dict[str, Any]], mode: Unreadable = "tie") -> list[dict[str, Any]]:
    """The records the metrics count, in item order: the judged ones, plus the unreadable ones
    as ties (``tie``, ChatEval's scoring) or not at all (``exclude``)."""
    out = [r for r in records if r.get("status") == "ok"]
    if mode == "tie":
        # A copy for the metrics only: samples.jsonl keeps the unit as it happened.
        out += [r | {"pred": "tie", "status": "ok", "unreadable_as_tie": True} for r in records if unreadable(r)]
    # In item order, not finishing order: the bootstrap draws by position, and concurrent,
    # resumed or Ray runs append records in different orders.
    return sorted(out, key=lambda r: str(r.get("key", "")))


def faireval_items(path: str | Path) -> list[Item]:
    """The FairEval rows as pairwise samples (Assistant 1 = ChatGPT, 2 = Vicuna-13B)."""
    items = []
    for r in load_faireval(path):
        meta = {"question_id": r.question_id, "category": r.category}
        sample = Sample(
            id=f"q{r.question_id}",
            question=r.question,
            answer_1=r.answer_1,
            answer_2=r.answer_2,
            label=r.human,
            meta=meta,
        )
        items.append(Item(key=f"q{r.question_id}", sample=sample, meta=meta | {"human": r.human}))
    return items


@benchmark("faireval")
class FairEval(JudgeMetaBenchmark):
    description = DESCRIPTION
    task = "pairwise"
    title = "FairEval"
    swap_default = True
    gate_metrics = GATE_METRICS

    @classmethod
    def headline(cls, summary: dict[str, Any]) -> list[dict[str, Any]]:
        return setting_rows(summary, "accuracy", lambda m: (m.get("accuracy") or {}).get("value"))

    config_model = FairEvalConfig
    unreadable_mode: Unreadable = "tie"

    def load(self, config: JudgeMetaConfig) -> list[Item]:
        # JudgeMetaBenchmark's hooks take its config type; run() passes an instance of config_model.
        config = cast(FairEvalConfig, config)
        self.unreadable_mode = config.unreadable
        self.data_path = resolve_data(config.data, "faireval", (FILE,), "FairEval")
        return faireval_items(self.data_path)

    def unit_record(self, item: Item, result: JudgeResult) -> dict[str, Any]:
        rec = result.model_dump(mode="json")
        v = result.verdict
        rec |= {
            "question_id": item.meta["question_id"],
            "category": item.meta["category"],
            "human": item.meta["human"],
            "pred": v.winner if v else None,
        }
        return rec

    def view(self, record: dict[str, Any]) -> dict[str, Any]:
        """The human label and verdict, each order's winner (with --swap) and whether each
        debater's verdict could be read (``unreadable``): not the debate or the reasons."""
        out = super().view(record) | {k: record[k] for k in ("human", "pred") if k in record}
        if "orders" in record:
            orders = record["orders"]
            out["orders"] = (
                {o: {"winner": v.get("winner")} if isinstance(v, dict) else v for o, v in orders.items()}
                if isinstance(orders, dict)
                else orders
            )
        if "agents" in record:
            out["agents"] = [{"parse_error": a.get("parse_error")} for a in record["agents"] or []]
        return out

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        ok = scored(records, self.unreadable_mode)
        gold = [r["human"] for r in ok]
        pred = [r.get("pred") for r in ok]
        out: dict[str, Any] = {
            "accuracy": accuracy(gold, pred),
            "kappa": cohen_kappa(gold, pred, LABELS),
            "confusion": confusion(gold, pred, LABELS),
            "human_labels": dict(Counter(r["human"] for r in records)),
            "judge_verdicts": dict(Counter(p for p in pred if p is not None)),
            "unreadable": sum(unreadable(r) for r in records),
            "unreadable_as": self.unreadable_mode,
        }
        boot = kappa_ci95(gold, pred, LABELS)
        out["kappa_ci95"] = boot.pop("ci95")
        out["kappa_bootstrap"] = boot  # resamples asked for, used (kappa defined), seed
        # Each presentation order on its own (with --swap): how much calibration changes.
        for order in ("original", "swapped"):
            pairs = [(r["human"], ((r.get("orders") or {}).get(order) or {}).get("winner")) for r in ok]
            pairs = [(g, p) for g, p in pairs if p is not None]
            if pairs:
                humans, preds = zip(*pairs)
                out[f"{order}_order"] = {
                    "accuracy": accuracy(humans, preds),
                    "kappa": cohen_kappa(humans, preds, LABELS),
                }
        return out

    def compare_settings(
        self, names: tuple[str, str], records_a: list[dict[str, Any]], records_b: list[dict[str, Any]]
    ) -> list[Any]:
        return label_comparisons(
            scored(records_a, self.unreadable_mode), scored(records_b, self.unreadable_mode), names
        )

    def metric_headers(self) -> list[str]:
        return ["accuracy %", "kappa [95% CI]"]

    def metric_cells(self, m: dict[str, Any]) -> list[str]:
        acc = m["accuracy"]["value"]
        return ["–" if acc is None else f"{100 * acc:.1f}", fmt_ci(m["kappa"]["value"], _ci(m))]

    def charts(self, summaries: Sequence[dict[str, Any]]) -> list[Chart]:
        """Accuracy in % like the table (95% Wilson whiskers, the majority-label line) and kappa
        on its own -1..1 axis (95% bootstrap whiskers): one scale each, so neither is read
        against the other's."""
        acc = [s["metrics"]["accuracy"] for s in summaries]
        kappa = [s["metrics"]["kappa"] for s in summaries]
        return [
            Chart(
                "accuracy",
                "accuracy",
                "accuracy",
                {"accuracy": [a["value"] for a in acc]},
                [a["n"] for a in acc],
                pct=True,
                baselines=self.plot_baselines(summaries),
                intervals={"accuracy": [wilson(a.get("correct") or 0, a["n"]) for a in acc]},
            ),
            Chart(
                "kappa",
                "Cohen's kappa",
                "Cohen's kappa (0 = chance)",
                {"Cohen's kappa": [k["value"] for k in kappa]},
                [k["n"] for k in kappa],
                ylim=KAPPA_RANGE,
                intervals={"Cohen's kappa": [_ci(s["metrics"]) for s in summaries]},
            ),
        ]

    def plot_baselines(self, summaries: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Accuracy of always answering the most frequent human label (every setting judges the
        same questions; the first summary's labels are used): what accuracy must beat."""
        labels: dict[str, int] = (summaries[0]["metrics"].get("human_labels") or {}) if summaries else {}
        total = sum(labels.values())
        if not total:
            return {}
        top = max(labels, key=lambda k: labels[k])
        return {f"majority-label accuracy (always {NAMES.get(top, top)})": labels[top] / total}

    def header_lines(self, summary: dict[str, Any]) -> list[str]:
        unread = (
            "counts as a tie (ChatEval's scoring; `--unreadable exclude` leaves it out)"
            if self.unreadable_mode == "tie"
            else "is left out (`--unreadable exclude`; ChatEval counts a tie)"
        )
        return [
            f"Data: `{summary['data']}` — {summary['n_items']} questions. Assistant 1 = ChatGPT "
            "(gpt-3.5-turbo), Assistant 2 = Vicuna-13B; human label = the annotators' majority "
            "(win / lose / tie). Metrics: accuracy and Cohen's kappa (scikit-learn, unweighted, labels "
            "1 / 2 / tie) of the judge's verdict against the human label, over the judged questions; "
            f"a question whose verdict could not be read {unread}; failed calls are counted in `failed` "
            "and left out. Accuracy's 95% interval is Wilson's; "
            f"kappa's is a percentile bootstrap over the questions ({KAPPA_RESAMPLES} resamples, seed "
            f"{KAPPA_SEED}; resamples where kappa is undefined are skipped, and each setting's report says "
            "how many were used).",
            "",
        ]

    def setting_report(self, path: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
        m = summary["metrics"]
        lines = [
            "",
            "## Confusion matrix (rows: human label, columns: judge verdict)",
            "",
            "| human \\ judge | " + " | ".join(NAMES[c] for c in LABELS) + " |",
            "|---|---|---|---|",
        ]
        for g in LABELS:
            lines.append(f"| {NAMES[g]} | " + " | ".join(str(m["confusion"][g][p]) for p in LABELS) + " |")
        if m.get("unreadable"):
            how = "counted as ties" if m.get("unreadable_as") == "tie" else "left out (--unreadable exclude)"
            lines += ["", f"Unreadable verdicts: {m['unreadable']} question(s), {how} in accuracy and kappa."]
        for note in (m["accuracy"], m["kappa"]):
            if note.get("reason"):
                lines += ["", f"Undefined: {note['reason']}"]
        boot = m.get("kappa_bootstrap")
        if boot and m.get("kappa_ci95"):
            skipped = boot["resamples"] - boot["used"]
            lines += [
                "",
                f"Kappa's 95% interval: percentile bootstrap over the {m['kappa']['n']} judged questions, "
                f"{boot['used']} of {boot['resamples']} resamples used (seed {boot['seed']}"
                + (f"; {skipped} skipped: kappa undefined in them)." if skipped else ")."),
            ]
        elif boot:
            lines += ["", "Kappa has no 95% interval: fewer than 2 judged questions, or kappa is undefined."]
        orders = [o for o in ("original", "swapped") if f"{o}_order" in m]
        if orders:
            lines += [
                "",
                "Each presentation order alone (before position calibration): "
                + "; ".join(
                    f"{o}: accuracy {fmt(m[f'{o}_order']['accuracy']['value'])}, kappa {fmt(m[f'{o}_order']['kappa']['value'])}"
                    for o in orders
                ),
            ]
            if summary.get("order_disagreement_rate") is not None:
                lines.append(
                    f"The two orders' panel verdicts differ on {100 * summary['order_disagreement_rate']:.1f}% "
                    "of questions."
                )
        # The human labels count every question, the judge's only those with a verdict: n of each.
        human, judge = sum(m["human_labels"].values()), sum(m["judge_verdicts"].values())
        n = f"n={human}" if human == judge else f"human n={human}, judge n={judge}"
        drawn = plots.grouped_bars(
            path / "verdicts.png",
            [NAMES[c] for c in LABELS],
            {
                "human": [m["human_labels"].get(c, 0) for c in LABELS],
                "judge": [m["judge_verdicts"].get(c, 0) for c in LABELS],
            },
            title=f"FairEval {summary['setting']}: label distribution ({n} questions)",
            ylabel="questions",
            ylim=None,
        )
        return lines + ["", *plots.link(drawn, "verdicts", "verdicts.png")]


def _ci(metrics: dict[str, Any]) -> tuple[float, float] | None:
    ci = metrics.get("kappa_ci95")  # a list in summary.json; absent in summaries of older versions
    return (ci[0], ci[1]) if ci else None
