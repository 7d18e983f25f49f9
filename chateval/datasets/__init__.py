"""Dataset loaders shared by memory systems and benchmarks. Each returns typed sessions."""

from .common import DatasetError
from .locomo import LoCoMoConversation, LoCoMoQA, load_locomo
from .longmemeval import LMEQuestion, load_longmemeval
from .msc import MSCEpisode, load_msc

__all__ = ["DatasetError", "LMEQuestion", "LoCoMoConversation", "LoCoMoQA", "MSCEpisode", "load_locomo",
           "load_longmemeval", "load_msc"]
