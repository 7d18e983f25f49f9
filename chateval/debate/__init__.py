"""The debate judge: personas, strategies, parsing, aggregation (autogen stays behind this package)."""

from .aggregate import aggregate, combine_swapped
from .panel import JudgeResult, Panel
from .personas import NO_PERSONA, Persona, PersonaLibrary, agent_names, load_persona
from .samples import AgentVerdict, Sample, Verdict
from .strategies import STRATEGIES, Strategy, strategy
from .tasks import TASKS, TaskFormat
from .transcript import TranscriptTurn

__all__ = [
    "AgentVerdict",
    "JudgeResult",
    "NO_PERSONA",
    "Panel",
    "Persona",
    "PersonaLibrary",
    "STRATEGIES",
    "Sample",
    "Strategy",
    "TASKS",
    "TaskFormat",
    "TranscriptTurn",
    "Verdict",
    "agent_names",
    "aggregate",
    "combine_swapped",
    "load_persona",
    "strategy",
]
