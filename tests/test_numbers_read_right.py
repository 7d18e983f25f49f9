"""Numbers that read right (issue 39 item 9): escalation that costs calls says "more calls", a
total with one unpriced model shows the known part and names the model, offline costs $0."""

from __future__ import annotations

from chateval.models import CallRecord, UsageTotals, cost_text
from chateval.runs.savings import calls_saved_text, savings_lines


def _escalation(saved: float, rate: float | None) -> dict:
    return {"n_escalated": 10, "n_items": 10, "escalated_rate": 1.0, "calls_used": 200, "screen_calls": 40,
            "panel_calls": 160, "panel_only_calls": 160.0, "panel_calls_per_item": 16.0,
            "panel_calls_basis": "measured on the escalated items", "calls_saved": saved, "calls_saved_rate": rate}


def test_escalation_that_costs_calls_says_more_calls():
    assert calls_saved_text(_escalation(-40.0, -0.25)) == "40 more calls than the panel on every item (25% more)"
    assert calls_saved_text(_escalation(12.0, 0.3)) == "12 calls saved (30%)"
    line = savings_lines({"escalation": _escalation(-40.0, -0.25)})[0]
    assert "-40" not in line and "40 more calls" in line


def test_a_total_with_an_unpriced_model_shows_the_known_part_and_names_it():
    t = UsageTotals.of([
        CallRecord(model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=10, cost_usd=0.25),
        CallRecord(model="my-local-llm", prompt_tokens=500, completion_tokens=5, cost_usd=None),
        CallRecord(model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=10, cost_usd=0.5),
    ])
    assert t.cost_usd is None and t.known_cost_usd == 0.75 and t.unpriced == ["my-local-llm"]
    assert cost_text(t) == "$0.7500 for the priced calls; no price for my-local-llm (give --price)"
    assert cost_text(t.model_dump()) == cost_text(t)
    assert cost_text({"cost_usd": None}) == "unknown (a price is not known; give --price)"  # an older summary


def test_the_offline_model_costs_nothing(tmp_path):
    from chateval.models.prices import cost_usd

    assert cost_usd("offline", 1000, 100) == 0.0
    assert cost_text(UsageTotals.of([CallRecord(model="offline", prompt_tokens=9, cost_usd=0.0)])) == "$0.0000"


def test_a_total_with_nothing_priced_is_not_shown_as_free():
    t = UsageTotals.of([CallRecord(model="openai-compatible/x", prompt_tokens=5, cost_usd=None)])
    assert cost_text(t) == "unknown: no price for openai-compatible/x (give --price)"
