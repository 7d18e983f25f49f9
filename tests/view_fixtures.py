"""Small run directories made by the real commands with the offline model, for the viewer tests."""

from __future__ import annotations

import json
from pathlib import Path

from chateval.cli import main

from .conftest import EXAMPLES, read_jsonl, write_jsonl

SCRIPT = "<script>document.title='pwned'</script>"


def evaluate_run(tmp: Path, name: str = "ev", *extra: str) -> Path:
    """Pairwise evaluate with --swap and a summarizer; one candidate carries a <script> tag."""
    rows = read_jsonl(EXAMPLES / "faireval_pairwise.jsonl")[:4]
    rows[0] = dict(rows[0], answer_2=f"{SCRIPT} I would rather not say.")
    data = write_jsonl(tmp / f"{name}.jsonl", rows)
    out = tmp / name
    assert main(["evaluate", str(data), "--model", "offline", "--strategy", "simultaneous_summarizer", "--agents", "2",
                 "--turns", "2", "--swap", "--out", str(out), "--no-cache", *extra]) == 0
    return out


def faireval_run(tmp: Path) -> Path:
    rows = [{"question_id": i, "category": cat, "question": q, "answer_gpt35": a, "answer_vicuna13b": b,
             "human_label": lab, "human_label_raw": lab.upper()}
            for i, (cat, q, a, b, lab) in enumerate([
                ("generic", "How do I sleep better?", "Keep a regular schedule and a dark room.", "Sleep.", "gpt35"),
                ("coding", "Reverse a list in Python?", "Use reversed(xs) or xs[::-1].", "xs.reverse() works in place;"
                 " xs[::-1] makes a reversed copy of the list.", "vicuna"),
                ("generic", "Name a prime number", "7", "7 is a prime number.", "tie")], 1)]
    data = write_jsonl(tmp / "faireval.jsonl", rows)
    out = tmp / "fe"
    assert main(["bench", "faireval", "--data", str(data), "--model", "offline", "--out", str(out)]) == 0
    return out


def _session(sid: str, user: str, reply: str, gold: bool) -> list[dict]:
    return [{"role": "user", "content": user, "has_answer": gold}, {"role": "assistant", "content": reply, "has_answer": False}]


def longmemeval_data(tmp: Path) -> Path:
    """Two questions over three sessions each; the gold session is named answer_*."""
    entries = []
    for qid, qtype, q, a, fact in [("q-city", "single-session-user", "Which city did I move to?", "Lisbon",
                                    "I just moved to Lisbon for my new job."),
                                   ("q-dog", "knowledge-update", "What is my dog's name?", "Biscuit",
                                    "My dog is called Biscuit and she loves the beach.")]:
        sessions = [_session("noise_1", "Can you suggest a pasta recipe?", "Try carbonara.", False),
                    _session(f"answer_{qid}", fact, "That sounds lovely.", True),
                    _session("noise_2", "What is the weather like in spring?", "Mild, usually.", False)]
        entries.append({"question_id": qid, "question_type": qtype, "question": q, "answer": a,
                        "question_date": "2024/03/01 (Fri) 10:00",
                        "haystack_dates": ["2024/01/01 (Mon) 09:00", "2024/01/02 (Tue) 09:00", "2024/01/03 (Wed) 09:00"],
                        "haystack_session_ids": [f"noise_1_{qid}", f"answer_{qid}", f"noise_2_{qid}"],
                        "haystack_sessions": sessions, "answer_session_ids": [f"answer_{qid}"]})
    path = tmp / "lme.json"
    path.write_text(json.dumps(entries))
    return path


def longmemeval_run(tmp: Path, *extra: str) -> Path:
    """Both judges (single and debate), so a record carries a single verdict and a transcript."""
    out = tmp / "lme"
    assert main(["bench", "longmemeval", "--data", str(longmemeval_data(tmp)), "--out", str(out), "--judge", "both",
                 "--systems", "full_context,retrieval", "--answer-model", "offline", "--embedder", "hash", *extra]) == 0
    return out


def head2head_run(tmp: Path) -> Path:
    out = tmp / "h2h"
    assert main(["bench", "head2head", "--data", str(longmemeval_data(tmp)), "--out", str(out),
                 "--systems", "full_context,retrieval", "--answer-model", "offline", "--embedder", "hash"]) == 0
    return out
