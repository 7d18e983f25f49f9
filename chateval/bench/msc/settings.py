"""MSC next-response's settings (``chateval bench msc-response``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from ...util.options import opt
from ..config import MemoryBenchConfig

DESCRIPTION = (
    "THEANINE's evaluation: next-utterance generation on Multi-Session Chat (session 3 by default; "
    "--protocol paper: the paper's test sessions 3-5, 50 episodes) (BLEU-4, ROUGE-L, MiniLM BERTScore-style F1; debate-panel memory helpfulness)"
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
    protocol: Literal["default", "paper"] = opt(
        "default",
        "which episodes: default (session 3 of the valid split, every episode: what the shared data holds) or "
        "paper (THEANINE's: the test split, sessions 3,4,5, 50 episodes sampled with --seed; needs `chateval "
        "data get msc`); --split, --session and --sample given explicitly override it",
    )
    split: Literal["valid", "test"] | None = opt(
        None, "in a data folder, the split whose files are read: msc_session<N>_<split>.jsonl (default: valid)"
    )
    session: list[int] | None = opt(
        None,
        "in a data folder, the sessions whose last session is predicted, e.g. 3 or 3,4,5 (2: one earlier "
        "session, 3: two, ...; default: 3); a file given with --data is read as it is",
    )
    sample: int | None = opt(
        None,
        "evaluate N episodes drawn with --seed (after --question-ids and --limit) from those present in "
        "every chosen session (default: all episodes)",
        ge=1,
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
    seed: int = opt(0, "seed of the --sample and --turns-per-episode samples")
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

    @field_validator("session", mode="before")
    @classmethod
    def _session(cls, v: Any) -> Any:
        if isinstance(v, (int, str)) and not isinstance(v, bool):
            v = [x.strip() for x in str(v).split(",") if x.strip()]
        return v

    @field_validator("session")
    @classmethod
    def _sessions(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        if not v or any(not 2 <= n <= 5 for n in v) or len(set(v)) != len(v):
            raise ValueError("give MSC sessions between 2 and 5, each once, e.g. 3 or 3,4,5")
        return sorted(v)
