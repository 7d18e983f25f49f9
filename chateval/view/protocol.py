"""The protocol cards on the viewer's pages: each run's card, and for two or more runs the card
rows that differ (numbers from runs whose protocols differ are not comparable as they stand)."""

from __future__ import annotations

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
