"""Which Multi-Session Chat episodes `bench msc-response` evaluates: the split, the sessions and
a seeded sample.

THEANINE's paper evaluates on MSC's *test* split, sessions 3 to 5, 50 sampled episodes
(``--protocol paper``). Our default reads session 3 of the *valid* split, every episode: that is
the one file the shared data folder holds (``../shared/data/msc``); ``chateval data get msc``
writes every session and split of the release (``msc_session<N>_<split>.jsonl``).

An MSC *episode* is one conversation (``metadata.initial_data_id``); the release file of session
N holds its sessions 1..N. With several sessions each chosen conversation is evaluated at each
of them (memory built from the sessions before it) and the unit's episode id is its last
session's id, ``<id>-s<N>``. ``--question-ids`` and ``--limit`` pick conversations first, then
``--sample`` draws that many (seeded by ``--seed``, kept in the data's order) from the
conversations present in every chosen session.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ...datasets.common import DatasetError
from ...datasets.msc_release import MSCDialogue, load_msc_release
from ...util.errors import ConfigError
from ..selection import resolve_data, select
from .settings import MSCResponseConfig

SESSION_FILE = "msc_session{}_{}.jsonl"  # the release's file per session and split (same layout)
SHARED_NOTE = (
    "the shared data folder holds session 3 of the valid split only; `chateval data get msc` writes "
    "every session and split"
)


class MSCProtocol(BaseModel):
    """The split, the sessions whose last session is predicted, and the episodes sampled (None: all)."""

    split: Literal["valid", "test"]
    sessions: list[int]
    sample: int | None


PROTOCOLS = {
    "default": MSCProtocol(split="valid", sessions=[3], sample=None),
    "paper": MSCProtocol(split="test", sessions=[3, 4, 5], sample=50),  # THEANINE's paper
}


def msc_protocol(config: MSCResponseConfig) -> MSCProtocol:
    """The named protocol, with what --split, --session and --sample give explicitly over it."""
    base = PROTOCOLS[config.protocol]
    return MSCProtocol(
        split=config.split or base.split,
        sessions=list(config.session or base.sessions),
        sample=base.sample if config.sample is None else config.sample,
    )


def session_paths(config: MSCResponseConfig, protocol: MSCProtocol) -> list[Path]:
    """The release file of each chosen session (a file given with --data: read as it is)."""
    files = [SESSION_FILE.format(n, protocol.split) for n in protocol.sessions]
    try:
        path = resolve_data(config.data, "msc", files, "Multi-Session Chat")
    except DatasetError as e:
        raise DatasetError(f"{e} ({SHARED_NOTE})") from None
    if not path.is_dir():
        if len(files) > 1:
            raise ConfigError(
                f"--data {path}: one release file holds one session; give its folder to read sessions "
                f"{','.join(map(str, protocol.sessions))} ({', '.join(files)})"
            )
        return [path]
    missing = [f for f in files if not (path / f).is_file()]
    if missing:
        raise DatasetError(f"{path}: no {', '.join(missing)} in this folder ({SHARED_NOTE}), or pass --data PATH")
    return [path / f for f in files]


def sample_ids(ids: list[str], n: int, seed: int) -> list[str]:
    """``n`` of ``ids`` drawn without replacement, seeded, in their given order."""
    if n > len(ids):
        raise ConfigError(f"--sample {n}: only {len(ids)} episodes to sample from")
    chosen = set(random.Random(f"{seed}|msc-episodes").sample(ids, n))
    return [i for i in ids if i in chosen]


def msc_episodes(paths: list[Path], protocol: MSCProtocol, config: MSCResponseConfig) -> list[MSCDialogue]:
    """The episodes to evaluate, conversation by conversation, each at every chosen session."""
    per_file = [{e.id: e for e in load_msc_release(p)} for p in paths]
    ids = list(dict.fromkeys(eid for eps in per_file for eid in eps))
    if protocol.sample is not None:
        ids = [eid for eid in ids if all(eid in eps for eps in per_file)]
    ids = select(ids, config, key=lambda eid: eid, what="episode")
    if protocol.sample is not None:
        ids = sample_ids(ids, protocol.sample, config.seed)
    several = len(per_file) > 1
    return [
        eps[eid].model_copy(update={"id": eps[eid].current.id}) if several else eps[eid]
        for eid in ids
        for eps in per_file
        if eid in eps
    ]
