"""The protocol cards on the viewer's pages: each run's card, and for two or more runs the card
rows that differ (numbers from runs whose protocols differ are not comparable as they stand)."""

from __future__ import annotations

import json
from pathlib import Path

from ..records.protocol_card import ProtocolCard, card_rows, cards_differ, read_card
from .load import RunView


def run_card(run: RunView) -> ProtocolCard | None:
    return read_card(run.summary.get("protocol_card"))


def card_table(run: RunView) -> dict[str, str]:
    """The run's card as rows (empty: the run has no card)."""
    card = run_card(run)
    return {} if card is None else card_rows(card)


def card_warnings(run: RunView) -> list[str]:
    card = run_card(run)
    return [] if card is None else list(card.warnings)


def compared_cards(runs: list[RunView]) -> list[tuple[str, list[str]]] | None:
    """The card rows that differ between the runs; None when no run has a card (nothing to say)."""
    cards = [run_card(r) for r in runs]
    return None if all(c is None for c in cards) else cards_differ(cards)


def differing_card_rows(run_dirs: list[Path]) -> list[str]:
    """The card rows that differ between the runs' summary.json files (for the terminal: what the
    comparison page flags). Empty when they agree or no run has a card."""
    cards = []
    for d in run_dirs:
        try:
            raw = json.loads((Path(d) / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = None
        cards.append(read_card(raw.get("protocol_card")) if isinstance(raw, dict) else None)
    return [] if all(c is None for c in cards) else [k for k, _ in cards_differ(cards)]
