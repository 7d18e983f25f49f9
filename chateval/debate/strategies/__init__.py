"""Built-in communication strategies; importing this package registers them."""

from . import one_by_one, simultaneous, summarizer  # noqa: F401  (registration)
from .base import STRATEGIES, Strategy, strategy

__all__ = ["STRATEGIES", "Strategy", "strategy"]
