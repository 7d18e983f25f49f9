"""Numbers as the terminal prints them: rates as percentages, costs in dollars, other floats
to three decimals, "–" for none (the same rules as ``chateval bench``'s headline table)."""

from __future__ import annotations

from typing import Any

# Summary numbers that are rates (shown as percentages); anything else that is a float gets 3 decimals.
RATES = {
    "accuracy",
    "majority_baseline",
    "chance",
    "order_disagreement_rate",
    "label_accuracy",
    "success_rate",
    "value",
    "ties",
    "A losses",
    "flip rate",
}


def pct(x: Any) -> str:
    return (
        "–" if x is None else f"{100 * x:.1f}%" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)
    )


def money(x: Any) -> str:
    return "unknown" if x is None else f"${x:.4f}"


def num(v: Any, rate: bool = False) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return pct(v) if rate else f"{v:.3f}"
    if isinstance(v, dict):  # counts such as verdicts {"tie": 3, "1": 1}: one "name n" pair each
        return ", ".join(f"{k}: {num(x)}" for k, x in v.items()) or "–"
    if isinstance(v, list):
        return ", ".join(num(x) for x in v) or "–"
    return str(v)


def headline_table(rows: list[dict[str, Any]], rate: bool = True) -> tuple[list[str], list[list[str]]]:
    """A benchmark's headline rows (summary.json ``headline``) as the terminal's table: columns and
    formatted cells. The values are percentages when ``rate`` (its summary type says; a
    correlation is not)."""
    if not rows or not all(isinstance(r, dict) for r in rows):
        return [], []
    if "system" not in rows[0]:  # an audit's rows are already formatted (flip rate "12.5%")
        cols = list(dict.fromkeys(k for r in rows for k in r))
        return cols, [[num(r.get(k)) for k in cols] for r in rows]
    metric = next((r["metric"] for r in rows if r.get("metric")), "score")
    base = {"system", "n", "metric", "value", "recall_all@5", "failed", "cost_usd"}
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in base))
    cols = ["system", "n", metric, *extra, "recall_all@5", "failed", "cost"]
    out = [
        [
            num(r.get("system")),
            num(r.get("n")),
            num(r.get("value"), rate),
            *(num(r.get(k), rate) for k in extra),
            num(r.get("recall_all@5")),
            num(r.get("failed")),
            money(r.get("cost_usd")),
        ]
        for r in rows
    ]
    return cols, out
