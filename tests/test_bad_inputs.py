"""Malformed inputs and settings: each is one line on stderr, exit code 2, no traceback, and
nothing written anywhere (not even --out).

Every case is generated here: the files it needs are written into an empty working folder,
the command runs there with relative paths, and the folder's listing is compared before and
after. Most cases run in-process (``chateval.cli.main`` + capsys); a few run as real
subprocesses to check what a user's terminal would show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chateval.bench.registry import BENCHMARKS
from chateval.cli import main

GOOD = {"id": "a", "question": "Where do I live?", "answer_1": "Berlin.", "answer_2": "Paris."}
GOOD2 = {"id": "b", "question": "What is 2+2?", "answer_1": "4", "answer_2": "5"}


def line(obj: object) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def jsonl(*rows: object) -> bytes:
    return b"".join(line(r) for r in rows)


def without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


# --- LongMemEval / LoCoMo entries -------------------------------------------------------------

def lme_entry(**over: object) -> dict:
    entry = {
        "question_id": "q1", "question_type": "single-session-user", "question": "Where do I live?",
        "answer": "Berlin", "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["answer_s1"], "haystack_dates": ["2023/05/28 (Sun) 19:47"],
        "haystack_sessions": [[{"role": "user", "content": "I moved to Berlin.", "has_answer": True},
                               {"role": "assistant", "content": "Nice!"}]],
        "answer_session_ids": ["answer_s1"],
    }
    entry.update(over)
    return {k: v for k, v in entry.items() if v is not DROP}


DROP = object()


def locomo_conv(**over: object) -> dict:
    conv = {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Berlin."},
                          {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!"}],
        },
        "qa": [{"question": "Where does Ann live?", "answer": "Berlin", "evidence": ["D1:1"], "category": 4}],
    }
    conv.update(over)
    return {k: v for k, v in conv.items() if v is not DROP}


def jbytes(obj: object) -> bytes:
    return json.dumps(obj).encode()


# --- the corpus -------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    files: dict[str, bytes | None]  # None: a folder
    argv: list[str]
    needles: list[str]  # each must appear in the one error line
    env: dict[str, str] = field(default_factory=dict)
    bench: str | None = None  # the benchmark it needs (skipped when not registered)


def ev(*extra: str, input: str = "in.jsonl") -> list[str]:
    return ["evaluate", input, "--out", "out", *extra]


def lme(*extra: str, data: str = "lme.json") -> list[str]:
    return ["bench", "longmemeval", "--data", data, "--out", "out", "--systems", "full_context,retrieval",
            "--embedder", "hash", *extra]


def locomo(*extra: str, data: str = "locomo.json") -> list[str]:
    return ["bench", "locomo", "--data", data, "--out", "out", "--systems", "full_context",
            "--embedder", "hash", *extra]


def h2h(*extra: str, data: str = "lme.json") -> list[str]:
    return ["bench", "head2head", "--data", data, "--out", "out", "--systems", "full_context,retrieval",
            "--embedder", "hash", *extra]


def teafarm(*extra: str, data: str = "locomo.json") -> list[str]:
    return ["bench", "teafarm", "--data", data, "--out", "out", "--systems", "full_context", "--embedder", "hash",
            *extra]


def fe_row(**over: object) -> dict:
    return {"question_id": 1, "category": "generic", "question": "q", "answer_gpt35": "a", "answer_vicuna13b": "b",
            "human_label": "tie"} | over


def faireval(*extra: str) -> list[str]:
    return ["bench", "faireval", "--data", "fe.jsonl", "--out", "out", *extra]


def msc_episode(eid: str) -> dict:
    """A Multi-Session Chat episode in THEANINE's column layout."""
    return {"dataID": eid, "first_session_dialogue": ["I moved to Berlin.", "Nice!"],
            "first_session_speakers": ["Ann", "Bob"], "second_session_dialogue": ["Berlin is cold.", "Wrap up!"],
            "second_session_speakers": ["Ann", "Bob"]}


def msc_release_row(eid: str) -> dict:
    """A Multi-Session Chat episode in its public release layout (one JSON object per line)."""
    return {"metadata": {"initial_data_id": eid}, "personas": [["I like music."], ["I work at a hospital."]],
            "dialog": [{"text": "I play the violin.", "id": "Speaker 1"}, {"text": "Since when?", "id": "Speaker 2"}],
            "previous_dialogs": [{"dialog": [{"text": "Hi."}, {"text": "Hello."}], "time_num": 2, "time_unit": "days"}]}


def tea_question(qid: str) -> dict:
    return {"id": qid, "asker": "Ann", "listener": "Bob", "question": "Did I move to Paris?", "answer": "No, Berlin.",
            "date": "2023-05-20T12:00:00Z", "turns": [{"speaker": "Ann", "text": "Hi!"}]}


