"""Using chateval from Python: judge one pair, one rating and one answer, then a whole file.

Run: python examples/api_example.py   (offline model; no API key needed)
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from chateval import Evaluator, read_run

HERE = Path(__file__).parent


async def main() -> None:
    ev = Evaluator.from_preset("chateval_default", model="offline", cache=False)

    pair = await ev.compare(
        "Which city did I say I'm moving to?",
        "You said you're moving to Berlin in June.",
        "You're moving to Paris.",
        context="User (2024-05-02): I'm finally moving to Berlin in June!",
    )
    print("pairwise winner:", pair.verdict.winner, "scores:", pair.verdict.scores)
    for agent in pair.agents:
        print(f"  {agent.agent}: winner={agent.winner} scores={agent.scores}")

    rating = await ev.score("hi! do you like jazz?", "I do! Who is your favourite player?",
                            aspects=["naturalness", "engagingness"])
    print("score:", rating.verdict.scores)

    check = await ev.check("How many days was my trip?", "It lasted 12 days.", reference="12 days")
    print("correct:", check.verdict.correct)

    with tempfile.TemporaryDirectory() as out:
        summary = await ev.evaluate_file(HERE / "faireval_pairwise.jsonl", Path(out) / "run")
        print("file:", summary["n_ok"], "judged;", "agreement with human labels:", summary.get("label_accuracy"))
        run = read_run(Path(out) / "run")  # the run directory read back, typed
        for rec in run.records:
            print(f"  {rec.id}: winner {rec.winner} (human: {rec.label}), {len(rec.transcript)} turns")
    await ev.aclose()


if __name__ == "__main__":
    asyncio.run(main())
