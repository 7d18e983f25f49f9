"""What masking secrets costs per written record (`chateval.util.secrets.scrub_obj`, run on every
record a run appends): a large record (a ~0.5 MB memory context and a 200-turn transcript) and a
small one, with the raw spellings only and with the transforms (case, spacing, reversed, hex,
base64) as well. Three secrets registered, none present in the record (the usual case); times
are the best of ``--repeat`` calls. Run:

    python benchmarks/scrub_perf.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from chateval.util import secrets

WORDS = "the user said that they moved to lisbon for a new job and the assistant replied kindly".split()


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n))


def timed(fn: Any, repeat: int) -> float:
    """Best of ``repeat`` calls, in milliseconds (a shared machine's load only adds to a time)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    rng = random.Random(0)
    secrets.register(
        "sk-proj-" + "".join(rng.choices("abcdefghijABCDEFGHIJ0123456789", k=48)),
        "pw-canary-basic-51c7-long",
        "another-registered-token-123456",
    )
    big = {
        "question_id": "q1",
        "status": "ok",
        "context": prose(rng, 100_000),
        "transcript": [{"speaker": f"agent{i % 3}", "round": i, "text": prose(rng, 150)} for i in range(200)],
        "scores": {f"m{i}": i * 0.5 for i in range(200)},
    }
    small = {"question_id": "q1", "status": "ok", "answer": prose(rng, 40), "verdict": "A"}
    saved = secrets._variant_re
    out = {}
    for name, rec, repeat in (("big", big, args.repeat), ("small", small, args.repeat * 100)):
        with_variants = timed(lambda r=rec: secrets.scrub_obj(r), repeat)
        secrets._variant_re = None  # the raw spellings only (as before the transforms were masked)
        raw_only = timed(lambda r=rec: secrets.scrub_obj(r), repeat)
        secrets._variant_re = saved
        out[name] = {
            "record_mb": round(len(json.dumps(rec)) / 1e6, 3),
            "raw_spellings_ms": round(raw_only, 3),
            "with_transforms_ms": round(with_variants, 3),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