def teabag(*conversations: dict) -> bytes:
    return jbytes({"format": "teabag-1", "per_speaker": 1, "conversations": list(conversations)})


def tea_conv(cid: str, *questions: dict) -> dict:
    return {"id": cid, "speakers": ["Ann", "Bob"], "summaries": [], "questions": list(questions)}


def unieval_row(system: str = "Original Ground Truth", source: str = "hi\nhello") -> dict:
    return {"source": source, "context": "a fact", "system_output": "a reply", "system_id": system,
            "scores": {"naturalness": 2.0, "coherence": 2.0, "engagingness": 2.0, "groundedness": 1.0}}


MB_ANSWER = "x" * 1_000_000
GOOD_LME = {"lme.json": jbytes([lme_entry()])}
PERSONA_DIR = "personas"

CASES = [
    # --- input file: syntax ---
    Case("broken-json", {"in.jsonl": line(GOOD) + b'{"id": "b", "question": "q"\n'}, ev(),
         ["in.jsonl:2:", "invalid JSON"]),
    Case("trailing-comma", {"in.jsonl": b'{"id": "a", "question": "q", "answer_1": "x", "answer_2": "y",}\n'}, ev(),
         ["in.jsonl:1:", "invalid JSON"]),
    Case("json-array-line", {"in.jsonl": line(GOOD) + b"[1, 2]\n"}, ev(), ["in.jsonl:2:", "expected a JSON object"]),
    Case("json-scalar-line", {"in.jsonl": b"42\n"}, ev(), ["in.jsonl:1:", "expected a JSON object"]),
    Case("non-utf8", {"in.jsonl": line(GOOD) + line(GOOD2) + b'{"id": "c", "question": "caf\xe9 \xff", '
                      b'"answer_1": "x", "answer_2": "y"}\n'}, ev(), ["in.jsonl:3:", "not valid UTF-8"]),
    Case("empty-file", {"in.jsonl": b""}, ev(), ["in.jsonl", "no records"]),
    Case("blank-lines-only", {"in.jsonl": b"\n   \n\n"}, ev(), ["in.jsonl", "no records"]),
    # --- input file: fields ---
    Case("wrong-type-answer", {"in.jsonl": line(GOOD | {"answer_1": 3})}, ev(),
         ["in.jsonl:1:", "field 'answer_1'", "expected a string"]),
    Case("wrong-type-question", {"in.jsonl": line(GOOD) + line(GOOD2 | {"question": ["a", "b"]})}, ev(),
         ["in.jsonl:2:", "field 'question'", "expected a string"]),
    Case("wrong-type-id", {"in.jsonl": line(GOOD | {"id": 1.5})}, ev(), ["in.jsonl:1:", "field 'id'"]),
    Case("bool-id", {"in.jsonl": line(GOOD | {"id": True})}, ev(), ["in.jsonl:1:", "field 'id'"]),
    Case("empty-id", {"in.jsonl": line(GOOD | {"id": "  "})}, ev(), ["in.jsonl:1:", "field 'id': empty"]),
    Case("wrong-type-context", {"in.jsonl": line(GOOD | {"context": 7})}, ev(), ["in.jsonl:1:", "field 'context'"]),
    Case("context-list-of-ints", {"in.jsonl": line(GOOD | {"context": [1, 2]})}, ev(),
         ["in.jsonl:1:", "field 'context'"]),
    Case("aspects-not-a-list", {"in.jsonl": line({"id": "a", "question": "q", "answer": "x", "aspects": "coherence"})},
         ev("--task", "score"), ["in.jsonl:1:", "field 'aspects'"]),
    Case("missing-answer_2", {"in.jsonl": line(GOOD) + line(without(GOOD2, "answer_2"))}, ev(),
         ["in.jsonl:2:", "field 'answer_2': missing"]),
    Case("missing-question", {"in.jsonl": line(without(GOOD, "question"))}, ev(),
         ["in.jsonl:1:", "field 'question': missing"]),
    Case("null-answer", {"in.jsonl": line(GOOD | {"answer_1": None})}, ev(), ["in.jsonl:1:", "field 'answer_1': missing"]),
    Case("correctness-missing-reference", {"in.jsonl": line({"id": "a", "question": "q", "answer": "x"})},
         ev("--task", "correctness"), ["in.jsonl:1:", "field 'reference': missing"]),
    Case("empty-answer", {"in.jsonl": line(GOOD | {"answer_1": ""})}, ev(), ["in.jsonl:1:", "field 'answer_1': empty"]),
    Case("blank-answer-score", {"in.jsonl": line({"id": "a", "question": "q", "answer": " \n\t "})},
         ev("--task", "score"), ["in.jsonl:1:", "field 'answer': empty"]),
    Case("1mb-answer", {"in.jsonl": line(GOOD) + line(GOOD2 | {"answer_2": MB_ANSWER})}, ev(),
         ["in.jsonl:2:", "field 'answer_2'", "1,000,000 characters", "over the limit"]),
    Case("duplicate-id", {"in.jsonl": line(GOOD) + line(GOOD2) + line(GOOD | {"question": "again?"})}, ev(),
         ["in.jsonl:3:", "duplicate id 'a' (first on line 1)"]),
    Case("duplicate-int-and-str-id", {"in.jsonl": line(GOOD | {"id": 7}) + line(GOOD2 | {"id": "7"})}, ev(),
         ["in.jsonl:2:", "duplicate id '7'"]),
    # --- input path ---
    Case("nonexistent-input", {}, ev(input="missing.jsonl"), ["missing.jsonl", "cannot read input"]),
    Case("directory-as-input", {"data": None}, ev(input="data"), ["data", "cannot read input"]),
    Case("out-is-a-file", {"in.jsonl": line(GOOD), "taken": b"not a folder\n"},
         ["evaluate", "in.jsonl", "--out", "taken"], ["taken", "--out must be a directory"]),
    # --- names and settings ---
    Case("unknown-persona", {"in.jsonl": line(GOOD)}, ev("--personas", "nobody"), ["unknown persona 'nobody'"]),
    Case("unknown-strategy", {"in.jsonl": line(GOOD)}, ev("--strategy", "shouting"), ["unknown strategy 'shouting'"]),
    Case("unknown-preset", {"in.jsonl": line(GOOD)}, ev("--preset", "no_such_preset"), ["unknown preset 'no_such_preset'"]),
    Case("bad-yaml-persona", {"in.jsonl": line(GOOD), PERSONA_DIR: None,
                              f"{PERSONA_DIR}/broken.yaml": b"name: Broken\nrole: [unclosed\n"},
         ev("--persona-dir", PERSONA_DIR, "--personas", "broken"), ["broken.yaml:", "invalid YAML"]),
    Case("persona-without-role", {"in.jsonl": line(GOOD), PERSONA_DIR: None,
                                  f"{PERSONA_DIR}/norole.yaml": b"name: No Role\n"},
         ev("--persona-dir", PERSONA_DIR, "--personas", "norole"), ["norole.yaml", "field 'role'"]),
    Case("persona-dir-missing", {"in.jsonl": line(GOOD)}, ev("--persona-dir", "nowhere"), ["nowhere", "does not exist"]),
    Case("prompt-dir-missing", {"in.jsonl": line(GOOD)}, ev("--prompt-dir", "nowhere"), ["nowhere", "does not exist"]),
    Case("preset-unknown-key", {"in.jsonl": line(GOOD), "p.yaml": b"strategy: one_by_one\nrounds: 3\n"},
         ev("--preset", "p.yaml"), ["p.yaml", "unknown setting 'rounds'"]),
    Case("preset-bad-value", {"in.jsonl": line(GOOD), "p.yaml": b"turns: many\n"},
         ev("--preset", "p.yaml"), ["p.yaml", "field 'turns'"]),
    Case("preset-bad-yaml", {"in.jsonl": line(GOOD), "p.yaml": b"turns: [2\n"},
         ev("--preset", "p.yaml"), ["p.yaml", "invalid YAML"]),
    Case("preset-not-a-mapping", {"in.jsonl": line(GOOD), "p.yaml": b"- one_by_one\n"},
         ev("--preset", "p.yaml"), ["p.yaml", "mapping"]),
    Case("plugin-missing", {"in.jsonl": line(GOOD)}, ev("--plugin", "nothere.py"), ["nothere.py", "plugin file not found"]),
    Case("plugin-raises", {"in.jsonl": line(GOOD), "boom.py": b"raise RuntimeError('plugin exploded')\n"},
         ev("--plugin", "boom.py"), ["boom.py", "plugin failed to import", "plugin exploded"]),
    Case("plugin-folder-no-init", {"in.jsonl": line(GOOD), "pack": None, "pack/bench.py": b"X = 1\n"},
         ev("--plugin", "pack/"), ["pack/", "package folder with __init__.py"]),
    Case("plugin-package-raises", {"in.jsonl": line(GOOD), "pack": None, "pack/__init__.py": b"from .inner import X\n",
                                   "pack/inner.py": b"raise RuntimeError('inner exploded')\n"},
         ev("--plugin", "./pack"), ["./pack", "plugin failed to import", "inner exploded"]),
    Case("agents-zero", {"in.jsonl": line(GOOD)}, ev("--agents", "0"), ["setting 'agents'"]),
    Case("turns-zero", {"in.jsonl": line(GOOD)}, ev("--turns", "0"), ["setting 'turns'"]),
    Case("negative-timeout", {"in.jsonl": line(GOOD)}, ev("--timeout", "-1"), ["setting 'timeout_s'"]),
    Case("negative-retry-delay", {"in.jsonl": line(GOOD)}, ev("--retry-base-delay", "-1"),
         ["setting 'retry_base_delay_s'"]),
    Case("max-connections-zero", {"in.jsonl": line(GOOD)}, ev("--max-connections", "0"), ["setting 'max_connections'"]),
    Case("swap-with-score", {"in.jsonl": line({"id": "a", "question": "q", "answer": "x"})},
         ev("--task", "score", "--swap"), ["--swap"]),
    Case("vote-with-score", {"in.jsonl": line({"id": "a", "question": "q", "answer": "x"})},
         ev("--task", "score", "--aggregate", "vote"), ["vote"]),
    Case("bad-price", {"in.jsonl": line(GOOD)}, ev("--price", "gpt-x=cheap"), ["--price 'gpt-x=cheap'"]),
    # --- models ---
    Case("bad-model-spec", {"in.jsonl": line(GOOD)}, ev("--model", "gpt4"), ["model spec 'gpt4'"]),
    Case("unknown-provider", {"in.jsonl": line(GOOD)}, ev("--model", "claude/sonnet"), ["unknown provider 'claude'"]),
    Case("missing-base-url", {"in.jsonl": line(GOOD)}, ev("--model", "openai-compatible/m"), ["needs --base-url"]),
    Case("missing-openai-key", {"in.jsonl": line(GOOD)}, ev("--model", "openai/gpt-4o-mini"), ["OPENAI_API_KEY"]),
    Case("persona-bad-model", {"in.jsonl": line(GOOD), PERSONA_DIR: None,
                               f"{PERSONA_DIR}/odd.yaml": b"name: Odd\nrole: A referee.\nmodel: nonsense\n"},
         ev("--persona-dir", PERSONA_DIR, "--personas", "odd"), ["model spec 'nonsense'"]),
    # --- bench longmemeval: dataset schema and options ---
    Case("lme-not-json", {"lme.json": b"[{\"question_id\": "}, lme(), ["lme.json:1:", "invalid JSON"]),
    Case("lme-not-a-list", {"lme.json": jbytes({"question_id": "q1"})}, lme(), ["lme.json", "expected a JSON list"]),
    Case("lme-entry-not-object", {"lme.json": jbytes([lme_entry(), "oops"])}, lme(),
         ["lme.json", "entry 1", "expected an object"]),
    Case("lme-missing-field", {"lme.json": jbytes([lme_entry(haystack_sessions=DROP)])}, lme(),
         ["lme.json", "entry 0 (question_id q1)", "field 'haystack_sessions' missing"]),
    Case("lme-wrong-type", {"lme.json": jbytes([lme_entry(question=42)])}, lme(),
         ["lme.json", "entry 0 (question_id q1)", "field 'question'"]),
    Case("lme-bad-date", {"lme.json": jbytes([lme_entry(question_date="yesterday")])}, lme(),
         ["lme.json", "entry 0 (question_id q1)", "question_date"]),
    Case("lme-length-mismatch", {"lme.json": jbytes([lme_entry(haystack_dates=[])])}, lme(),
         ["lme.json", "entry 0 (question_id q1)", "differ in length"]),
    Case("lme-session-not-a-list", {"lme.json": jbytes([lme_entry(haystack_sessions=["hello"])])}, lme(),
         ["lme.json", "entry 0 (question_id q1)", "session 'answer_s1'"]),
    Case("lme-missing-file", {}, lme(data="nope.json"), ["nope.json", "not found"]),
    Case("lme-directory", {"lmedir": None}, lme(data="lmedir"), ["lmedir", "cannot read"]),
    Case("lme-unknown-system", GOOD_LME, ["bench", "longmemeval", "--data", "lme.json", "--out", "out",
                                          "--systems", "full_context,telepathy", "--embedder", "hash"],
         ["unknown memory system 'telepathy'"]),
    Case("lme-set-no-system", GOOD_LME, lme("--set", "k=3"), ["--set 'k=3'", "SYSTEM.KEY=VALUE"]),
    Case("lme-set-system-not-run", GOOD_LME, lme("--set", "rsum.k=3"), ["--set 'rsum.k=3'", "not in --systems"]),
    Case("lme-set-unknown-key", GOOD_LME, lme("--set", "retrieval.depth=3"), ["retrieval", "depth"]),
    Case("lme-set-bad-value", GOOD_LME, lme("--set", "retrieval.k=lots"), ["retrieval", "k"]),
    Case("lme-set-out-of-range", GOOD_LME, lme("--set", "retrieval.k=0"), ["retrieval", "k"]),
    Case("lme-bad-answer-model", GOOD_LME, lme("--answer-model", "gpt4"), ["model spec 'gpt4'"]),
    Case("lme-missing-base-url", GOOD_LME, lme("--answer-model", "openai-compatible/m"), ["needs --base-url"]),
    Case("lme-unknown-judge-preset", GOOD_LME, lme("--judge", "debate", "--judge-preset", "nope"),
         ["unknown preset 'nope'"]),
    Case("lme-bad-embedder", GOOD_LME, lme("--embedder", "telepathic/1"), ["telepathic/1"]),
    # --- bench locomo ---
    Case("locomo-not-a-list", {"locomo.json": jbytes({"sample_id": "x"})}, locomo(),
         ["locomo.json", "expected a JSON list"]),
    Case("locomo-missing-sample-id", {"locomo.json": jbytes([locomo_conv(sample_id=DROP)])}, locomo(),
         ["locomo.json", "conversation 0", "field 'sample_id' missing"]),
    Case("locomo-bad-session-date", {"locomo.json": jbytes([locomo_conv(conversation={
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "someday",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"}]})])}, locomo(),
         ["locomo.json", "conversation 0 (conv-1)", "session_1_date_time"]),
    Case("locomo-qa-not-a-list", {"locomo.json": jbytes([locomo_conv(qa={"question": "q"})])}, locomo(),
         ["locomo.json", "conversation 0 (conv-1)", "field 'qa'"]),
    Case("locomo-turn-not-object", {"locomo.json": jbytes([locomo_conv(conversation={
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": ["hello"]})])}, locomo(), ["locomo.json", "conversation 0 (conv-1)", "session_1 turn 0"]),
    # --- bench faireval / topical-chat (when registered) ---
    Case("faireval-missing-label", {"fe.jsonl": line({"question_id": 1, "question": "q", "answer_gpt35": "a",
                                                      "answer_vicuna13b": "b"})},
         ["bench", "faireval", "--data", "fe.jsonl", "--out", "out"], ["fe.jsonl:1:", "field 'human_label'"],
         bench="faireval"),
    Case("faireval-string-id", {"fe.jsonl": line({"question_id": "one", "question": "q", "answer_gpt35": "a",
                                                  "answer_vicuna13b": "b", "human_label": "tie"})},
         ["bench", "faireval", "--data", "fe.jsonl", "--out", "out"], ["fe.jsonl:1:", "field 'question_id'"],
         bench="faireval"),
    # --- the same id twice in a data file (two units would share a key) -------------------------
    Case("locomo-duplicate-sample-id", {"locomo.json": jbytes([locomo_conv(), locomo_conv()])}, locomo(),
         ["locomo.json: conversation 1 (conv-1)", "duplicate sample_id 'conv-1'", "also conversation 0"]),
    Case("head2head-locomo-duplicate-sample-id", {"locomo.json": jbytes([locomo_conv(), locomo_conv()])},
         h2h(data="locomo.json"), ["locomo.json: conversation 1 (conv-1)", "duplicate sample_id 'conv-1'",
                                   "also conversation 0"]),
    Case("head2head-lme-duplicate-question-id", {"lme.json": jbytes([lme_entry(), lme_entry()])}, h2h(),
         ["lme.json: entry 1 (question_id q1)", "duplicate question_id 'q1'", "also entry 0"]),
    Case("teafarm-locomo-duplicate-sample-id", {"locomo.json": jbytes([locomo_conv(), locomo_conv()])}, teafarm(),
         ["locomo.json: conversation 1 (conv-1)", "duplicate sample_id 'conv-1'", "also conversation 0"]),
    Case("teafarm-msc-duplicate-episode-id",
         {"msc.json": jbytes([msc_episode("ep-7"), msc_episode("ep-8"), msc_episode("ep-7")])},
         teafarm(data="msc.json"), ["msc.json: episode 2 (ep-7)", "duplicate episode id 'ep-7'", "also episode 0"]),
    Case("teafarm-questions-duplicate-question-id",
         {"locomo.json": jbytes([locomo_conv()]),
          "bag.json": teabag(tea_conv("conv-1", tea_question("q1"), tea_question("q2"), tea_question("q1")))},
         teafarm("--questions", "bag.json"),
         ["bag.json: conversations[0].questions[2]", "duplicate question id 'q1'", "also questions[0]"]),
    Case("teafarm-questions-duplicate-conversation-id",
         {"locomo.json": jbytes([locomo_conv()]),
          "bag.json": teabag(tea_conv("conv-1", tea_question("q1")), tea_conv("conv-1", tea_question("q2")))},
         teafarm("--questions", "bag.json"),
         ["bag.json: conversations[1]", "duplicate conversation id 'conv-1'", "also conversations[0]"]),
    Case("msc-response-duplicate-episode-id",
         {"msc.jsonl": jsonl(msc_release_row("e1"), msc_release_row("e2"), msc_release_row("e1"))},
         ["bench", "msc-response", "--data", "msc.jsonl", "--out", "out", "--systems", "full_context",
          "--embedder", "hash"], ["msc.jsonl:3:", "duplicate episode id", "'e1'", "also line 1"]),
    Case("faireval-duplicate-question-id", {"fe.jsonl": jsonl(fe_row(), fe_row(question_id=2), fe_row())},
         faireval(), ["fe.jsonl:3:", "duplicate question_id '1'", "also line 1"], bench="faireval"),
    Case("topical-chat-duplicate-response", {"tc.json": jbytes([unieval_row(), unieval_row("Other"), unieval_row()])},
         ["bench", "topical-chat", "--data", "tc.json", "--out", "out"],
         ["tc.json: entry 2", "duplicate response", "'c00-original_ground_truth'", "also entry 0"],
         bench="topical-chat"),
    Case("topical-chat-usr-duplicate-model", {"tc.json": jbytes([{"context": "hi\nhello", "fact": "a fact", "responses": [
        {"response": "x", "model": "Original Ground Truth", "Natural": [2], "Maintains Context": [2], "Engaging": [2],
         "Uses Knowledge": [1]}] * 2}])},
         ["bench", "topical-chat", "--data", "tc.json", "--out", "out"],
         ["tc.json: entry 0: responses[1]", "duplicate response", "also responses[0]"], bench="topical-chat"),
    # --- a field of the wrong type: one line naming file, entry and field, never a traceback ----
    Case("faireval-category-not-a-string", {"fe.jsonl": jsonl(fe_row(), fe_row(question_id=2, category=5))},
         faireval(), ["fe.jsonl:2:", "field 'category'", "should be a string"], bench="faireval"),
    Case("faireval-label-a-list", {"fe.jsonl": jsonl(fe_row(human_label=["tie"]))},
         faireval(), ["fe.jsonl:1:", "field 'human_label'"], bench="faireval"),
    Case("locomo-speaker-not-a-string", {"locomo.json": jbytes([locomo_conv(conversation={
        "speaker_a": 5, "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"}]})])}, locomo(),
         ["locomo.json: conversation 0 (conv-1)", "field 'conversation.speaker_a'"]),
    Case("locomo-turn-text-a-list", {"locomo.json": jbytes([locomo_conv(conversation={
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": ["hi"]}]})])}, locomo(),
         ["locomo.json: conversation 0 (conv-1)", "session_1 turn 0", "field 'text'"]),
    Case("locomo-qa-not-an-object", {"locomo.json": jbytes([locomo_conv(qa=[5])])}, locomo(),
         ["locomo.json: conversation 0 (conv-1): qa 0", "expected an object"]),
    Case("locomo-evidence-not-a-list", {"locomo.json": jbytes([locomo_conv(qa=[
        {"question": "Where?", "answer": "Berlin", "evidence": 3, "category": 4}])])}, locomo(),
         ["locomo.json: conversation 0 (conv-1): qa 0", "field 'evidence'"]),
    Case("locomo-adversarial-answer-an-object", {"locomo.json": jbytes([locomo_conv(qa=[
        {"question": "Where?", "adversarial_answer": {"a": 1}, "evidence": [], "category": 5}])])}, locomo(),
         ["locomo.json: conversation 0 (conv-1): qa 0", "field 'adversarial_answer'"]),
    Case("locomo-answer-a-list", {"locomo.json": jbytes([locomo_conv(qa=[
        {"question": "Where?", "answer": ["Berlin"], "evidence": [], "category": 4}])])}, locomo(),
         ["locomo.json: conversation 0 (conv-1): qa 0", "field 'answer'", "string or a number"]),
    Case("lme-answer-session-ids-a-number", {"lme.json": jbytes([lme_entry(answer_session_ids=5)])}, lme(),
         ["lme.json: entry 0 (question_id q1)", "field 'answer_session_ids'"]),
    Case("lme-haystack-id-a-list", {"lme.json": jbytes([lme_entry(haystack_session_ids=[["s1"]])])}, lme(),
         ["lme.json: entry 0 (question_id q1)", "field 'haystack_session_ids'"]),
    Case("lme-answer-a-list", {"lme.json": jbytes([lme_entry(answer=["Berlin"])])}, lme(),
         ["lme.json: entry 0 (question_id q1)", "field 'answer'"]),
    Case("lme-answer-a-bool", {"lme.json": jbytes([lme_entry(answer=True)])}, lme(),
         ["lme.json: entry 0 (question_id q1)", "field 'answer'"]),
    Case("lme-role-system", {"lme.json": jbytes([lme_entry(haystack_sessions=[[
        {"role": "system", "content": "You are helpful."}, {"role": "user", "content": "I moved to Berlin."}]])])},
         lme(), ["lme.json: entry 0 (question_id q1)", "session 'answer_s1' turn 0", "field 'role'",
                 "user or assistant", "'system'"]),
    Case("head2head-lme-role-other", {"lme.json": jbytes([lme_entry(haystack_sessions=[[
        {"role": "User", "content": "I moved to Berlin."}]])])},
         h2h(), ["lme.json: entry 0 (question_id q1)", "field 'role'", "'User'"]),
    Case("msc-episode-id-an-object", {"msc.json": jbytes([msc_episode("x") | {"dataID": {"n": 1}}])},
         teafarm(data="msc.json"), ["msc.json: episode 0", "field 'dataID'"]),
    Case("msc-utterance-null", {"msc.json": jbytes([msc_episode("x") | {"second_session_dialogue": ["Hi", None]}])},
         teafarm(data="msc.json"), ["msc.json: episode 0 (x)", "field 'second_session_dialogue' item 1",
                                    "should be a string"]),
    Case("locomo-session-leading-zero", {"locomo.json": jbytes([locomo_conv(conversation={
        "speaker_a": "Ann", "speaker_b": "Bob", "session_01_date_time": "1:56 pm on 8 May, 2023",
        "session_01": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"}]})])}, locomo(),
         ["locomo.json: conversation 0 (conv-1)", "field 'conversation.session_01'", "session_1"]),
    # --- a list option with an empty name would fall back to the defaults unseen ---------------
    Case("personas-only-a-comma", {"in.jsonl": line(GOOD)}, ev("--personas", ","), ["--personas ','", "empty name"]),
    Case("personas-leading-empty", {"in.jsonl": line(GOOD)}, ev("--personas", " , critic"),
         ["--personas ' , critic'", "empty name"]),
    Case("personas-trailing-comma", {"in.jsonl": line(GOOD)}, ev("--personas", "critic,"), ["--personas", "empty name"]),
    Case("personas-empty", {"in.jsonl": line(GOOD)}, ev("--personas", ""), ["setting 'personas'", "at least one"]),
    Case("aspects-only-a-comma", {"in.jsonl": line({"id": "a", "question": "q", "answer": "x"})},
         ev("--task", "score", "--aspects", ","), ["--aspects ','", "empty name"]),
    Case("lme-systems-empty-name", GOOD_LME, ["bench", "longmemeval", "--data", "lme.json", "--out", "out",
                                              "--systems", "full_context,,retrieval", "--embedder", "hash"],
         ["--systems 'full_context,,retrieval'", "empty name"]),
    Case("lme-question-ids-only-a-comma", GOOD_LME, lme("--question-ids", ","), ["--question-ids ','", "empty name"]),
    Case("lme-question-ids-empty", GOOD_LME, lme("--question-ids", ""), ["setting 'question_ids'", "at least one"]),
    Case("head2head-types-empty", GOOD_LME, h2h("--types", ""), ["setting 'types'", "at least one"]),
    Case("faireval-personas-only-a-comma", {"fe.jsonl": jsonl(fe_row())}, faireval("--personas", ","),
         ["--personas ','", "empty name"], bench="faireval"),
    Case("topical-chat-wrong-schema", {"tc.json": jbytes([{"foo": "bar"}])},
         ["bench", "topical-chat", "--data", "tc.json", "--out", "out"], ["tc.json", "not a Topical-Chat file"],
         bench="topical-chat"),
    # --- lone surrogates (valid JSON, not text: no record holding one could be written) ---
    Case("lone-surrogate", {"in.jsonl": line(GOOD) + line(GOOD2 | {"answer_1": "x\ud800y"})}, ev(),
         ["in.jsonl:2:", "field 'answer_1'", "lone surrogate"]),
    Case("lone-surrogate-in-context", {"in.jsonl": line(GOOD | {"context": [{"role": "user", "content": "\udc00"}]})},
         ev(), ["in.jsonl:1:", "field 'context[0].content'", "lone surrogate"]),
    Case("lone-surrogate-in-unknown-field", {"in.jsonl": line(GOOD | {"note": {"\ud83d": 1}})}, ev(),
         ["in.jsonl:1:", "field 'note.\\ud83d'", "lone surrogate"]),
    Case("lme-lone-surrogate", {"lme.json": json.dumps([lme_entry(), lme_entry(question_id="q2", haystack_sessions=[[
        {"role": "user", "content": "I moved to \ud800 Berlin."}, {"role": "assistant", "content": "Nice!"}]])],
        indent=1).encode()}, lme(), ["lme.json:47:", "field '[1].haystack_sessions[0][0].content'", "lone surrogate"]),
    Case("locomo-lone-surrogate", {"locomo.json": jbytes([locomo_conv(qa=[{"question": "Where\udfff?", "answer": "B",
                                                                       "evidence": [], "category": 4}])])},
         locomo(), ["locomo.json:1:", "field '[0].qa[0].question'", "lone surrogate"]),
    Case("hypotheses-lone-surrogate", GOOD_LME | {"h.jsonl": line({"question_id": "q1", "hypothesis": "Ber\udabclin"})},
         ["bench", "longmemeval", "--data", "lme.json", "--out", "out", "--hypotheses", "h.jsonl"],
         ["h.jsonl:1:", "field 'hypothesis'", "lone surrogate"]),
    Case("faireval-lone-surrogate", {"fe.jsonl": line({"question_id": 1, "question": "q\ud800", "answer_gpt35": "a",
                                                       "answer_vicuna13b": "b", "human_label": "tie"})},
         ["bench", "faireval", "--data", "fe.jsonl", "--out", "out"], ["fe.jsonl:1:", "field 'question'",
                                                                        "lone surrogate"], bench="faireval"),
    # --- --out '' is the current directory: refused, never written among unrelated files ---
    Case("out-empty", {"in.jsonl": line(GOOD), "notes.md": b"mine\n"}, ["evaluate", "in.jsonl", "--out", ""],
         ["--out is empty"]),
    Case("out-blank", {"in.jsonl": line(GOOD)}, ["evaluate", "in.jsonl", "--out", "  "], ["--out is empty"]),
    Case("lme-out-empty", GOOD_LME, lme()[:4] + ["--out", ""] + lme()[6:], ["--out", "empty"]),
    Case("faireval-out-empty", {"fe.jsonl": line({"question_id": 1, "question": "q", "answer_gpt35": "a",
                                                  "answer_vicuna13b": "b", "human_label": "tie"})},
         ["bench", "faireval", "--data", "fe.jsonl", "--out", ""], ["--out", "empty"], bench="faireval"),
    Case("view-out-empty", {"run/samples.jsonl": line({"id": "a", "status": "ok"})}, ["view", "run", "--out", ""],
         ["--out is empty"]),
    # --- chateval view: files that are not a run's, and an --out that is a folder ---
    Case("view-binary-samples", {"run/samples.jsonl": bytes(range(256)) * 4}, ["view", "run"],
         ["run/samples.jsonl:1:", "not valid JSON"]),
    Case("view-non-utf8-samples", {"run/samples.jsonl": line({"id": "a", "status": "ok"}) + b'{"id": "caf\xe9"}\n'},
         ["view", "run"], ["run/samples.jsonl:2:", "not UTF-8"]),
    Case("view-non-utf8-summary", {"run/summary.json": b'{"n": "\xff"}'}, ["view", "run"],
         ["run/summary.json", "not UTF-8"]),
    Case("view-out-is-a-directory", {"run/samples.jsonl": line({"id": "a", "status": "ok"}), "pages": None},
         ["view", "run", "--out", "pages"], ["pages", "--out is a directory"]),
]


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else f" {p.stat().st_size}")
                  for p in root.rglob("*"))


def materialise(root: Path, files: dict[str, bytes | None]) -> None:
    for name, data in files.items():
        p = root / name
        if data is None:
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)


def test_corpus_is_big_enough():
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_exit_2(case: Case, tmp_path, monkeypatch, capsys):
    if case.bench and case.bench not in BENCHMARKS:
        pytest.skip(f"benchmark {case.bench} is not registered")
    work = tmp_path / "work"
    work.mkdir()
    materialise(work, case.files)
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    # The completion and embedding caches live here for this test: they must not be created either.
    monkeypatch.setenv("CHATEVAL_CACHE_DIR", str(work / ".cache" / "completions"))
    monkeypatch.chdir(work)
    before = listing(work)
    capsys.readouterr()

    code = main(case.argv)

    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Traceback" not in out
    assert out == ""
    for needle in case.needles:
        assert needle in lines[0], (needle, lines[0])
    assert listing(work) == before  # nothing written, --out not created
    assert not (work / "out").exists()


# --- real subprocesses: what a terminal shows ---------------------------------------------------

SUBPROCESS_CASES = ["non-utf8", "lme-missing-field", "missing-base-url"]


@pytest.mark.slow
@pytest.mark.parametrize("case_id", SUBPROCESS_CASES)
def test_bad_input_in_a_real_process(case_id: str, tmp_path):
    case = next(c for c in CASES if c.id == case_id)
    work = tmp_path / "work"
    work.mkdir()
    materialise(work, case.files)
    before = listing(work)
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "CHATEVAL_API_KEY", "CHATEVAL_BASE_URL", "CHATEVAL_PLUGINS")}
    env["COLUMNS"] = "80"  # a narrow terminal must not wrap the message onto two lines
    env["CHATEVAL_CACHE_DIR"] = str(work / ".cache" / "completions")  # must not be created either
    proc = subprocess.run([sys.executable, "-m", "chateval.cli", *case.argv], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in proc.stderr and "\x1b[" not in proc.stderr
    assert proc.stdout == ""
    for needle in case.needles:
        assert needle in lines[0]
    assert listing(work) == before
