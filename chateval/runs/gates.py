"""Quality gates for CI: ``--fail-under METRIC=VALUE`` (or ``METRIC:SYSTEM=VALUE``) checked against
a finished run's summary. Gates are parsed and their metric names checked before the run (a typo
must not cost a run); after it, every gate below its value is one line and the command exits 4.

Measurements are ``{metric: {subject: value}}``: a subject is a system (benchmarks) or a judge
setting (calibrate); ``None`` is a run's single value (evaluate). A gate without a subject holds
for every subject (every system must reach it)."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel

from ..util.errors import ConfigError

EXIT_GATE = 4

Measures = dict[str, dict[str | None, float | None]]

_SPEC = re.compile(r"^(?P<metric>[^:=\s]+)(?::(?P<subject>[^=]+))?=(?P<value>[^=]+)$")


class Gate(BaseModel):
    metric: str
    subject: str | None = None
    threshold: float
    spec: str  # as given, for messages


def parse_gates(specs: list[str] | None, known: list[str], *, flag: str = "--fail-under") -> list[Gate]:
    """Check every spec before anything runs: syntax, a finite number, a metric this command
    measures (the error lists the ones it does). ``known`` may hold patterns like ``recall_all@K``."""
    gates = []
    for spec in specs or []:
        m = _SPEC.match(spec.strip())
        if not m:
            raise ConfigError(
                f"{flag} '{spec}': expected METRIC=VALUE or METRIC:SYSTEM=VALUE (metrics: {', '.join(known)})"
            )
        try:
            value = float(m["value"])
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ConfigError(f"{flag} '{spec}': '{m['value']}' is not a number")
        metric = m["metric"]
        if not any(_matches(metric, k) for k in known):
            raise ConfigError(f"{flag} '{spec}': unknown metric '{metric}' (metrics: {', '.join(known)})")
        subject = m["subject"].strip() if m["subject"] else None
        gates.append(Gate(metric=metric, subject=subject, threshold=value, spec=spec))
    return gates


def _matches(metric: str, known: str) -> bool:
    if "@K" not in known:
        return metric == known
    return re.fullmatch(re.escape(known).replace("@K", r"@\d+"), metric) is not None


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def check(gates: list[Gate], measures: Measures, *, flag: str = "--fail-under", over: bool = False) -> list[str]:
    """One line per gate not met (below its value, or above it with ``over``; or not measured)."""
    lines = []
    for g in gates:
        values = measures.get(g.metric)
        if not values:
            lines.append(f"{flag} {g.spec}: {g.metric} was not measured in this run")
            continue
        if g.subject is not None:
            if g.subject not in values:
                names = ", ".join(str(s) for s in values)
                lines.append(f"{flag} {g.spec}: no system or setting '{g.subject}' in this run ({names})")
                continue
            picked: dict[str | None, float | None] = {g.subject: values[g.subject]}
        else:  # the run's own value (evaluate; calibrate's recommended setting), else every system's
            picked = {None: values[None]} if None in values else values
        for subject, v in picked.items():
            who = f"{g.metric}" + (f" of {subject}" if subject is not None else "")
            if v is None:
                lines.append(f"{flag} {g.spec}: {who} was not measured (no result)")
            elif (v > g.threshold) if over else (v < g.threshold):
                lines.append(f"{flag} {g.spec}: {who} is {_fmt(v)}, {'above' if over else 'below'} {_fmt(g.threshold)}")
    return lines


# --- what `evaluate` and `calibrate` measure ------------------------------------------------------
AGREEMENT_METRICS = ["accuracy", "kappa"]  # agreement of the verdicts with the input's labels


def _agreement(agreement: dict[str, Any] | None) -> dict[str, float | None]:
    a = agreement or {}
    return {m: (a.get(m) or {}).get("value") for m in AGREEMENT_METRICS}


def evaluate_measures(summary: dict[str, Any]) -> Measures:
    return {m: {None: v} for m, v in _agreement(summary.get("agreement")).items()}


CALIBRATE_METRICS = ["accuracy", "kappa", "spearman", "kendall"]  # labels (pairwise, correctness); scores


def calibrate_measures(summary: dict[str, Any]) -> Measures:
    """Per judge setting; a gate without a setting is checked on the recommended one (what
    ``--write-preset`` writes; the best one in a summary from before recommendations), not on
    every setting of the grid."""
    out: Measures = {}
    for name, s in (summary.get("settings") or {}).items():
        for m, stat in (s.get("agreement") or {}).items():
            out.setdefault(m, {})[name] = (stat or {}).get("value")
    best = summary.get("recommended") or summary.get("best")
    return {m: ({None: vals[best], **vals} if best in vals else vals) for m, vals in out.items()}


# --- what `audit` measures (gated from above: --fail-over) --------------------------------------
AUDIT_METRICS = ["flip_rate"]  # per perturbation; without one, every perturbation that ran


def audit_measures(summary: dict[str, Any]) -> Measures:
    return {"flip_rate": {b["perturbation"]: b.get("rate") for b in summary.get("biases") or []}}
