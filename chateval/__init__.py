"""chateval: judge memory-augmented chat agents with a panel of persona-prompted LLM debaters."""

from .config import EvalConfig
from .debate import AgentVerdict, JudgeResult, Persona, Sample, Strategy, Verdict, strategy
from .errors import ChatevalError, ConfigError, InputError, ModelCallError
from .evaluator import Evaluator
from .inputs import load_samples
from .models import ModelLayer, ModelSpec

__version__ = "0.1.0"

__all__ = [
    "AgentVerdict", "ChatevalError", "ConfigError", "EvalConfig", "Evaluator", "InputError", "JudgeResult",
    "ModelCallError", "ModelLayer", "ModelSpec", "Persona", "Sample", "Strategy", "Verdict", "load_samples",
    "strategy",
]
