"""answer_check's summary (from the unit records) and its report.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chateval.runs.files import atomic_write


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in records if r["status"] == "ok"]
    judged = [r["agrees"] for r in ok if r["agrees"] is not None]
    return {"benchmark": "answer_check", "n_units": len(records), "n_failed": len(records) - len(ok),
            "correct_rate": sum(r["correct"] for r in ok) / len(ok) if ok else None,
            "agreement": sum(judged) / len(judged) if judged else None}


def write_report(folder: Path, summary: dict[str, Any], model: str, preset: str) -> None:
    rate = "n/a" if summary["correct_rate"] is None else f"{summary['correct_rate']:.1%}"
    n_ok = summary["n_units"] - summary["n_failed"]
    atomic_write(folder / "report.md", f"# answer_check\n\n{n_ok} of {summary['n_units']} answers judged "
                                       f"({model}, preset {preset}); judged correct: {rate}.\n")
