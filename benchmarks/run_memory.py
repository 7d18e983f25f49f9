"""Peak memory of a run as it grows (issue 38 item 3): the peak RSS of a whole CLI process
(offline model, no cache) over 1,000 and 10,000 generated units, side by side, as a ratio. Each
run is its own subprocess; its peak RSS is the kernel's ``ru_maxrss`` for that child
(``os.wait4``). Commands (``--commands``):

- ``evaluate``: ``chateval evaluate`` judging N pairwise samples;
- ``longmemeval``: ``chateval bench longmemeval --systems full_context`` over N generated
  questions (two short haystack sessions each; the offline model answers, the single judge scores);
- ``head2head``: ``chateval bench head2head --systems full_context,retrieval`` over the same N
  generated questions (the offline panel judges each pair of answers in both orders);
- ``calibrate``: ``chateval calibrate`` over N labelled pairwise items with two settings (the
  single-judge baseline and ``chateval_default``), bootstrap intervals and paired tests included.

The judge benchmarks and the audit (each also a ``--commands`` name):

- ``faireval``: ``chateval bench faireval`` over N generated FairEval rows (its own JSONL format),
  the default settings (single and multi, both answer orders), kappa bootstraps included;
- ``topical-chat``: ``chateval bench topical-chat`` over N generated UniEval-format rows (N/6
  contexts x the 6 USR systems), the default settings (single and multi, per-aspect debates) and the
  two text baselines that need no model (ROUGE-L, BLEU-4; the MiniLM ones would add a constant
  model load, not growth);
- ``audit``: ``chateval audit`` over the N pairwise samples of ``evaluate``, every default
  perturbation and its length-matched control.

With ``--before TREE`` each size runs first with that chateval tree (the code before a change),
then with ``--repo`` (default: this checkout), so both are measured in one run. Inputs are
generated in a temporary folder under ``--dir`` and removed afterwards. Run:

    python benchmarks/run_memory.py [--commands evaluate longmemeval head2head calibrate] [--sizes 1000 10000]
        [--before TREE] [--repo TREE] [--dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LABELS = ("1", "2", "tie")


def write_pairs(path: Path, n: int, *, labelled: bool = False) -> None:
    with path.open("w") as f:
        for i in range(n):
            q = f"Question {i}: which reply explains how the user's weekend plans changed after the move?"
            row = {
                "id": f"s{i}",
                "question": q,
                "answer_1": f"They planned a hike {i} but it rained, so they stayed in and read.",
                "answer_2": f"Answer {i}: the user moved, then went to the coast with a friend.",
            }
            if labelled:
                row["label"] = LABELS[i % 3]
            f.write(json.dumps(row) + "\n")


def write_longmemeval(path: Path, n: int) -> None:
    """N LongMemEval questions (the official format), each with two short dated sessions, the
    second holding the answer."""

    def turn(role: str, text: str, answer: bool = False) -> dict:
        return {"role": role, "content": text, **({"has_answer": answer} if role == "user" else {})}

    with path.open("w") as f:
        f.write("[")
        for i in range(n):
            q = {
                "question_id": f"q{i}",
                "question_type": "single-session-user",
                "question": f"Where is my new job {i}?",
                "answer": f"Fernbrook {i}",
                "question_date": "2023/05/10 (Wed) 12:00",
                "haystack_session_ids": [f"s{i}a", f"answer_s{i}b"],
                "haystack_dates": ["2023/03/02 (Thu) 10:15", "2023/03/20 (Mon) 18:40"],
                "haystack_sessions": [
                    [turn("user", f"I planted tomatoes {i} in the garden."), turn("assistant", "Lovely!")],
                    [
                        turn("user", f"My new job at Fernbrook {i} starts next week.", True),
                        turn("assistant", "Well done!"),
                    ],
                ],
                "answer_session_ids": [f"answer_s{i}b"],
            }
            f.write(("," if i else "") + json.dumps(q))
        f.write("]")


def evaluate(tmp: Path, n: int) -> list[str]:
    data = tmp / f"pairs{n}.jsonl"
    if not data.exists():
        write_pairs(data, n)
    return ["evaluate", str(data), "--model", "offline", "--no-cache"]


def longmemeval(tmp: Path, n: int) -> list[str]:
    data = tmp / f"lme{n}.json"
    if not data.exists():
        write_longmemeval(data, n)
    return ["bench", "longmemeval", "--data", str(data), "--systems", "full_context"] + [
        "--answer-model", "offline", "--embedder", "hash", "--no-cache",
    ]  # fmt: skip


def head2head(tmp: Path, n: int) -> list[str]:
    data = tmp / f"lme{n}.json"
    if not data.exists():
        write_longmemeval(data, n)
    return ["bench", "head2head", "--data", str(data), "--systems", "full_context,retrieval"] + [
        "--answer-model", "offline", "--judge-model", "offline", "--embedder", "hash", "--no-cache",
    ]  # fmt: skip


def calibrate(tmp: Path, n: int) -> list[str]:
    data = tmp / f"labelled{n}.jsonl"
    if not data.exists():
        write_pairs(data, n, labelled=True)
    return ["calibrate", str(data), "--model", "offline", "--no-cache", "--setting", "multi=chateval_default"]


def write_faireval(path: Path, n: int) -> None:
    """N FairEval rows in the file's own field names (question_id, answer_gpt35, human_label...)."""
    human = ("gpt35", "vicuna", "tie")
    with path.open("w") as f:
        for i in range(n):
            row = {
                "question_id": i + 1,
                "category": ("generic", "knowledge", "coding", "writing")[i % 4],
                "question": f"Question {i}: how do I keep houseplants alive through a dry winter?",
                "answer_gpt35": f"Water {i} when the top soil is dry, give indirect light, and repot every two years.",
                "answer_vicuna13b": f"Plants {i} need water and some light.",
                "human_label": human[i % 3],
            }
            f.write(json.dumps(row) + "\n")


