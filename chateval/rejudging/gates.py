"""What ``rejudge --fail-under`` measures: ``accuracy:SET/JUDGE``, ``true_rejection:SET/JUDGE``
(1 − false acceptance, known-wrong sets only), ``kappa:SET/A~B`` and ``tau:A~B``. A gate
without a subject holds for every one."""

from __future__ import annotations

from typing import Any

REJUDGE_METRICS = ["accuracy", "true_rejection", "kappa", "tau"]


def rejudge_measures(summary: dict[str, Any]) -> dict[str, dict[str | None, float | None]]:
    out: dict[str, dict[str | None, float | None]] = {m: {} for m in REJUDGE_METRICS}
    for label, s in (summary.get("sets") or {}).items():
        for judge, sc in (s.get("scores") or {}).items():
            acc = sc.get("accuracy")
            if s.get("wrong"):
                out["true_rejection"][f"{label}/{judge}"] = None if acc is None else 1 - acc
            else:
                out["accuracy"][f"{label}/{judge}"] = acc
        for p in s.get("pairs") or []:
            out["kappa"][f"{label}/{p['a']}~{p['b']}"] = (p.get("kappa") or {}).get("value")
    for a in summary.get("rank_agreement") or []:
        out["tau"][f"{a['a']}~{a['b']}"] = a.get("tau")
    return {m: v for m, v in out.items() if v}
