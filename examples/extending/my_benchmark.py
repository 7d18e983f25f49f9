"""A benchmark in a plugin file: does the judge accept the answers of a correctness file?

    chateval bench answer_check --plugin examples/extending/my_benchmark.py \\
        --data examples/correctness.jsonl --out runs/answer-check

Each line of ``--data`` (question, answer, reference, optional label: the format of ``chateval
evaluate --task correctness``) is one unit, judged by the judge of ``--preset`` with ``--model``.
The run directory is the one every benchmark writes: ``config.json``, ``samples.jsonl`` (a
line per finished unit, so ``--resume`` skips it), ``summary.json``, ``report.md``. Options are generated from
``Config``, so ``chateval bench answer_check --help`` lists them. An installed package registers
the class under the ``chateval.benchmarks`` entry point group instead of ``--plugin``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chateval import Evaluator
from chateval.bench import BenchConfig, Benchmark, benchmark
from chateval.bench.base import open_run, run_units
from chateval.runs.files import atomic_write
from chateval.util.options import opt


class Config(BenchConfig):
    data: str = opt(..., "a JSONL file of correctness items (question, answer, reference, optional label)")
    model: str = opt("offline", "the judge's model spec")
    preset: str = opt("single", "the judge: a strategies/ preset name or a YAML file")


@benchmark("answer_check")
class AnswerCheck(Benchmark):
    description = "judge each answer of a correctness file against its reference; agreement with its labels"
    config_model = Config

    async def run(self, config: Config, progress: Any) -> dict[str, Any]:
        lines = Path(config.data).read_text(encoding="utf-8").splitlines()
        items = [json.loads(line) for line in lines if line.strip()][: config.limit]
        judge = Evaluator.from_preset(config.preset, model=config.model, task="correctness")

        async def unit(item: dict[str, Any]) -> dict[str, Any]:
            result = await judge.check(item["question"], item["answer"], item["reference"])
            if result.status != "ok" or result.verdict is None:
                return {"status": "failed", "error": result.error or "no verdict"}
            label = item.get("label")
            return {"status": "ok", "id": item["id"], "correct": result.verdict.correct, "label": label,
                    "agrees": None if label is None else result.verdict.correct == (label == "correct"),
                    "usage": result.usage.model_dump()}

        settings = {"benchmark": "answer_check", "data": config.data, "model": config.model, "preset": config.preset}
        with open_run(config, settings | {"config_hash": json.dumps(settings, sort_keys=True)}) as run:
            records = await run_units(((str(i["id"]), i) for i in items), unit, run, workers=config.workers,
                                      progress=progress)
            ok = [r for r in records if r["status"] == "ok"]
            judged = [r["agrees"] for r in ok if r["agrees"] is not None]
            summary = {"benchmark": "answer_check", "n_units": len(records), "n_failed": len(records) - len(ok),
                       "correct_rate": sum(r["correct"] for r in ok) / len(ok) if ok else None,
                       "agreement": sum(judged) / len(judged) if judged else None}
            run.write_summary(summary)
            rate = "n/a" if summary["correct_rate"] is None else f"{summary['correct_rate']:.1%}"
            atomic_write(run.path / "report.md", f"# answer_check\n\n{len(ok)} of {len(records)} answers judged "
                                                 f"({config.model}, preset {config.preset}); judged correct: {rate}.\n")
        return summary
