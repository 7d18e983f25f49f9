"""Dataset loaders and the dataset-facing types (Session, Turn, ...). Every benchmark's data is
read here; nothing in this package imports the memory systems, the debate panel or the CLI."""

from .common import DatasetError
from .locomo import LoCoMoConversation, LoCoMoQA, load_locomo
from .longmemeval import LMEQuestion, load_longmemeval
from .msc import MSCEpisode, load_msc
from .msc_release import MSCDialogue, load_msc_release
from .types import Session, Turn, as_utc

__all__ = [
    "DatasetError",
    "LMEQuestion",
    "LoCoMoConversation",
    "LoCoMoQA",
    "MSCDialogue",
    "MSCEpisode",
    "Session",
    "Turn",
    "as_utc",
    "load_locomo",
    "load_longmemeval",
    "load_msc",
    "load_msc_release",
]
