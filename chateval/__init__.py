"""chateval: judge memory-augmented chat agents with a panel of persona-prompted LLM debaters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .util.lazy import lazy_exports

__version__ = "0.1.0"

# The facade's names, loaded on first use: `import chateval` (and the CLI's start-up) must not
# pay for openai, autogen and the debate machinery before a command needs them.
_EXPORTS = {
    "EvalConfig": "evaluation.config",
    "Evaluator": "evaluation.evaluator",
    "load_samples": "evaluation.inputs",
    "AgentVerdict": "debate",
    "JudgeResult": "debate",
    "Persona": "debate",
    "Sample": "debate",
    "Strategy": "debate",
    "Verdict": "debate",
    "strategy": "debate",
    "ChatevalError": "util.errors",
    "ConfigError": "util.errors",
    "InputError": "util.errors",
    "ModelCallError": "util.errors",
    "ModelLayer": "models",
    "ModelSpec": "models",
    "calibrate": "calibration",
    "read_calibration": "calibration",
    "audit": "auditing",
    "perturbation": "auditing",
    "read_audit": "auditing",
    "rejudge": "rejudging",
    "read_rejudge": "rejudging",
    "read_run": "records.run",
    "Run": "records.run",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # for type checkers and IDEs
    from .auditing import audit, perturbation, read_audit
    from .calibration import calibrate, read_calibration
    from .debate import AgentVerdict, JudgeResult, Persona, Sample, Strategy, Verdict, strategy
    from .evaluation.config import EvalConfig
    from .evaluation.evaluator import Evaluator
    from .evaluation.inputs import load_samples
    from .models import ModelLayer, ModelSpec
    from .records.run import Run, read_run
    from .rejudging import read_rejudge, rejudge
    from .util.errors import ChatevalError, ConfigError, InputError, ModelCallError
