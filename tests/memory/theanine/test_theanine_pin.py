"""THEANINE's results pinned on a synthetic fixture: the memory graph (every edge and relation),
the memories each dialogue retrieves (ids, scores) and the timelines given for them. The pinned
file was written by the code *before* the ingest/retrieval speed-ups (issue 38), so any change
of semantics in the vector search, the linking or the timeline walks shows up here.

Regenerate (only for an intended change of behaviour): CHATEVAL_REPIN=1 pytest tests/memory/theanine/test_theanine_pin.py
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from chateval.memory import MEMORY_SYSTEMS, Session, Turn
from chateval.memory import systems as _systems  # noqa: F401  (registers theanine)
from chateval.memory.embeddings import HashingEmbedder
from chateval.models import ModelLayer, ModelSpec

PIN = Path(__file__).parent / "fixtures" / "theanine_pin.json"
T0 = datetime(2021, 3, 1, tzinfo=timezone.utc)
WORDS = [
    ("guitar", "band", "concert", "song"),
    ("marathon", "running", "training", "race"),
    ("garden", "tomatoes", "roses", "soil"),
    ("puppy", "dog", "walks", "vet"),
    ("kitchen", "recipe", "pasta", "dinner"),
    ("novel", "chapter", "writing", "publisher"),
]
OPENERS = ["I now", "I want to", "because of that I", "I couldn't", "I"]
# Settings that exercise every path of the search and the walks: the paper's defaults, the
# similarity-linked ablation (dense graph, many timelines), a larger j and the dynamic-k baseline.
VARIANTS: dict[str, dict] = {
    "default": {},
    "similarity": {"relation_aware": False, "n": 3, "max_paths": 8},
    "wide": {"j": 6, "k": 5, "n": 2, "linking": "batch"},
    "dynamic_k": {"timeline_format": "dynamic_k", "relation_aware": False},
}


def sessions(n: int = 36, per: int = 6, seed: int = 7) -> list[Session]:
    """Sessions from a tiny vocabulary: many memories relate. Each text ends in its own
    number, so no two vectors are equal (see ``JitteredHash``)."""
    rng = random.Random(seed)
    out = []
    for s in range(n):
        turns = []
        for t in range(per):
            a, b, c = rng.sample(rng.choice(WORDS), 3)
            turns.append(
                Turn(
                    id=f"t{t}",
                    role=rng.choice(["user", "assistant"]),
                    content=f"{rng.choice(OPENERS)} talked about the {a} and the {b} with {c} ({s}.{t}).",
                )
            )
        # Some sessions share a date: equal times, so insertion order breaks ties.
        out.append(Session(id=f"x{s:03d}", date=T0 + timedelta(days=s - s % 3), turns=turns))
    return out


class JitteredHash(HashingEmbedder):
    """The hashing embedder plus a small fixed per-text offset. Hashed word counts give many
    memories *exactly* equal cosine similarities, and Qdrant's local mode orders those by
    rounding noise (it re-normalises its stored vectors in place on every query); the offset
    makes every similarity distinct, so the pin holds the search's semantics, not the noise."""

    async def _embed(self, texts: list[str]) -> np.ndarray:
        m = await super()._embed(texts)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            m[i] += np.random.default_rng(seed).uniform(-0.05, 0.05, m.shape[1]).astype(np.float32)
        return m


DIALOGUES = [
    [
        Turn(id="d1", role="assistant", content="How have you been?"),
        Turn(id="d2", role="user", content=f"Busy with the {w[0]} and the {w[1]} again."),
    ]
    for w in WORDS
] + ["What did I say about the dog and the vet?"]


async def observe(settings: dict) -> dict:
    system = MEMORY_SYSTEMS.get("theanine")(
        ModelLayer(ModelSpec.parse("offline")), settings=settings, embedder=JitteredHash(cache=False)
    )
    try:
        await system.ingest_all(sessions())
        g = system.graph
        edges = sorted([a, b, d.get("relation"), d.get("kind")] for a, b, d in g.g.edges(data=True))
        now = T0 + timedelta(days=60)
        replies = []
        for dialogue in DIALOGUES:
            resp = await system.respond(dialogue, now)
            replies.append(
                {
                    "recalled": [
                        [i.id, round(i.score or 0.0, 5), i.meta.get("timelines"), i.meta.get("timelines_start")]
                        for i in resp.recalled
                    ],
                    "timelines": [[t.path, t.retrieved, t.truncated] for t in system.last_timelines],
                    # the context the answer step saw (its digest: the file stays small)
                    "context": hashlib.sha256(resp.context.encode("utf-8")).hexdigest()[:16],
                }
            )
        return {"memories": len(g), "edges": edges, "replies": replies}
    finally:
        await system.aclose()


def dump(pinned: dict) -> str:
    """One line per edge and per reply: readable diffs, a small file."""
    parts = []
    for name in sorted(pinned):
        v = pinned[name]
        edges = ",\n".join(json.dumps(e) for e in v["edges"])
        replies = ",\n".join(json.dumps(r, sort_keys=True) for r in v["replies"])
        parts.append(f'"{name}": {{"memories": {v["memories"]},\n"edges": [\n{edges}],\n"replies": [\n{replies}]}}')
    return "{\n" + ",\n".join(parts) + "\n}\n"


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_graph_and_retrieval_are_pinned(variant):
    got = await observe(VARIANTS[variant])
    pinned = json.loads(PIN.read_text(encoding="utf-8")) if PIN.exists() else {}
    if os.environ.get("CHATEVAL_REPIN"):
        pinned[variant] = got
        PIN.write_text(dump(pinned), encoding="utf-8")
    want = pinned[variant]
    assert got["memories"] == want["memories"] and got["memories"] > 150
    assert got["edges"] == want["edges"]
    for n, (g, w) in enumerate(zip(got["replies"], want["replies"], strict=True)):
        assert g == w, f"dialogue {n}"