def write_topical_chat(path: Path, n: int) -> None:
    """N Topical-Chat rows in UniEval's format: N/6 dialogue contexts x the 6 USR systems."""
    systems = ("Original Ground Truth", "New Human Generated", "Argmax Decoding") + tuple(
        f"Nucleus Decoding (p = 0.{p})" for p in (3, 5, 7)
    )
    with path.open("w") as f:
        f.write("[")
        for i in range(n):
            c, s = divmod(i, len(systems))
            row = {
                "source": f"did you know the first video game {c} was made in 1958?\nno, which one was it?",
                "context": f"Tennis for Two {c} was created in 1958 on an oscilloscope.",
                "system_output": f"it was called tennis for two {c} and ran on an oscilloscope, system {s} !",
                "system_id": systems[s],
                "scores": {
                    "naturalness": 1 + (i % 3),
                    "coherence": 1 + (i * 7 % 3),
                    "engagingness": 1 + (i * 5 % 3) * 0.5,
                    "groundedness": i % 2,
                },
            }
            f.write(("," if i else "") + json.dumps(row))
        f.write("]")


def faireval(tmp: Path, n: int) -> list[str]:
    data = tmp / f"faireval{n}.jsonl"
    if not data.exists():
        write_faireval(data, n)
    return ["bench", "faireval", "--data", str(data), "--model", "offline", "--no-cache"]


def topical_chat(tmp: Path, n: int) -> list[str]:
    data = tmp / f"topical{n}.json"
    if not data.exists():
        write_topical_chat(data, n)
    return ["bench", "topical-chat", "--data", str(data), "--model", "offline", "--no-cache"] + [
        "--baselines", "rouge_l,bleu4",
    ]  # fmt: skip


def audit(tmp: Path, n: int) -> list[str]:
    data = tmp / f"pairs{n}.jsonl"
    if not data.exists():
        write_pairs(data, n)
    return ["audit", str(data), "--model", "offline", "--no-cache"]


COMMANDS: dict[str, Callable[[Path, int], list[str]]] = {
    "evaluate": evaluate,
    "longmemeval": longmemeval,
    "head2head": head2head,
    "calibrate": calibrate,
    "faireval": faireval,
    "topical-chat": topical_chat,
    "audit": audit,
}


def peak_rss(argv: list[str], cwd: Path, repo: Path) -> tuple[float, float]:
    """Peak RSS (MiB) and wall time (s) of one subprocess."""
    env = dict(os.environ, PYTHONPATH=str(repo), CHATEVAL_CACHE_DIR=str(cwd / "cache"))
    log = cwd / "stderr.log"  # a file, not a pipe: a run's progress lines would fill a pipe and stall it
    t0 = time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(argv)} failed ({code}): {log.read_text()[-2000:]}")
    return usage.ru_maxrss / 1024, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commands", nargs="+", choices=list(COMMANDS), default=["evaluate"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--repo", type=Path, default=REPO, help="the chateval tree to run (another checkout: before/after)")
    ap.add_argument("--before", type=Path, help="also run this chateval tree (the code before), side by side")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "run_memory.json")
    args = ap.parse_args()
    trees = ([("before", args.before)] if args.before else []) + [("after" if args.before else "this", args.repo)]
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="run-memory-") as tmp:
        for command in args.commands:
            for n in args.sizes:
                for code, tree in trees:
                    out = Path(tmp) / f"{command}-{code}-{n}"
                    argv = [sys.executable, "-m", "chateval.cli", *COMMANDS[command](Path(tmp), n), "--out", str(out)]
                    rss, wall = peak_rss(argv, Path(tmp), tree)
                    rows.append(
                        {
                            "command": command,
                            "code": code,
                            "units": n,
                            "peak_rss_mib": round(rss, 1),
                            "wall_s": round(wall, 1),
                        }
                    )
                    print(
                        f"{command:>12} {code:>6} {n:>7} units: peak RSS {rss:.1f} MiB, {wall:.1f} s wall", flush=True
                    )
                    write(args, rows)  # as it goes: a long run that is stopped keeps what it measured
    write(args, rows)
    for r in rows:
        if r["units"] != args.sizes[0]:
            print(f"{r['command']} {r['code']}: {r['units']} / {args.sizes[0]} units: {r['ratio_to_first']:.2f}x")


def write(args: argparse.Namespace, rows: list[dict]) -> None:
    for r in rows:
        first = next(x for x in rows if x["command"] == r["command"] and x["code"] == r["code"])
        r["ratio_to_first"] = round(r["peak_rss_mib"] / first["peak_rss_mib"], 3)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    out = {"sizes": args.sizes, "load_at_end": os.getloadavg(), "runs": rows}
    args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
