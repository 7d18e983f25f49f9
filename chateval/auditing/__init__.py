"""``chateval audit``: measure one judge setting's biases by perturbing each input item (answers
swapped, padded, a planted verdict, an authority claim, a model label, same-role personas) and
counting how often the verdict flips. Perturbations are a registry (``@perturbation``).

Names load on first use: the CLI builds its options from ``AuditConfig`` without importing
the judging machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports

_EXPORTS = {
    "AuditConfig": "config",
    "PERTURBATIONS": "perturbations",
    "Context": "perturbations",
    "Perturbation": "perturbations",
    "Skip": "perturbations",
    "Variant": "perturbations",
    "get_perturbation": "perturbations",
    "perturbation": "perturbations",
    "arun": "run",
    "audit": "api",
    "make_config": "api",
    "AuditSummary": "..records.audit",
    "AuditUnit": "..records.audit",
    "AuditedVariant": "..records.audit",
    "BiasSummary": "..records.audit",
    "PerturbationInfo": "..records.audit",
    "read_audit": "..records.audit",
    "read_summary": "..records.audit",
    "read_units": "..records.audit",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from ..records.audit import (
        AuditedVariant,
        AuditSummary,
        AuditUnit,
        BiasSummary,
        PerturbationInfo,
        read_audit,
        read_summary,
        read_units,
    )
    from .api import audit, make_config
    from .config import AuditConfig
    from .perturbations import PERTURBATIONS, Context, Perturbation, Skip, Variant, get_perturbation, perturbation
    from .run import arun
