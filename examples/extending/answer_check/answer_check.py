"""answer_check: does the judge accept the answers of a correctness file?

Each line of ``--data`` (question, answer, reference, optional label: the format of ``chateval
evaluate --task correctness``) is one unit, judged by the judge of ``--preset`` with ``--model``.
The run directory is the one every benchmark writes: ``config.json``, ``samples.jsonl`` (a
line per finished unit, so ``--resume`` skips it), ``summary.json``, ``report.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chateval import Evaluator
from chateval.bench import Benchmark, benchmark
from chateval.bench.base import open_run, run_units

from .report import summarize, write_report
from .settings import DESCRIPTION, Config


@benchmark("answer_check")
class AnswerCheck(Benchmark):
    description = DESCRIPTION
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
            summary = summarize(records)
            run.write_summary(summary)
            write_report(run.path, summary, config.model, config.preset)
        return summary
