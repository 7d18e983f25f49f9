"""`chateval bench faireval`: how well the judge agrees with human preference labels on FairEval
(Wang et al. 2023) — ChatEval Table 1 (accuracy and Cohen's kappa), Tables 3-4 and Figure 3
with --sweep.

80 Vicuna questions; Assistant 1 is ChatGPT (gpt-3.5-turbo), Assistant 2 is Vicuna-13B, as in
ChatEval. The human label is the annotators' majority: ChatGPT better, Vicuna better, or tie.
The judge's 3-way verdict (1 / 2 / tie) is compared with it. Position calibration (both answer
orders, scores averaged per agent) is on by default (--no-swap turns it off).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from ..datasets.common import DatasetError
from ..debate.panel import JudgeResult
from ..debate.samples import Sample
from . import plots
from .agreement import accuracy, cohen_kappa, confusion
from .base import benchmark
from .judge_meta import Item, JudgeMetaBenchmark, add_judge_meta_options, fmt, resolve_data

FILE = "faireval_gpt35_vs_vicuna13b.jsonl"
LABELS = ("1", "2", "tie")
HUMAN = {"gpt35": "1", "vicuna": "2", "tie": "tie"}  # the file's label -> the verdict's numbering
NAMES = {"1": "ChatGPT (Assistant 1)", "2": "Vicuna-13B (Assistant 2)", "tie": "tie"}


def load_faireval(path: str | Path) -> list[Item]:
    """Rows of faireval_gpt35_vs_vicuna13b.jsonl (or a folder holding it), validated line by line."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: FairEval file not found") from None
    except OSError as e:
        raise DatasetError(f"{path}: cannot read FairEval file ({e.strerror})") from None
    items: list[Item] = []
    seen: dict[int, int] = {}
    for no, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        try:
            row = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise DatasetError(f"{where}: not valid UTF-8") from None
        except json.JSONDecodeError as e:
            raise DatasetError(f"{where}: invalid JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
        qid = row.get("question_id")
        if "question_id" not in row:
            raise DatasetError(f"{where}: field 'question_id': missing")
        if not isinstance(qid, int) or isinstance(qid, bool):
            raise DatasetError(f"{where}: field 'question_id': should be an integer, got {type(qid).__name__}")
        if qid in seen:
            raise DatasetError(f"{where}: field 'question_id': duplicate {qid} (first on line {seen[qid]})")
        seen[qid] = no
        for f in ("question", "answer_gpt35", "answer_vicuna13b"):
            v = row.get(f)
            if f not in row:
                raise DatasetError(f"{where}: field '{f}': missing")
            if not isinstance(v, str):
                raise DatasetError(f"{where}: field '{f}': should be a string, got {type(v).__name__}")
            if not v.strip():
                raise DatasetError(f"{where}: field '{f}': empty")
        label = row.get("human_label")
        if label not in HUMAN:
            got = "missing" if "human_label" not in row else repr(label)
            raise DatasetError(f"{where}: field 'human_label': expected gpt35, vicuna or tie, got {got}")
        category = row.get("category")
        sample = Sample(id=f"q{qid}", question=row["question"], answer_1=row["answer_gpt35"],
                        answer_2=row["answer_vicuna13b"], label=HUMAN[label],
                        meta={"question_id": qid, "category": category})
        items.append(Item(key=f"q{qid}", sample=sample, meta={"question_id": qid, "category": category,
                                                                "human": HUMAN[label]}))
    if not items:
        raise DatasetError(f"{path}: no FairEval rows")
    return items


@benchmark("faireval")
class FairEval(JudgeMetaBenchmark):
    description = ("FairEval (ChatGPT vs Vicuna-13B, 80 questions): accuracy and Cohen's kappa of the judge's "
                   "verdict against the human label; single vs multi-agent, --sweep")
    task = "pairwise"
    title = "FairEval"
    plot_ylabel = "accuracy / Cohen's kappa"
    swap_default = True

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        add_judge_meta_options(p, swap=True, data_help=f"the faireval folder or {FILE} "
                               "(default: ../shared/data/faireval next to the repository)")

    def load(self, args: argparse.Namespace) -> list[Item]:
        args.data_path = resolve_data(args.data, "faireval", (FILE,), "FairEval")
        return load_faireval(args.data_path)

    def unit_record(self, item: Item, result: JudgeResult) -> dict[str, Any]:
        rec = result.model_dump(mode="json")
        v = result.verdict
        rec |= {"question_id": item.meta["question_id"], "category": item.meta["category"],
                "human": item.meta["human"], "pred": v.winner if v else None}
        return rec

    def metrics(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        ok = [r for r in records if r.get("status") == "ok"]
        gold = [r["human"] for r in ok]
        pred = [r.get("pred") for r in ok]
        out: dict[str, Any] = {
            "accuracy": accuracy(gold, pred),
            "kappa": cohen_kappa(gold, pred, LABELS),
            "confusion": confusion(gold, pred, LABELS),
            "human_labels": dict(Counter(r["human"] for r in records)),
            "judge_verdicts": dict(Counter(p for p in pred if p is not None)),
        }
        # Each presentation order on its own (with --swap): how much calibration changes.
        for order in ("original", "swapped"):
            pairs = [(r["human"], ((r.get("orders") or {}).get(order) or {}).get("winner")) for r in ok]
            pairs = [(g, p) for g, p in pairs if p is not None]
            if pairs:
                out[f"{order}_order"] = {"accuracy": accuracy(*zip(*pairs)),
                                         "kappa": cohen_kappa(*zip(*pairs), LABELS)}
        return out

    def metric_headers(self) -> list[str]:
        return ["accuracy %", "kappa"]

    def metric_cells(self, m: dict[str, Any]) -> list[str]:
        acc = m["accuracy"]["value"]
        return ["–" if acc is None else f"{100 * acc:.1f}", fmt(m["kappa"]["value"])]

    def plot_series(self, summaries: Sequence[dict[str, Any]]) -> dict[str, list[float | None]]:
        return {"accuracy": [s["metrics"]["accuracy"]["value"] for s in summaries],
                "Cohen's kappa": [s["metrics"]["kappa"]["value"] for s in summaries]}

    def header_lines(self, summary: dict[str, Any]) -> list[str]:
        return [f"Data: `{summary['data']}` — {summary['n_items']} questions. Assistant 1 = ChatGPT "
                "(gpt-3.5-turbo), Assistant 2 = Vicuna-13B; human label = the annotators' majority "
                "(win / lose / tie). Metrics: accuracy and Cohen's kappa (scikit-learn, unweighted, labels "
                "1 / 2 / tie) of the judge's verdict against the human label, over the judged questions "
                "(failed ones are counted in `failed` and left out).", ""]

    def setting_report(self, path: Path, summary: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
        m = summary["metrics"]
        lines = ["", "## Confusion matrix (rows: human label, columns: judge verdict)", "",
                 "| human \\ judge | " + " | ".join(NAMES[c] for c in LABELS) + " |", "|---|---|---|---|"]
        for g in LABELS:
            lines.append(f"| {NAMES[g]} | " + " | ".join(str(m['confusion'][g][p]) for p in LABELS) + " |")
        for note in (m["accuracy"], m["kappa"]):
            if note.get("reason"):
                lines += ["", f"Undefined: {note['reason']}"]
        orders = [o for o in ("original", "swapped") if f"{o}_order" in m]
        if orders:
            lines += ["", "Each presentation order alone (before position calibration): " + "; ".join(
                f"{o}: accuracy {fmt(m[f'{o}_order']['accuracy']['value'])}, kappa {fmt(m[f'{o}_order']['kappa']['value'])}"
                for o in orders)]
            if summary.get("order_disagreement_rate") is not None:
                lines.append(f"The two orders' panel verdicts differ on {100 * summary['order_disagreement_rate']:.1f}% "
                             "of questions.")
        plots.grouped_bars(path / "verdicts.png", [NAMES[c] for c in LABELS],
                           {"human": [m["human_labels"].get(c, 0) for c in LABELS],
                            "judge": [m["judge_verdicts"].get(c, 0) for c in LABELS]},
                           title=f"FairEval {summary['setting']}: label distribution", ylabel="questions", ylim=None)
        return lines + ["", "![verdicts](verdicts.png)"]
