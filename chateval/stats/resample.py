"""Bootstrap resamples drawn a chunk at a time: the same rows as one ``(resamples, size)`` draw,
without holding it. Shared by the paired differences (:mod:`chateval.paired`), calibrate's
agreement intervals and the kappa interval every judged run reports."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

CHUNK_CELLS = 1 << 21  # rows x items evaluated at once (a few megabytes of indices)


def bootstrap_values(
    rng: np.random.Generator,
    high: int,
    resamples: int,
    size: int,
    fn: Callable[[np.ndarray], np.ndarray],
    *,
    width: int | None = None,
) -> np.ndarray:
    """``fn`` over ``resamples`` rows of ``size`` indices drawn from ``range(high)``, as one array:
    what ``fn(rng.integers(0, high, size=(resamples, size)))`` gives (the generator gives the same
    rows drawn a chunk at a time, and leaves the same state), but never ``resamples x size``
    indices at once: a calibration over 10,000 items would hold 2,000 such rows (160 MB) and
    their gathered values several times over. ``width`` (the items ``fn`` touches per row, if
    not ``size``) sizes the chunks."""
    rows = max(1, CHUNK_CELLS // max(width or size, 1))
    parts = [fn(rng.integers(0, high, size=(min(rows, resamples - s), size))) for s in range(0, resamples, rows)]
    return np.concatenate(parts) if parts else np.empty(0)
