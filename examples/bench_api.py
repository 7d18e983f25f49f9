"""Run a benchmark from Python with your own memory system class (offline, on the small
LongMemEval-format fixture in tests/fixtures): the run directory is the one the CLI writes.

    python examples/bench_api.py
"""

from pathlib import Path

import chateval
import chateval.bench as bench
from my_memory import MyMemory  # examples/my_memory.py, next to this file

HERE = Path(__file__).parent
summary = bench.run("longmemeval", {
    "data": str(HERE.parent / "tests" / "fixtures" / "lme_tiny.json"),
    "systems": [MyMemory, "full_context"],  # a class (no registration needed) and a built-in
    "settings": {"my_memory": {"k": 3}},
    "embedder": "hash",  # instant and offline; the default is MiniLM
    "out": "runs/bench-api", "overwrite": True,
})
for row in summary["headline"]:
    print(f"{row['system']:>14}: accuracy {row['value']:.2f} on {row['n']} questions, "
          f"recall_all@5 {row['recall_all@5']}, {row['failed']} failed")
# The run directory read back, typed: its summary and one record per unit (question x system).
run = chateval.read_run("runs/bench-api")
print(f"{run.kind} run (format {run.format_version}):", len(run.records), "records;",
      {m: e.qa["single"]["overall"] for m, e in run.summary.methods.items()})
wrong = [r for r in run.records if r.correct is False]
print("judged wrong:", [(r.method, r.question_id) for r in wrong][:5])
print("settings model:", sorted(bench.config_model("longmemeval").model_fields)[:6], "...")
