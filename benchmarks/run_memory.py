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
- ``locomo``: ``chateval bench locomo --systems full_context`` over N generated QA, 50 per
  conversation (8 dated sessions of 10 turns each; the conversations grow with N; categories 1-5;
  the offline model answers, the single judge scores);
- ``msc``: ``chateval bench msc-response --systems full_context --no-bertscore --no-helpfulness``
  over N generated response cases (a session-3 release file: two earlier sessions, 10 turns to
  predict per episode);
- ``msc-pairwise``: the same cases with ``--systems full_context,retrieval`` and the default
  pairwise memory helpfulness (the offline panel compares each turn's two systems);
- ``teafarm``: ``chateval bench teafarm --systems full_context --per-speaker 5`` over N generated
  questions (10 per conversation of 5 dated sessions; TeaFarm writes and asks them, the single
  judge scores).

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

    python benchmarks/run_memory.py [--commands NAME ...] [--sizes 1000 10000]
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


# --- LoCoMo, MSC next-response and TeaFarm (issue 38 item 3) -----------------------------------
LOCOMO_QA_PER_CONV = 50  # the released conversations hold ~200 QA each; 50 keeps 10,000 QA at 200 conversations
TEAFARM_PER_SPEAKER = 5  # 10 questions per conversation (TeaBag's default is 1 per speaker)
MSC_TURNS = 11  # the last session's turns: 10 to predict per episode (every turn from the second on)
TOPICS = ("pottery", "the violin", "marathons", "gardening", "chess", "baking", "sailing", "painting")


def _locomo_conversation(c: int, n_qa: int, sessions: int = 8, turns: int = 10) -> dict:
    """A LoCoMo-format conversation: ``sessions`` dated sessions of ``turns`` turns, ``n_qa`` QA
    over its turns (categories 1-5 in turn, category 5 with its adversarial answer)."""
    conv: dict = {"speaker_a": f"Ana{c}", "speaker_b": f"Ben{c}"}
    for s in range(1, sessions + 1):
        conv[f"session_{s}_date_time"] = f"10:{s:02d} am on {s} March, 2023"
        conv[f"session_{s}"] = [
            {
                "speaker": conv["speaker_a" if t % 2 == 0 else "speaker_b"],
                "dia_id": f"D{s}:{t + 1}",
                "text": f"In session {s} I spent {t + 2} hours on {TOPICS[(c + s + t) % len(TOPICS)]} with friend {c}.",
            }
            for t in range(turns)
        ]
    qa = []
    for j in range(n_qa):
        s, t, cat = 1 + j % sessions, j % turns, 1 + j % 5
        q = {"question": f"How long did Ana{c} spend on {TOPICS[(c + s + t) % len(TOPICS)]} in session {s}?"}
        key = "adversarial_answer" if cat == 5 else "answer"
        qa.append(q | {key: f"{t + 2} hours", "evidence": [f"D{s}:{t + 1}"], "category": cat})
    return {"sample_id": f"conv-{c}", "conversation": conv, "qa": qa}


def write_locomo(path: Path, n: int, per_conv: int) -> None:
    """``n`` QA spread over conversations of ``per_conv`` QA each (the conversations grow with n)."""
    with path.open("w") as f:
        f.write("[")
        for c in range(-(-n // per_conv)):
            conv = _locomo_conversation(c, min(per_conv, n - c * per_conv))
            f.write(("," if c else "") + json.dumps(conv))
        f.write("]")


def write_msc(path: Path, n: int) -> None:
    """A Multi-Session Chat release file (session 3: two earlier sessions) whose episodes hold
    ``MSC_TURNS - 1`` turns to predict each, ``n`` in all."""
    with path.open("w") as f:
        for e in range(-(-n // (MSC_TURNS - 1))):
            topic = TOPICS[e % len(TOPICS)]

            def session(k: int, e: int = e, topic: str = topic) -> list[dict]:
                return [
                    {"text": f"Session {k} line {t}: I practised {topic} for {t + 1} hours, episode {e}."}
                    for t in range(8)
                ]

            row = {
                "personas": [[f"I like {topic}."], ["I work at a hospital."]],
                "dialog": [
                    {
                        "text": f"Turn {t}: since we last spoke I went on with {topic} every day ({e}).",
                        "id": f"Speaker {1 + t % 2}",
                    }
                    for t in range(MSC_TURNS)
                ],
                "previous_dialogs": [
                    {"dialog": session(k), "personas": [["p1"], ["p2"]], "time_num": 3 + k, "time_unit": "days"}
                    for k in (1, 2)
                ],
                "metadata": {"initial_data_id": f"ep{e}", "session_id": 2},
            }
            f.write(json.dumps(row) + "\n")


def locomo(tmp: Path, n: int) -> list[str]:
    data = tmp / f"locomo{n}.json"
    if not data.exists():
        write_locomo(data, n, LOCOMO_QA_PER_CONV)
    return ["bench", "locomo", "--data", str(data), "--systems", "full_context"] + [
        "--answer-model", "offline", "--judge-model", "offline", "--embedder", "hash", "--no-cache",
    ]  # fmt: skip


def msc(tmp: Path, n: int) -> list[str]:
    data = tmp / f"msc{n}.jsonl"
    if not data.exists():
        write_msc(data, n)
    return ["bench", "msc-response", "--data", str(data), "--systems", "full_context"] + [
        "--answer-model", "offline", "--embedder", "hash", "--no-cache", "--no-bertscore", "--no-helpfulness",
    ]  # fmt: skip


def msc_pairwise(tmp: Path, n: int) -> list[str]:
    data = tmp / f"msc{n}.jsonl"
    if not data.exists():
        write_msc(data, n)
    return ["bench", "msc-response", "--data", str(data), "--systems", "full_context,retrieval"] + [
        "--answer-model", "offline", "--judge-model", "offline", "--embedder", "hash", "--no-cache", "--no-bertscore",
    ]  # fmt: skip


def teafarm(tmp: Path, n: int) -> list[str]:
    data = tmp / f"teafarm{n}.json"
    if not data.exists():
        with data.open("w") as f:  # LoCoMo-format conversations without QA: TeaFarm writes its own questions
            per_conv = 2 * TEAFARM_PER_SPEAKER
            convs = (_locomo_conversation(c, 0, sessions=5) for c in range(-(-n // per_conv)))
            f.write("[" + ",".join(json.dumps(c) for c in convs) + "]")
    return ["bench", "teafarm", "--data", str(data), "--systems", "full_context"] + [
        "--per-speaker", str(TEAFARM_PER_SPEAKER),
        "--answer-model", "offline", "--judge-model", "offline", "--embedder", "hash", "--no-cache",
    ]  # fmt: skip


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
    "locomo": locomo,
    "msc": msc,
    "msc-pairwise": msc_pairwise,
    "teafarm": teafarm,
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
