"""Memory systems under test: interface, registry, stores and the built-in systems."""

from .base import MEMORY_SYSTEMS, MemoryInputError, MemorySystem, format_items, memory_system
from .types import MemoryItem, MemoryStats, Response, Session, Turn, as_utc

__all__ = [
    "MEMORY_SYSTEMS",
    "MemoryInputError",
    "MemoryItem",
    "MemoryStats",
    "MemorySystem",
    "Response",
    "Session",
    "Turn",
    "as_utc",
    "format_items",
    "memory_system",
]
