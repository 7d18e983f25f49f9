"""MSC next-response's settings (``chateval bench msc-response``)."""

from __future__ import annotations

from typing import Literal

from ...util.options import opt
from ..config import MemoryBenchConfig

DESCRIPTION = (
    "THEANINE's evaluation: next-utterance generation on Multi-Session Chat session 3 "
    "(BLEU-4, ROUGE-L, MiniLM BERTScore-style F1; debate-panel memory helpfulness)"
)
# What --fail-under can name (the first is the headline value); here so --help need not import the benchmark.
GATE_METRICS = ["rouge_l"]
MSC_FILE = "msc_session3_valid.jsonl"


class MSCResponseConfig(MemoryBenchConfig):
    data: str | None = opt(
        None,
        f"the MSC release file ({MSC_FILE}: previous_dialogs + dialog per line) or its "
        "folder (default: msc/ in the data folder, $CHATEVAL_DATA_DIR or ~/.cache/chateval/data, where "
        "`chateval data get msc` puts it; else ../shared/data/msc)",
    )
    session: int = opt(
        3,
        "in a data folder, the session whose file is read: msc_session<N>_valid.jsonl (2: one "
        "earlier session, 3: two, ...); a file given with --data is read as it is",
        ge=2,
        le=5,
    )
    speakers: Literal["all", "speaker2"] = opt(
        "all",
        "turns predicted: all (every turn from the second on, both speakers: the official code) or speaker2 "
        "(Speaker 2's turns only)",
    )
    turns_per_episode: int | None = opt(
        None,
        "turns of the last session to predict per episode: a seeded "
        "sample kept in dialogue order (default: all of them)",
        ge=1,
    )
    seed: int = opt(0, "seed of the --turns-per-episode sample")
    bertscore: bool = opt(
        True,
        "compute the MiniLM BERTScore-style F1 (it loads the offline all-MiniLM-L6-v2 wheel)",
        flags=["--no-bertscore"],
    )
    helpfulness: bool = opt(
        True,
        "judge memory helpfulness with the debate panel (--judge-preset, --judge-model)",
        flags=["--no-helpfulness"],
    )
    helpfulness_protocol: Literal["pairwise", "score"] = opt(
        "pairwise",
        "pairwise (a head-to-head: the reference system against each other system at every turn, both "
        "orders; win rate) or score (each response's memory rated 1-10; ours)",
    )
    helpfulness_compare: Literal["memories", "responses"] = opt(
        "memories",
        "pairwise: what the panel compares: memories (each system's retrieved memories: whose benefit the "
        "next response more, the paper's head-to-head) or responses (the two responses; ours)",
    )
    helpfulness_reference: str | None = opt(
        None, "pairwise: the system compared with every other one (default: the first of --systems)"
    )
    # The panel rates memory helpfulness; there is no correct answer to judge.
    judge: Literal["single", "debate", "both"] | None = opt(None, hidden=True)  # type: ignore[assignment]
