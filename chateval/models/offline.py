"""The offline model's step registry.

Every LLM step of the project names itself (``StepContext.name``) and carries its typed
inputs. The offline model looks the step up here and computes a deterministic answer from the
inputs alone, so pipelines run end to end with no network. Its outputs are heuristics and are
labelled ``offline`` wherever they appear.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..util.errors import ModelCallError

OfflineHandler = Callable[[Any, "type[BaseModel] | None"], "str | BaseModel"]
_HANDLERS: dict[str, OfflineHandler] = {}


def offline_step(name: str) -> Callable[[OfflineHandler], OfflineHandler]:
    def deco(fn: OfflineHandler) -> OfflineHandler:
        _HANDLERS[name] = fn
        return fn

    return deco


def run_offline_step(name: str, inputs: Any, response_format: type[BaseModel] | None) -> str | BaseModel:
    handler = _HANDLERS.get(name)
    if handler is None:
        raise ModelCallError(f"the offline model has no implementation of step '{name}'")
    return handler(inputs, response_format)


def offline_steps() -> list[str]:
    return sorted(_HANDLERS)
