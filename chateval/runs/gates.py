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
from ..util.registry import did_you_mean

EXIT_GATE = 4

Measures = dict[str, dict[str | None, float | None]]

_SPEC = re.compile(r"^(?P<metric>[^:=\s]+)(?::(?P<subject>[^=]+))?=(?P<value>[^=]+)$")


class Gate(BaseModel):
    metric: str
    subject: str | None = None
    threshold: float
    spec: str  # as given, for messages


# The values a metric can take: a threshold outside can never be met (or is always met), a typo
# that would only show after the whole run. Metrics not listed here are not range-checked.
RANGES: dict[str, tuple[float, float]] = {
    "accuracy": (0.0, 1.0),
    "kappa": (-1.0, 1.0),
    "spearman": (-1.0, 1.0),
    "kendall": (-1.0, 1.0),
    "rouge_l": (0.0, 1.0),
    "recall_all@K": (0.0, 1.0),
    "recall_any@K": (0.0, 1.0),
    "success_rate": (0.0, 1.0),
    "f1": (0.0, 1.0),
    "evidence_recall": (0.0, 1.0),
    "win_rate": (0.0, 1.0),
}


def parse_gates(
    specs: list[str] | None,
    known: list[str],
    *,
    flag: str = "--fail-under",
    subjects: list[str] | None = None,
    single: bool = False,
) -> list[Gate]:
    """Check every spec before anything runs: syntax, a finite number within the metric's range,
    a metric this command measures (the error lists the ones it does). ``known`` may hold patterns
    like ``recall_all@K``. ``single``: the command measures one value (no ``:NAME``);
    ``subjects``: the systems or settings a ``:NAME`` may name, when known before the run."""
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
        lo, hi = next((r for k, r in RANGES.items() if _matches(metric, k)), (-math.inf, math.inf))
        if not lo <= value <= hi:
            raise ConfigError(f"{flag} '{spec}': {metric} lies between {lo:g} and {hi:g}; {value:g} is outside")
        if m["subject"] is not None and not subject:
            raise ConfigError(f"{flag} '{spec}': an empty name after ':'")
        if subject is not None and single:
            raise ConfigError(f"{flag} '{spec}': this command measures one {metric}; give {metric}=VALUE (no :NAME)")
        if subject is not None and subjects is not None and subject not in subjects:
            hint = did_you_mean(subject, subjects)
            raise ConfigError(
                f"{flag} '{spec}': no setting or system '{subject}' in this run{hint} ({', '.join(subjects)})"
            )
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
                names = [str(s) for s in values if s is not None]
                hint = did_you_mean(g.subject, names)
                lines.append(
                    f"{flag} {g.spec}: no system or setting '{g.subject}' in this run{hint} ({', '.join(names)})"
                )
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
    """The audit's headline flip rate per perturbation: toward the favoured answer where it had
    lost (the plain flip rate for a perturbation favouring no answer)."""
    return {
        "flip_rate": {
            b["perturbation"]: b.get("rate_lost") if b.get("n_lost") else b.get("rate")
            for b in summary.get("biases") or []
        }
    }
