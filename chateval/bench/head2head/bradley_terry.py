"""A Bradley–Terry ranking from pairwise outcomes (head-to-head with more than two systems).

P(i beats j) = 1 / (1 + exp(θ_j − θ_i)). A tie counts as half a win for each side (the usual
reading, as in LMSYS's Chatbot Arena). θ is fitted by maximum likelihood with scipy's L-BFGS
and a weak Gaussian prior (λ = 0.01 on θ, sum of θ anchored at 0), which keeps a system that
won every comparison at a large but finite strength. 95% intervals come from a percentile
bootstrap over the judged *cases* (all pairs of a case resampled together), fixed seed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy.optimize import minimize

PRIOR = 0.01
BOOTSTRAP = 200
SEED = 0

Outcome = tuple[str, str, float]  # (system a, system b, score of a: 1 win, 0.5 tie, 0 loss)


class Ranked(BaseModel):
    system: str
    rank: int
    strength: float  # θ, log-odds scale, mean 0
    ci95: tuple[float, float] | None
    win_prob_vs_average: float  # P(beats a system of strength 0)


def fit(outcomes: Sequence[Outcome], systems: Sequence[str]) -> np.ndarray:
    """θ for ``systems`` (mean 0) from (a, b, score of a) outcomes."""
    index = {s: i for i, s in enumerate(systems)}
    a = np.array([index[o[0]] for o in outcomes], dtype=int)
    b = np.array([index[o[1]] for o in outcomes], dtype=int)
    y = np.array([o[2] for o in outcomes], dtype=float)

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = theta[a] - theta[b]
        p = 1.0 / (1.0 + np.exp(-d))
        eps = 1e-12
        loss = -np.sum(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)) + PRIOR * np.sum(theta**2)
        g_d = p - y  # d(loss)/d(d)
        grad = np.zeros_like(theta)
        np.add.at(grad, a, g_d)
        np.add.at(grad, b, -g_d)
        return float(loss), grad + 2 * PRIOR * theta

    res = minimize(nll, np.zeros(len(systems)), jac=True, method="L-BFGS-B")
    theta = res.x
    return theta - theta.mean()


def rank(
    cases: Sequence[Sequence[Outcome]], systems: Sequence[str], *, bootstrap: int = BOOTSTRAP, seed: int = SEED
) -> list[Ranked]:
    """Strengths, ranks and bootstrap intervals; ``cases`` groups each case's pairwise outcomes."""
    flat = [o for c in cases for o in c]
    if not flat:
        return []
    played = {s for o in flat for s in o[:2]}
    missing = [s for s in systems if s not in played]
    if missing:
        raise ValueError(f"no judged comparison involves {missing[0]}: it cannot be ranked")
    theta = fit(flat, systems)
    samples = []
    rng = np.random.default_rng(seed)
    for _ in range(bootstrap if len(cases) > 1 else 0):
        pick = rng.integers(0, len(cases), len(cases))
        resampled = [o for i in pick for o in cases[i]]
        if {s for o in resampled for s in o[:2]} >= set(systems):
            samples.append(fit(resampled, systems))
    lo = np.percentile(samples, 2.5, axis=0) if samples else None
    hi = np.percentile(samples, 97.5, axis=0) if samples else None
    order = np.argsort(-theta, kind="stable")
    return [
        Ranked(
            system=systems[i],
            rank=r + 1,
            strength=float(theta[i]),
            ci95=(float(lo[i]), float(hi[i])) if lo is not None and hi is not None else None,
            win_prob_vs_average=float(1 / (1 + np.exp(-theta[i]))),
        )
        for r, i in enumerate(order)
    ]
